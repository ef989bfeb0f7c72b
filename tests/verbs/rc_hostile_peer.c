// SPDX-License-Identifier: GPL-2.0
/*
 * A RoCE peer that answers wrongly. The RDMA device (--dev) is soft-RoCE on a tap
 * interface (--tap), whose other end is this program: it reads the frames rxe sends
 * and writes the frames rxe receives, as any host on the network could. 10-verbs.sh
 * makes the tap, its addresses and the device.
 *
 * - The peer answers an RDMA READ with a proper READ response (ACK, the data): the
 *   READ completes with the right bytes. This proves that the frames written here
 *   reach the requester (addresses, ICRC), so the check below cannot pass by default.
 * - The peer answers an RDMA READ with a READ response middle, as if the first one
 *   were lost: the READ must complete with a bad response error. rxe once hit a WARN
 *   there and completed the READ successfully, its data never written.
 * - The peer reads rxe's memory (a READ request), writes zero bytes (an RDMA WRITE
 *   of length 0), then repeats the READ, as a requester whose response was lost
 *   does: rxe must answer the duplicate with the same bytes. rxe once took the MR of
 *   the replay from the zero-length WRITE, none, and warned in rxe_mr_copy() for
 *   every such duplicate, answering nothing.
 *
 * About 1 s.
 *
 * vmtest-class: nodma
 */
#include "tap.h"
#include "verbs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* The peer's side of the tap's subnet, as 10-verbs.sh set it up (a static neighbour). */
#define PEER_IP		"10.99.0.2"
static const uint8_t peer_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x99, 0x02 };
#define PEER_QPN	0x123
#define ROCE_PORT	4791
#define READ_SIZE	512
#define WAIT_MS		10000

enum {
	OP_WRITE_ONLY = 0x0a,
	OP_READ_REQUEST = 0x0c,
	OP_READ_RESPONSE_MIDDLE = 0x0e,
	OP_READ_RESPONSE_ONLY = 0x10,
	OP_ACKNOWLEDGE = 0x11,
};

struct peer {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t buf[READ_SIZE];
	struct ibv_mr *target_mr;	/* what the peer reads of rxe: target */
	uint8_t target[READ_SIZE];
	int tap;
	uint8_t tap_mac[6];
	uint32_t local_ip, peer_ip;	/* network order */
	int gid_index;
};

/* crc32_le() of the kernel: the reflected CRC-32 without its inversions. */
static uint32_t crc32_le(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int i = 0; i < 8; i++)
			crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
	}
	return crc;
}

static uint16_t ip_checksum(const uint8_t *p, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < len; i += 2)
		sum += p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = v >> 16;
	p[1] = v >> 8;
	p[2] = v;
}

/*
 * Send rxe a RoCEv2 frame from the peer: BTH with @opcode and @psn to our QP, then
 * @ext (an AETH, or nothing) and @payload, then the ICRC as rxe computes it (IP and UDP
 * headers with TOS, TTL and checksums masked, BTH's reserved byte masked, the rest as
 * it is, on a CRC seeded with a masked LRH).
 */
static bool send_frame(struct peer *p, uint8_t opcode, uint32_t psn, const uint8_t *ext,
		       size_t ext_len, const uint8_t *payload, size_t len)
{
	uint8_t f[14 + 20 + 8 + 12 + 4 + READ_SIZE + 4] = { 0 }, ps[20 + 8 + 12];
	uint8_t *ip = f + 14, *udp = ip + 20, *bth = udp + 8, *rest = bth + 12;
	size_t roce = 12 + ext_len + len + 4;
	uint32_t crc;
	ssize_t n;

	memcpy(f, p->tap_mac, 6);
	memcpy(f + 6, peer_mac, 6);
	put16(f + 12, 0x0800);
	ip[0] = 0x45;
	put16(ip + 2, 20 + 8 + roce);
	put16(ip + 4, 0x4242);
	put16(ip + 6, 0x4000);	/* DF */
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, &p->peer_ip, 4);
	memcpy(ip + 16, &p->local_ip, 4);
	put16(ip + 10, ip_checksum(ip, 20));
	put16(udp, 0xc0de);
	put16(udp + 2, ROCE_PORT);
	put16(udp + 4, 8 + roce);
	bth[0] = opcode;
	put16(bth + 2, 0xffff);
	put24(bth + 5, p->qp->qp_num);
	if (opcode == OP_WRITE_ONLY || opcode == OP_READ_REQUEST)
		bth[8] = 0x80;	/* a request of the peer asks for its ACK */
	put24(bth + 9, psn);
	memcpy(rest, ext, ext_len);
	memcpy(rest + ext_len, payload, len);

	memcpy(ps, ip, sizeof(ps));
	ps[1] = 0xff;			/* TOS */
	ps[8] = 0xff;			/* TTL */
	put16(ps + 10, 0xffff);		/* IP checksum */
	put16(ps + 20 + 6, 0xffff);	/* UDP checksum */
	ps[20 + 8 + 4] = 0xff;		/* BTH resv8a */
	crc = crc32_le(0xdebb20e3, ps, sizeof(ps));
	crc = ~crc32_le(crc, rest, ext_len + len);
	memcpy(rest + ext_len + len, &crc, 4);	/* little-endian, as rxe stores it */

	n = write(p->tap, f, 14 + 20 + 8 + roce);
	if (n != (ssize_t)(14 + 20 + 8 + roce)) {
		tap_diag("write to the tap: %s", n < 0 ? strerror(errno) : "short");
		return false;
	}
	return true;
}

/*
 * Wait for a frame rxe sends to the peer's QP with @opcode; its PSN, with what follows
 * the BTH (before the ICRC) in ext[*len], or -1 (said).
 */
static long next_frame(struct peer *p, uint8_t opcode, uint8_t *ext, size_t *len)
{
	long long deadline = vt_now_ms() + WAIT_MS;
	struct pollfd pfd = { .fd = p->tap, .events = POLLIN };
	uint8_t f[2048];

	while (vt_now_ms() < deadline) {
		ssize_t n;
		const uint8_t *ip = f + 14, *udp = ip + 20, *bth = udp + 8;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		n = read(p->tap, f, sizeof(f));
		if (n < 14 + 20 + 8 + 12 + 4 || f[12] != 0x08 || f[13] != 0x00 ||
		    ip[0] != 0x45 || ip[9] != 17 || (udp[2] << 8 | udp[3]) != ROCE_PORT)
			continue;	/* not RoCEv2 over IPv4 */
		if (bth[0] != opcode ||
		    (uint32_t)(bth[5] << 16 | bth[6] << 8 | bth[7]) != PEER_QPN)
			continue;
		*len = n - (14 + 20 + 8 + 12 + 4);
		memcpy(ext, bth + 12, *len);
		return bth[9] << 16 | bth[10] << 8 | bth[11];
	}
	tap_diag("no frame with opcode %#x came out of the tap in %d ms", opcode, WAIT_MS);
	return -1;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

/* A RETH: virtual address, rkey, length. */
static void reth(uint8_t *r, uint64_t va, uint32_t rkey, uint32_t len)
{
	put32(r, va >> 32);
	put32(r + 4, va);
	put32(r + 8, rkey);
	put32(r + 12, len);
}

/*
 * The peer's READ of rxe's target at @psn: the READ response only must carry its
 * bytes. Its frame: AETH (4 bytes), then the data.
 */
static bool peer_reads(struct peer *p, uint32_t psn)
{
	uint8_t r[16], ext[4 + READ_SIZE];
	size_t len;
	long got;

	reth(r, (uintptr_t)p->target, p->target_mr->rkey, READ_SIZE);
	if (!send_frame(p, OP_READ_REQUEST, psn, r, sizeof(r), NULL, 0))
		return false;
	got = next_frame(p, OP_READ_RESPONSE_ONLY, ext, &len);
	if (got < 0)
		return false;
	if (got != (long)psn || len != sizeof(ext) || memcmp(ext + 4, p->target, READ_SIZE)) {
		tap_diag("READ response: PSN %ld (expected %u), %zu bytes, %s", got, psn, len,
			 len == sizeof(ext) && !memcmp(ext + 4, p->target, READ_SIZE) ?
			 "the right data" : "not the target's bytes");
		return false;
	}
	return true;
}

static int find_gid(struct peer *p)
{
	struct ibv_gid_entry e;
	uint8_t want[16] = { [10] = 0xff, [11] = 0xff };

	memcpy(want + 12, &p->local_ip, 4);
	for (int i = 0; i < 16; i++) {
		if (ibv_query_gid_ex(p->ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && !memcmp(e.gid.raw, want, 16))
			return i;
	}
	return -1;
}

/* A new RC QP connected to the peer's QP, in RTS. */
static bool connect_qp(struct peer *p)
{
	struct ibv_qp_init_attr init = { .send_cq = p->cq, .recv_cq = p->cq, .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						  .max_send_sge = 1, .max_recv_sge = 1 } };
	struct vt_rc_path path = {
		.port = 1,
		.gid_index = p->gid_index,
		.remote_qpn = PEER_QPN,
		.access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
		.sq_psn = 0x100,
		.hop_limit = 64,
		.rd_atomic = 1,
		.timeout = 18,		/* about 1 s: the peer answers at once */
		.retry_cnt = 1,
		.rnr_retry = 1,
	};

	if (p->qp)
		ibv_destroy_qp(p->qp);
	p->qp = ibv_create_qp(p->pd, &init);
	if (!p->qp) {
		tap_diag("ibv_create_qp: %s", strerror(errno));
		return false;
	}
	path.dgid.raw[10] = 0xff;
	path.dgid.raw[11] = 0xff;
	memcpy(path.dgid.raw + 12, &p->peer_ip, 4);
	if (vt_connect_rc(p->qp, &path)) {
		tap_diag("cannot connect a QP to the peer (the reason is on stderr)");
		return false;
	}
	return true;
}

/* Post an RDMA READ of the peer's memory into buf; the peer's request PSN, or -1. */
static long post_read(struct peer *p)
{
	struct ibv_sge sge = { .addr = (uintptr_t)p->buf, .length = READ_SIZE,
			       .lkey = p->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = 0x10000, .rkey = 0x77 } }, *bad;
	uint8_t ext[2048];
	size_t len;
	int ret;

	memset(p->buf, 0, READ_SIZE);
	ret = ibv_post_send(p->qp, &wr, &bad);
	if (ret) {
		tap_diag("ibv_post_send(RDMA READ): %s", strerror(ret));
		return -1;
	}
	return next_frame(p, OP_READ_REQUEST, ext, &len);
}

static bool completion(struct peer *p, enum ibv_wc_status *status)
{
	struct ibv_wc wc;

	if (vt_poll_one(p->cq, &wc, WAIT_MS)) {
		tap_diag("no completion of the RDMA READ in %d ms", WAIT_MS);
		return false;
	}
	*status = wc.status;
	return true;
}

static bool open_tap(struct peer *p, const char *name)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI };
	int s;

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	p->tap = open("/dev/net/tun", O_RDWR);
	if (p->tap < 0 || ioctl(p->tap, TUNSETIFF, &ifr)) {
		tap_diag("cannot attach to tap %s through /dev/net/tun: %s", name,
			 strerror(errno));
		return false;
	}
	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0 || ioctl(s, SIOCGIFADDR, &ifr)) {
		tap_diag("cannot read the IPv4 address of %s: %s", name, strerror(errno));
		if (s >= 0)
			close(s);
		return false;
	}
	memcpy(&p->local_ip, &((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr, 4);
	if (ioctl(s, SIOCGIFHWADDR, &ifr)) {
		tap_diag("cannot read the MAC address of %s: %s", name, strerror(errno));
		close(s);
		return false;
	}
	memcpy(p->tap_mac, ifr.ifr_hwaddr.sa_data, 6);
	close(s);
	inet_pton(AF_INET, PEER_IP, &p->peer_ip);
	return true;
}

/* The device's port ACTIVE: the tap has its carrier once this program holds it. */
static bool port_active(struct peer *p)
{
	long long deadline = vt_now_ms() + WAIT_MS;
	struct ibv_port_attr pa;

	do {
		if (!ibv_query_port(p->ctx, 1, &pa) && pa.state == IBV_PORT_ACTIVE)
			return true;
		usleep(10000);
	} while (vt_now_ms() < deadline);
	tap_diag("port 1 of the device is not ACTIVE after %d ms", WAIT_MS);
	return false;
}

int main(int argc, char **argv)
{
	static const char *tap_name = "";
	static const struct vt_extra_option extra[] = {
		{ .name = "tap", .help = "the tap device the peer answers on (required)",
		  .text = &tap_name },
		{ 0 }
	};
	enum ibv_wc_status status = IBV_WC_SUCCESS;
	uint8_t aeth[4] = { 0x1f, 0, 0, 1 }, data[READ_SIZE];
	struct peer p = { .tap = -1 };
	struct vt_options opt;
	const char *dev;
	long psn;
	bool ok;

	vt_extra_options(extra);
	vt_parse_options(argc, argv, &opt);
	dev = opt.dev;
	if (!dev || !*tap_name) {
		fprintf(stderr, "usage: %s --dev RXE_DEVICE_ON_THE_TAP --tap TAP\n", argv[0]);
		return 2;
	}
	if (!open_tap(&p, tap_name))
		tap_bail("no tap to play the peer through");
	p.ctx = vt_open_device(dev);
	if (!p.ctx || !port_active(&p))
		tap_bail("no usable device %s", dev);
	p.gid_index = find_gid(&p);
	if (p.gid_index < 0)
		tap_bail("%s has no RoCEv2 GID of the tap's IPv4 address", dev);
	p.pd = ibv_alloc_pd(p.ctx);
	p.cq = p.pd ? ibv_create_cq(p.ctx, 4, NULL, NULL, 0) : NULL;
	p.mr = p.cq ? ibv_reg_mr(p.pd, p.buf, READ_SIZE, IBV_ACCESS_LOCAL_WRITE) : NULL;
	p.target_mr = p.mr ? ibv_reg_mr(p.pd, p.target, READ_SIZE, IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!p.target_mr)
		tap_bail("cannot set up PD, CQ and MR: %s", strerror(errno));

	/* A proper answer: ACK with unlimited credits, MSN 1, and the data. */
	vt_fill(data, READ_SIZE, 0x5500);
	ok = connect_qp(&p) && (psn = post_read(&p)) >= 0 &&
	     send_frame(&p, OP_READ_RESPONSE_ONLY, psn, aeth, sizeof(aeth), data, READ_SIZE) &&
	     completion(&p, &status);
	tap_ok(ok && status == IBV_WC_SUCCESS && vt_check(p.buf, READ_SIZE, 0x5500) < 0,
	       "the peer's READ response only: the READ completes (%s) with the peer's bytes",
	       ok ? ibv_wc_status_str(status) : "no completion");

	/* A middle response first, as if the first were lost. */
	ok = connect_qp(&p) && (psn = post_read(&p)) >= 0 &&
	     send_frame(&p, OP_READ_RESPONSE_MIDDLE, psn, NULL, 0, data, READ_SIZE) &&
	     completion(&p, &status);
	tap_ok(ok && status == IBV_WC_BAD_RESP_ERR,
	       "the peer's READ response middle, none first: the READ completes with a bad "
	       "response error (%s)", ok ? ibv_wc_status_str(status) : "no completion");

	/*
	 * The peer as requester, rxe's QP answering from PSN 0: a READ, a WRITE of
	 * nothing (rkey 0, as C9-88 allows), the READ again.
	 */
	vt_fill(p.target, READ_SIZE, 0x7700);
	{
		uint8_t r[16], ack[4];
		size_t len;

		reth(r, 0, 0, 0);
		ok = connect_qp(&p) && peer_reads(&p, 0) &&
		     send_frame(&p, OP_WRITE_ONLY, 1, r, sizeof(r), NULL, 0) &&
		     next_frame(&p, OP_ACKNOWLEDGE, ack, &len) == 1;
		tap_ok(ok, "the peer reads 512 bytes of rxe's memory, then writes zero bytes");
		tap_ok(ok && peer_reads(&p, 0),
		       "the peer's duplicate of that READ is answered with the same bytes");
	}

	ibv_destroy_qp(p.qp);
	ibv_dereg_mr(p.target_mr);
	ibv_dereg_mr(p.mr);
	ibv_destroy_cq(p.cq);
	ibv_dealloc_pd(p.pd);
	ibv_close_device(p.ctx);
	close(p.tap);
	return tap_done();
}
