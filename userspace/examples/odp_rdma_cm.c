// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An rdma_cm client and server on ODP memory through libibodp: the connection comes
 * from librdmacm, and libibodp works on its context (ibodp_wrap(cm_id->verbs)).
 *
 *   odp_rdma_cm server [-p PORT] [-s BYTES] [ADDRESS]    wait for one client
 *   odp_rdma_cm client [-p PORT] [-s BYTES] ADDRESS      connect to a server
 *
 * The server registers a buffer nobody has touched as an ODP MR and sends its address
 * and rkey. The client fills its own ODP buffer with a pattern, RDMA WRITEs it into the
 * server's, READs it back into a third ODP buffer and compares; then it SENDs the
 * pattern's seed, and the server checks every byte it received. Each side prints its
 * ODP counters around the transfer: the faults that brought the untouched pages in.
 * Exit status 0 when every byte arrived as sent. Built against an installed libibodp:
 *   cc odp_rdma_cm.c $(pkg-config --cflags --libs ibodp librdmacm) -o odp_rdma_cm
 */
#define _DEFAULT_SOURCE		/* MAP_ANONYMOUS and gai_strerror() under -std=c11 */
#include <ibodp.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* What the server tells the client, and the client's word that it is done. */
struct target {
	uint64_t addr;
	uint32_t rkey;
	uint32_t size;
};

struct done {
	uint32_t seed;
	uint32_t size;
};

/* One side: its connection, the library's view of the device, and its ODP buffers. */
struct side {
	struct rdma_cm_id *id;
	struct ibodp_dev *dev;
	struct ibv_pd *pd;
	struct ibodp_mr *mr[3];
	unsigned char *buf[3];
	size_t size;
	struct ibodp_counters before;
	int have_counters;
};

static int fail(const char *what, const char *why)
{
	fprintf(stderr, "odp_rdma_cm: %s: %s\n", what, why);
	return -1;
}

/* A byte of the pattern: a hash of seed and offset, with no short period. */
static unsigned char pattern(uint32_t seed, size_t i)
{
	uint64_t x = ((uint64_t)seed << 32 | (uint32_t)i) * 0x9e3779b97f4a7c15ULL;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	return (unsigned char)(x >> 56 ^ i >> 32);
}

/* The first offset of @p that differs from the pattern of @seed, or -1. */
static long long check(const unsigned char *p, size_t size, uint32_t seed)
{
	size_t i;

	for (i = 0; i < size; i++)
		if (p[i] != pattern(seed, i))
			return (long long)i;
	return -1;
}

/*
 * Once the connection's device is known: the library on its context, a PD, the QP,
 * and @n ODP buffers of s->size bytes nothing has touched.
 */
static int side_setup(struct side *s, int n)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ;
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	int i;

	if (ibodp_wrap(s->id->verbs, &s->dev))
		return fail("ibodp_wrap", ibodp_errmsg());
	s->pd = ibv_alloc_pd(s->id->verbs);
	if (!s->pd)
		return fail("ibv_alloc_pd", strerror(errno));
	if (rdma_create_qp(s->id, s->pd, &attr))
		return fail("rdma_create_qp", strerror(errno));
	for (i = 0; i < n; i++) {
		s->buf[i] = mmap(NULL, s->size, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (s->buf[i] == MAP_FAILED) {
			s->buf[i] = NULL;
			return fail("mmap", strerror(errno));
		}
		/* ODP or nothing: this example is about ODP. */
		if (ibodp_reg_mr(s->dev, s->pd, s->buf[i], s->size, access, IBODP_EXPLICIT,
				 IBODP_FAIL, &s->mr[i]))
			return fail("ibodp_reg_mr", ibodp_errmsg());
	}
	s->have_counters = !ibodp_read_counters(s->dev, s->id->port_num, &s->before);
	return 0;
}

static void side_report(struct side *s, const char *who)
{
	struct ibodp_counters after, d;
	char text[512];

	if (!s->have_counters || ibodp_read_counters(s->dev, s->id->port_num, &after)) {
		printf("%s: no ODP counters (%s)\n", who, ibodp_errmsg());
		return;
	}
	ibodp_counters_delta(&s->before, &after, &d);
	ibodp_counters_str(&d, text, sizeof(text));
	printf("%s: ODP counters of %s port %u: %s\n", who, ibodp_name(s->dev),
	       s->id->port_num, text);
}

static void side_free(struct side *s)
{
	int i;

	for (i = 0; i < 3; i++) {
		if (s->mr[i] && ibodp_dereg_mr(s->mr[i]))
			fprintf(stderr, "odp_rdma_cm: %s\n", ibodp_errmsg());
		if (s->buf[i])
			munmap(s->buf[i], s->size);
	}
	if (s->id && s->id->qp)
		rdma_destroy_qp(s->id);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	/* The context is librdmacm's: ibodp_close() leaves it open. */
	ibodp_close(s->dev);
	if (s->id)
		rdma_destroy_ep(s->id);
}

/* The completion of the one request in flight on @cq's side; 0 if it succeeded. */
static int wait_wc(struct side *s, int send, const char *what)
{
	struct ibv_wc wc;
	int ret;

	ret = send ? rdma_get_send_comp(s->id, &wc) : rdma_get_recv_comp(s->id, &wc);
	if (ret <= 0)
		return fail(what, ret ? strerror(errno) : "no completion");
	if (wc.status != IBV_WC_SUCCESS)
		return fail(what, ibv_wc_status_str(wc.status));
	return 0;
}

static struct rdma_addrinfo *resolve(const char *addr, const char *port, int passive)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	int ret;

	if (passive)
		hints.ai_flags = RAI_PASSIVE;
	ret = rdma_getaddrinfo(addr, port, &hints, &res);
	if (ret) {
		fprintf(stderr, "odp_rdma_cm: rdma_getaddrinfo(%s, %s): %s\n",
			addr ? addr : "any", port, ret == -1 ? strerror(errno) : gai_strerror(ret));
		return NULL;
	}
	return res;
}

static int server(const char *addr, const char *port, size_t size)
{
	struct rdma_cm_id *listen_id = NULL;
	struct side s = { .size = size };
	struct rdma_addrinfo *res;
	struct target *t;
	struct done *d;
	long long bad;
	int ret = 1;

	res = resolve(addr, port, 1);
	if (!res)
		return 1;
	if (rdma_create_ep(&listen_id, res, NULL, NULL) || rdma_listen(listen_id, 1)) {
		fail("rdma_create_ep/rdma_listen", strerror(errno));
		goto out;
	}
	/* The line a script waits for before it starts the client. */
	printf("server: listening on port %s\n", port);
	fflush(stdout);
	if (rdma_get_request(listen_id, &s.id)) {
		fail("rdma_get_request", strerror(errno));
		goto out;
	}
	/* buf[0]: the target, untouched; buf[1]: messages in and out. */
	if (side_setup(&s, 2))
		goto out;
	d = (struct done *)s.buf[1];
	if (rdma_post_recv(s.id, NULL, d, sizeof(*d), s.mr[1]->mr) ||
	    rdma_accept(s.id, NULL)) {
		fail("rdma_post_recv/rdma_accept", strerror(errno));
		goto out;
	}
	t = (struct target *)(s.buf[1] + 64);
	*t = (struct target){ .addr = (uintptr_t)s.buf[0], .rkey = s.mr[0]->mr->rkey,
			      .size = (uint32_t)size };
	if (rdma_post_send(s.id, NULL, t, sizeof(*t), s.mr[1]->mr, 0) ||
	    wait_wc(&s, 1, "sending the target") || wait_wc(&s, 0, "the client's done")) {
		fail("server", "the exchange failed");
		goto out;
	}
	bad = check(s.buf[0], size, d->seed);
	side_report(&s, "server");
	if (d->size != size || bad >= 0) {
		fprintf(stderr, "odp_rdma_cm: server: %s\n", d->size != size ?
			"the client wrote another size" : "a byte differs from what was sent");
		if (bad >= 0)
			fprintf(stderr, "odp_rdma_cm: server: first at offset %lld\n", bad);
		goto out;
	}
	printf("server: received %zu bytes by RDMA WRITE into untouched ODP memory, all as sent\n",
	       size);
	ret = 0;
out:
	if (s.id)
		rdma_disconnect(s.id);
	side_free(&s);
	if (listen_id)
		rdma_destroy_ep(listen_id);
	rdma_freeaddrinfo(res);
	return ret;
}

static int client(const char *addr, const char *port, size_t size)
{
	struct side s = { .size = size };
	struct rdma_addrinfo *res;
	struct target *t;
	struct done *d;
	long long bad;
	uint32_t seed = (uint32_t)getpid();
	size_t i;
	int ret = 1;

	res = resolve(addr, port, 0);
	if (!res)
		return 1;
	if (rdma_create_ep(&s.id, res, NULL, NULL)) {
		fail("rdma_create_ep", strerror(errno));
		goto out;
	}
	/* buf[0]: the pattern; buf[1]: read back; buf[2]: messages in and out. */
	if (side_setup(&s, 3))
		goto out;
	t = (struct target *)s.buf[2];
	if (rdma_post_recv(s.id, NULL, t, sizeof(*t), s.mr[2]->mr) ||
	    rdma_connect(s.id, NULL)) {
		fail("rdma_post_recv/rdma_connect", strerror(errno));
		goto out;
	}
	if (wait_wc(&s, 0, "the server's target"))
		goto out;
	if (t->size != size) {
		fprintf(stderr, "odp_rdma_cm: the server offers %u bytes, -s asks %zu\n",
			t->size, size);
		goto out;
	}
	for (i = 0; i < size; i++)
		s.buf[0][i] = pattern(seed, i);
	if (rdma_post_write(s.id, NULL, s.buf[0], size, s.mr[0]->mr, 0, t->addr, t->rkey) ||
	    wait_wc(&s, 1, "RDMA WRITE") ||
	    rdma_post_read(s.id, NULL, s.buf[1], size, s.mr[1]->mr, 0, t->addr, t->rkey) ||
	    wait_wc(&s, 1, "RDMA READ"))
		goto out;
	bad = check(s.buf[1], size, seed);
	if (bad >= 0) {
		fprintf(stderr, "odp_rdma_cm: client: byte %lld read back differs\n", bad);
		goto out;
	}
	d = (struct done *)(s.buf[2] + 64);
	*d = (struct done){ .seed = seed, .size = (uint32_t)size };
	if (rdma_post_send(s.id, NULL, d, sizeof(*d), s.mr[2]->mr, 0) ||
	    wait_wc(&s, 1, "sending done"))
		goto out;
	side_report(&s, "client");
	printf("client: wrote %zu bytes into the server's ODP memory and read them back, all as sent\n",
	       size);
	ret = 0;
out:
	if (s.id)
		rdma_disconnect(s.id);
	side_free(&s);
	rdma_freeaddrinfo(res);
	return ret;
}

static int usage(void)
{
	fprintf(stderr, "usage: odp_rdma_cm server [-p PORT] [-s BYTES] [ADDRESS]\n"
			"       odp_rdma_cm client [-p PORT] [-s BYTES] ADDRESS\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *port = "7471";
	unsigned long long size = 1 << 20;
	char *end;
	int opt;

	if (argc < 2)
		return usage();
	optind = 2;
	while ((opt = getopt(argc, argv, "p:s:")) != -1) {
		switch (opt) {
		case 'p':
			port = optarg;
			break;
		case 's':
			errno = 0;
			size = strtoull(optarg, &end, 0);
			if (errno || *end || !size || size > UINT32_MAX) {
				fprintf(stderr, "odp_rdma_cm: -s wants a size in bytes, 1 to %u\n",
					UINT32_MAX);
				return 2;
			}
			break;
		default:
			return usage();
		}
	}
	if (!strcmp(argv[1], "server") && argc - optind <= 1)
		return server(optind < argc ? argv[optind] : NULL, port, size);
	if (!strcmp(argv[1], "client") && argc - optind == 1)
		return client(argv[optind], port, size);
	return usage();
}
