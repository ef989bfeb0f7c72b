// SPDX-License-Identifier: GPL-2.0
/*
 * Our verbs checks across two hosts: RC WRITE, READ, SEND, atomics and UD SEND between
 * ODP MRs of two nodes, on explicit MRs and on implicit (whole address space) ones, and
 * the target's memory invalidated (madvise, a new mapping over the old, mprotect, fork)
 * while the initiator keeps moving data into or out of it. Last, a memory window the
 * target binds over 8 KiB of its memory: the initiator's WRITE through it lands, one
 * that crosses its end fails and leaves every byte of the target as it was.
 *
 * On the target node:    odp_remote [--dev D] [--tcp PORT]   (serves one initiator)
 * On the initiator node: odp_remote [--dev D] [--tcp PORT] --peer HOST   (prints TAP)
 *
 * The initiator drives everything over a TCP connection: the target fills, checks and
 * drops its memory, posts receives, reads its own ODP counters and runs the
 * invalidations when told, and answers with a number. Every byte is checked against a
 * pattern with no short period; the target's ODP counters prove that its pages were
 * faulted by the transfers (exactly the pages a transfer spans) and invalidated.
 */
#include "../lib/odp.h"
#include "pattern.h"
#include "tap.h"
#include "verbs.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REGION		(4UL << 20)	/* each node's memory under test */
#define CHUNK		(64UL << 10)	/* one transfer while the target invalidates */
#define BIG_LEN		((1UL << 20) + 3)	/* WRITE, READ, SEND: odd length ... */
#define LOCAL_OFF	4097		/* ... at odd offsets on both sides */
#define REMOTE_OFF	8198
#define UD_QKEY		0x11111111
#define UD_GRH		40		/* a UD receive starts with the packet's GRH */
#define PSN		0x1000
#define DEFAULT_TCP	18600

enum kind { EXPLICIT, IMPLICIT, NKINDS };
static const char *const kind_name[NKINDS] = { "explicit ODP MRs", "implicit ODP MRs" };

/* What the target can be asked to do, and the invalidations it can run. */
enum cmd {
	CMD_FILL = 1,	/* vt_fill chunks of .arg bytes (0: one piece), seed + i each */
	CMD_CHECK,	/* the same with vt_check: offset of the first wrong byte, or -1 */
	CMD_DROP,	/* MADV_DONTNEED: the range untouched again */
	CMD_POST_RECV,	/* a receive into the range on the RC (.arg 0) or UD QP (1) */
	CMD_WAIT_RECV,	/* its completion: the byte count, or -(1000 + status) */
	CMD_WORD,	/* the 64-bit word at .off */
	CMD_COUNTER,	/* ODP counter .arg (enum vt_odp_counter), after the cache settles */
	CMD_INVAL_START,	/* invalidate the region in a loop, way .arg */
	CMD_INVAL_STOP,		/* stop: the number of rounds done */
	CMD_BIND_WINDOW,	/* a type 2 window over the explicit MR's range: its rkey */
	CMD_BYE,
};

enum inval { INVAL_DONTNEED, INVAL_REMAP, INVAL_MPROTECT, INVAL_FORK, NINVALS };
static const char *const inval_name[NINVALS] = {
	"madvise(MADV_DONTNEED)", "a new mapping over the old (mmap MAP_FIXED)",
	"mprotect(PROT_READ) and back", "fork() (its pages become copy-on-write)",
};

struct msg {
	uint32_t cmd, arg;	/* arg: chunk size, QP, counter or invalidation */
	uint32_t kind;		/* which of the target's MRs a receive uses */
	uint32_t pad;
	uint64_t off, len, seed;
	int64_t result;
};

/* What each node tells the other at the start (the same program on both). */
struct hello {
	union ibv_gid gid;
	uint32_t rc_qpn, ud_qpn;
	uint64_t addr;		/* the region */
	uint32_t rkey[NKINDS];
	uint32_t ok;		/* 0: this node cannot take part; why[] says why */
	char why[96];
};

static struct vt_options opt;
static long tcp_port = DEFAULT_TCP;
static long stream_ops = REGION / CHUNK;	/* transfers during one invalidation check */
static const char *peer;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *send_cq, *recv_cq;
static struct ibv_qp *rc_qp, *ud_qp;
static struct ibv_ah *ah;
static struct ibv_mr *mr[NKINDS];
static struct ibv_mw *mw;	/* the target's window (CMD_BIND_WINDOW) */
static unsigned char *region;
static struct hello me, them;
static size_t page_size;
static int sock = -1;

static const struct vt_extra_option extra[] = {
	{ "tcp", "TCP port of the control connection", 65535, &tcp_port, NULL },
	{ "stream", "transfers of 64 KiB during each invalidation check (1-64)",
	  REGION / CHUNK, &stream_ops, NULL },
	{ "peer", "the target node: run the checks against it", 0, NULL, &peer },
	{ 0 }
};

/*
 * The longest the initiator waits for the target's answer: a command waits at most
 * VT_WAIT_MS for a completion. Past it the target is taken as gone (a node can die
 * without closing the connection). The target waits for commands as long as it runs.
 */
static bool set_timeout(int fd)
{
	struct timeval tv = { .tv_sec = 2 * VT_WAIT_MS / 1000 };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv))) {
		fprintf(stderr, "odp_remote: setsockopt(SO_RCVTIMEO): %s\n", strerror(errno));
		return false;
	}
	return true;
}

/* write() or read() all of len bytes: false (said) on failure, end of file or timeout. */
static bool xfer(bool out, void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len) {
		ssize_t n = out ? write(sock, p, len) : read(sock, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "odp_remote: %s the control connection: %s\n",
				out ? "writing to" : "reading from",
				!n ? "closed by the other node" :
				errno == EAGAIN ? "no answer in time" : strerror(errno));
			return false;
		}
		p += n;
		len -= n;
	}
	return true;
}

/* vt_fill / vt_check of len bytes in chunks of chunk bytes (0: one), seed + i each. */
static void fill_chunks(unsigned char *p, size_t len, size_t chunk, unsigned int seed)
{
	size_t i;

	chunk = chunk ? chunk : len;
	for (i = 0; i * chunk < len; i++)
		vt_fill(p + i * chunk, len - i * chunk < chunk ? len - i * chunk : chunk, seed + i);
}

static long check_chunks(const unsigned char *p, size_t len, size_t chunk, unsigned int seed)
{
	size_t i;

	chunk = chunk ? chunk : len;
	for (i = 0; i * chunk < len; i++) {
		size_t n = len - i * chunk < chunk ? len - i * chunk : chunk;
		long bad = vt_check(p + i * chunk, n, seed + i);

		if (bad >= 0)
			return (long)(i * chunk) + bad;
	}
	return -1;
}

static size_t span_pages(uint64_t off, uint64_t len)
{
	return (off + len - 1) / page_size - off / page_size + 1;
}

/* The QPs, CQs and MRs of this node; NULL, or why this node cannot take part. */
static const char *setup(const struct ibv_device_attr_ex *attr)
{
	struct ibv_qp_init_attr qpa = {
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { 0 };

	if (!(attr->odp_caps.general_caps & IBV_ODP_SUPPORT))
		return "ODP not supported by this device";
	if (!(attr->odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT))
		return "implicit ODP not supported by this device";
	if (!(attr->odp_caps.per_transport_caps.ud_odp_caps & IBV_ODP_SUPPORT_SEND))
		return "no ODP for UD on this device";
	if (!vt_odp_counters(ctx, opt.port, (long[VT_ODP_NCOUNTERS]){ 0 }))
		return "the device has no ODP counters";
	pd = ibv_alloc_pd(ctx);
	send_cq = ibv_create_cq(ctx, 128, NULL, NULL, 0);
	recv_cq = ibv_create_cq(ctx, 128, NULL, NULL, 0);
	if (!pd || !send_cq || !recv_cq)
		return "cannot allocate a PD and CQs";
	qpa.send_cq = send_cq;
	qpa.recv_cq = recv_cq;
	qpa.qp_type = IBV_QPT_RC;
	rc_qp = ibv_create_qp(pd, &qpa);
	qpa.qp_type = IBV_QPT_UD;
	ud_qp = ibv_create_qp(pd, &qpa);
	if (!rc_qp || !ud_qp)
		return "cannot create the QPs";
	a.qp_state = IBV_QPS_INIT;
	a.port_num = opt.port;
	a.qkey = UD_QKEY;
	if (ibv_modify_qp(ud_qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_QKEY))
		return "cannot move the UD QP to INIT";
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(ud_qp, &a, IBV_QP_STATE))
		return "cannot move the UD QP to RTR";
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = PSN;
	if (ibv_modify_qp(ud_qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return "cannot move the UD QP to RTS";
	/* Small pages only: a THP would fault 512 pages for one and blur the counts. */
	region = vt_map_anon(REGION, PROT_READ | PROT_WRITE, 0);
	if (!region || madvise(region, REGION, MADV_NOHUGEPAGE))
		return "cannot map the region with small pages";
	mr[EXPLICIT] = ibv_reg_mr(pd, region, REGION, VT_ODP_ACCESS | IBV_ACCESS_MW_BIND);
	mr[IMPLICIT] = ibv_reg_mr(pd, NULL, SIZE_MAX, VT_ODP_ACCESS);
	if (!mr[EXPLICIT] || !mr[IMPLICIT])
		return "cannot register the ODP MRs";
	if (ibv_query_gid(ctx, opt.port, opt.gid_index, &me.gid))
		return "cannot read the GID";
	me.rc_qpn = rc_qp->qp_num;
	me.ud_qpn = ud_qp->qp_num;
	me.addr = (uintptr_t)region;
	me.rkey[EXPLICIT] = mr[EXPLICIT]->rkey;
	me.rkey[IMPLICIT] = mr[IMPLICIT]->rkey;
	return NULL;
}

/* Everything setup() and connect_qps() made, whichever of it exists. */
static void teardown(void)
{
	int k;

	if (sock >= 0)
		close(sock);
	if (ah)
		ibv_destroy_ah(ah);
	if (mw)
		ibv_dealloc_mw(mw);
	if (rc_qp)
		ibv_destroy_qp(rc_qp);
	if (ud_qp)
		ibv_destroy_qp(ud_qp);
	for (k = 0; k < NKINDS; k++)
		if (mr[k])
			ibv_dereg_mr(mr[k]);
	if (region)
		munmap(region, REGION);
	if (send_cq)
		ibv_destroy_cq(send_cq);
	if (recv_cq)
		ibv_destroy_cq(recv_cq);
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
}

/* Connect the RC QP to the other node's and make the UD address: NULL or why not. */
static const char *connect_qps(void)
{
	struct vt_rc_path path = {
		.port = opt.port, .gid_index = opt.gid_index, .dgid = them.gid,
		.remote_qpn = them.rc_qpn,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		.sq_psn = PSN, .rq_psn = PSN, .hop_limit = 64, .rd_atomic = 16,
		.timeout = opt.qp_timeout, .retry_cnt = 7, .rnr_retry = 7,
	};
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = opt.port,
		.grh = { .dgid = them.gid, .sgid_index = opt.gid_index, .hop_limit = 64 },
	};

	if (vt_connect_rc(rc_qp, &path))
		return "cannot connect the RC QPs";
	ah = ibv_create_ah(pd, &aa);
	return ah ? NULL : "cannot create the UD address handle";
}

/* ---- the target ---- */

static atomic_bool inval_stop;
static long inval_rounds;
static int inval_errno;		/* the invalidating thread's errno when it failed */

static void *invalidate(void *arg)
{
	enum inval way = (enum inval)(uintptr_t)arg;
	struct timespec pause = { 0, 1000000 };
	pid_t pid;

	while (!atomic_load(&inval_stop)) {
		switch (way) {
		case INVAL_DONTNEED:
			if (madvise(region, REGION, MADV_DONTNEED))
				return inval_errno = errno, (void *)"madvise";
			break;
		case INVAL_REMAP:
			if (mmap(region, REGION, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != region ||
			    madvise(region, REGION, MADV_NOHUGEPAGE))
				return inval_errno = errno, (void *)"mmap MAP_FIXED";
			break;
		case INVAL_MPROTECT:
			if (mprotect(region, REGION, PROT_READ) ||
			    mprotect(region, REGION, PROT_READ | PROT_WRITE))
				return inval_errno = errno, (void *)"mprotect";
			break;
		case INVAL_FORK:
			pid = fork();
			if (pid < 0)
				return inval_errno = errno, (void *)"fork";
			if (!pid)
				_exit(0);
			if (waitpid(pid, NULL, 0) != pid)
				return inval_errno = errno, (void *)"waitpid";
			break;
		default:
			return (void *)"an unknown way";
		}
		inval_rounds++;
		/* Leave the initiator's transfers time to reach the pages between rounds. */
		nanosleep(&pause, NULL);
	}
	return NULL;
}

/* Bind the target's type 2 window over [off, off + len) through its RC QP: its rkey. */
static int64_t bind_window(uint64_t off, uint64_t len)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_wc wc;
	int ret;

	if (!mw)
		mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	if (!mw)
		return -errno;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = mr[EXPLICIT], .addr = (uintptr_t)region + off, .length = len,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	ret = ibv_post_send(rc_qp, &wr, &bad);
	if (ret)
		return -ret;
	if (vt_poll_one(send_cq, &wc, VT_WAIT_MS))
		return -ETIMEDOUT;
	if (wc.status != IBV_WC_SUCCESS)
		return -(1000 + wc.status);
	mw->rkey = wr.bind_mw.rkey;
	return mw->rkey;
}

static int64_t serve_one(struct msg *m, pthread_t *thread, bool *running)
{
	long v[VT_ODP_NCOUNTERS];
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	void *err;

	if (m->cmd != CMD_WAIT_RECV && m->cmd != CMD_BYE && m->cmd != CMD_INVAL_STOP &&
	    m->cmd != CMD_COUNTER && m->cmd != CMD_INVAL_START &&
	    (m->off > REGION || m->len > REGION - m->off))
		return -EINVAL;
	switch (m->cmd) {
	case CMD_FILL:
		fill_chunks(region + m->off, m->len, m->arg, m->seed);
		return 0;
	case CMD_CHECK:
		return check_chunks(region + m->off, m->len, m->arg, m->seed);
	case CMD_DROP:
		return madvise(region + m->off, m->len, MADV_DONTNEED) ? -errno : 0;
	case CMD_POST_RECV:
		if (m->kind >= NKINDS)
			return -EINVAL;
		sge = (struct ibv_sge){ (uintptr_t)region + m->off, m->len, mr[m->kind]->lkey };
		wr.sg_list = &sge;
		wr.num_sge = 1;
		return -ibv_post_recv(m->arg ? ud_qp : rc_qp, &wr, &bad);
	case CMD_WAIT_RECV:
		if (vt_poll_one(recv_cq, &wc, VT_WAIT_MS))
			return -ETIMEDOUT;
		return wc.status == IBV_WC_SUCCESS ? (int64_t)wc.byte_len : -(1000 + wc.status);
	case CMD_WORD:
		return *(int64_t *)(region + (m->off & ~7UL));
	case CMD_COUNTER:
		vt_hw_counters_settle();
		if (m->arg >= VT_ODP_NCOUNTERS || !vt_odp_counters(ctx, opt.port, v))
			return -EINVAL;
		return v[m->arg];
	case CMD_INVAL_START:
		if (*running || m->arg >= NINVALS)
			return -EINVAL;
		atomic_store(&inval_stop, false);
		inval_rounds = 0;
		if (pthread_create(thread, NULL, invalidate, (void *)(uintptr_t)m->arg))
			return -EAGAIN;
		*running = true;
		return 0;
	case CMD_INVAL_STOP:
		if (!*running)
			return -EINVAL;
		atomic_store(&inval_stop, true);
		pthread_join(*thread, &err);
		*running = false;
		if (err) {
			fprintf(stderr, "odp_remote: invalidating with %s: %s\n", (char *)err,
				strerror(inval_errno));
			return -EIO;
		}
		return inval_rounds;
	case CMD_BIND_WINDOW:
		return bind_window(m->off, m->len);
	}
	return -EINVAL;
}

static int target(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(tcp_port) };
	bool running = false;
	pthread_t thread;
	int one = 1, lsock;
	const char *why;
	struct msg m;

	lsock = socket(AF_INET, SOCK_STREAM, 0);
	if (lsock < 0 || setsockopt(lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lsock, (struct sockaddr *)&sa, sizeof(sa)) || listen(lsock, 1)) {
		fprintf(stderr, "odp_remote: cannot listen on TCP port %ld: %s\n", tcp_port,
			strerror(errno));
		return 1;
	}
	sock = accept(lsock, NULL, NULL);
	close(lsock);
	if (sock < 0) {
		fprintf(stderr, "odp_remote: accept: %s\n", strerror(errno));
		return 1;
	}
	if (!xfer(true, &me, sizeof(me)) || !xfer(false, &them, sizeof(them)))
		return 1;
	if (!me.ok || !them.ok)
		return 0;	/* the initiator reports the checks as skipped */
	why = connect_qps();
	if (why) {
		fprintf(stderr, "odp_remote: %s\n", why);
		return 1;
	}
	for (;;) {
		if (!xfer(false, &m, sizeof(m)))
			return 1;
		m.result = serve_one(&m, &thread, &running);
		if (!xfer(true, &m, sizeof(m)))
			return 1;
		if (m.cmd == CMD_BYE)
			return 0;
	}
}

/* ---- the initiator ---- */

/* Ask the target; its answer, or tap_bail() when the connection is gone. */
static int64_t ask(enum cmd cmd, uint32_t arg, uint64_t off, uint64_t len, uint64_t seed,
		   enum kind kind)
{
	struct msg m = { .cmd = cmd, .arg = arg, .kind = kind, .off = off, .len = len,
			 .seed = seed };

	if (!xfer(true, &m, sizeof(m)) || !xfer(false, &m, sizeof(m)))
		tap_bail("the target stopped answering (see its output)");
	return m.result;
}

static long target_counter(enum vt_odp_counter c)
{
	return ask(CMD_COUNTER, c, 0, 0, 0, 0);
}

/* Post wr and wait for its completion: true when it succeeded, else said. */
static bool post_wait(struct ibv_qp *qp, struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(qp, wr, &bad)) {
		tap_diag("%s: ibv_post_send: %s", what, strerror(errno));
		return false;
	}
	if (vt_poll_one(send_cq, &wc, VT_WAIT_MS)) {
		tap_diag("%s: no completion", what);
		return false;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		tap_diag("%s: completion status %s", what, ibv_wc_status_str(wc.status));
		return false;
	}
	return true;
}

static bool rdma(enum ibv_wr_opcode op, enum kind k, uint64_t loff, uint64_t roff,
		 uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)region + loff, len, mr[k]->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.wr.rdma = { them.addr + roff, them.rkey[k] },
	};

	return post_wait(rc_qp, &wr, op == IBV_WR_RDMA_WRITE ? "RDMA WRITE" : "RDMA READ");
}

static bool atomic_op(enum ibv_wr_opcode op, enum kind k, uint64_t loff, uint64_t roff,
		      uint64_t compare_add, uint64_t swap)
{
	struct ibv_sge sge = { (uintptr_t)region + loff, 8, mr[k]->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.wr.atomic = { them.addr + roff, compare_add, swap, them.rkey[k] },
	};

	return post_wait(rc_qp, &wr, op == IBV_WR_ATOMIC_FETCH_AND_ADD ? "FETCH_ADD" :
			 "CMP_SWP");
}

/* Both sides' memory untouched again. */
static void drop_all(void)
{
	if (madvise(region, REGION, MADV_DONTNEED))
		tap_diag("madvise(MADV_DONTNEED) here: %s", strerror(errno));
	if (ask(CMD_DROP, 0, 0, REGION, 0, 0))
		tap_diag("the target's madvise(MADV_DONTNEED) failed");
}

static void check_write(enum kind k, unsigned int seed)
{
	size_t span = span_pages(REMOTE_OFF, BIG_LEN);
	long before, faulted, bad;
	bool moved;

	drop_all();
	vt_fill(region + LOCAL_OFF, BIG_LEN, seed);
	before = target_counter(VT_ODP_PAGES_FAULTED);
	moved = rdma(IBV_WR_RDMA_WRITE, k, LOCAL_OFF, REMOTE_OFF, BIG_LEN);
	faulted = target_counter(VT_ODP_PAGES_FAULTED) - before;
	bad = ask(CMD_CHECK, 0, REMOTE_OFF, BIG_LEN, seed, k);
	tap_ok(moved && bad == -1, "%s: RDMA WRITE of %lu bytes into untouched memory of the "
	       "target, every byte there checked%s", kind_name[k], BIG_LEN,
	       moved && bad >= 0 ? " (a wrong byte)" : "");
	if (bad >= 0)
		tap_diag("first wrong byte at offset %ld of the %lu written", bad, BIG_LEN);
	tap_ok(moved && faulted == (long)span, "%s: the target faulted the %zu pages the "
	       "WRITE spans (pages_faulted +%ld)", kind_name[k], span, faulted);
}

static void check_read(enum kind k, unsigned int seed)
{
	size_t span = span_pages(LOCAL_OFF, BIG_LEN);
	long before[VT_ODP_NCOUNTERS], after[VT_ODP_NCOUNTERS], bad = 0;
	bool moved, counted;

	drop_all();
	if (ask(CMD_FILL, 0, REMOTE_OFF, BIG_LEN, seed, k))
		tap_diag("the target could not fill its memory");
	counted = vt_odp_snapshot(ctx, opt.port, before);
	moved = rdma(IBV_WR_RDMA_READ, k, LOCAL_OFF, REMOTE_OFF, BIG_LEN);
	vt_hw_counters_settle();
	counted = counted && vt_odp_snapshot(ctx, opt.port, after);
	if (moved)
		bad = vt_check(region + LOCAL_OFF, BIG_LEN, seed);
	tap_ok(moved && bad == -1, "%s: RDMA READ of %lu bytes into untouched memory here, "
	       "every byte checked", kind_name[k], BIG_LEN);
	if (bad >= 0)
		tap_diag("first wrong byte at offset %ld of the %lu read", bad, BIG_LEN);
	tap_ok(moved && counted && after[VT_ODP_PAGES_FAULTED] - before[VT_ODP_PAGES_FAULTED] ==
	       (long)span, "%s: the initiator faulted the %zu pages the READ lands in "
	       "(pages_faulted +%ld)", kind_name[k], span,
	       counted ? after[VT_ODP_PAGES_FAULTED] - before[VT_ODP_PAGES_FAULTED] : -1);
}

static void check_send(enum kind k, unsigned int seed)
{
	struct ibv_sge sge = { (uintptr_t)region + LOCAL_OFF, BIG_LEN, mr[k]->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND };
	int64_t got, bad = 0;
	bool sent;

	drop_all();
	vt_fill(region + LOCAL_OFF, BIG_LEN, seed);
	if (ask(CMD_POST_RECV, 0, REMOTE_OFF, BIG_LEN, 0, k))
		tap_diag("the target could not post its receive");
	sent = post_wait(rc_qp, &wr, "SEND");
	got = ask(CMD_WAIT_RECV, 0, 0, 0, 0, k);
	if (got == (int64_t)BIG_LEN)
		bad = ask(CMD_CHECK, 0, REMOTE_OFF, BIG_LEN, seed, k);
	tap_ok(sent && got == (int64_t)BIG_LEN && bad == -1, "%s: RC SEND of %lu bytes into a "
	       "receive in untouched memory of the target (received %lld), every byte "
	       "checked", kind_name[k], BIG_LEN, (long long)got);
	if (bad >= 0)
		tap_diag("first wrong byte at offset %lld of the %lu sent", (long long)bad,
			 BIG_LEN);
}

static void check_atomics(enum kind k)
{
	const uint64_t roff = 3 * page_size + 8, add = 0x0123456789abcdefULL,
		       swap = 0xfedcba9876543210ULL;
	uint64_t *result = (uint64_t *)(region + 2 * page_size);
	uint64_t first = ~0ULL, second = ~0ULL;
	int64_t word;
	bool done;

	drop_all();
	done = atomic_op(IBV_WR_ATOMIC_FETCH_AND_ADD, k, 2 * page_size, roff, add, 0);
	first = *result;
	done = done && atomic_op(IBV_WR_ATOMIC_CMP_AND_SWP, k, 2 * page_size, roff, add, swap);
	second = *result;
	word = ask(CMD_WORD, 0, roff, 8, 0, k);
	tap_ok(done && first == 0 && second == add && (uint64_t)word == swap,
	       "%s: FETCH_ADD then CMP_SWP on an untouched word of the target (returned %#llx, "
	       "%#llx; the word holds %#llx)", kind_name[k], (unsigned long long)first,
	       (unsigned long long)second, (unsigned long long)word);
}

static void check_ud(enum kind k, unsigned int seed)
{
	struct ibv_port_attr pa;
	uint32_t len;
	struct ibv_sge sge = { (uintptr_t)region + LOCAL_OFF, 0, mr[k]->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.wr.ud = { .ah = ah, .remote_qpn = them.ud_qpn, .remote_qkey = UD_QKEY },
	};
	int64_t got, bad = 0;
	bool sent;

	if (ibv_query_port(ctx, opt.port, &pa)) {
		tap_ok(false, "%s: UD SEND: ibv_query_port: %s", kind_name[k], strerror(errno));
		return;
	}
	len = (128u << pa.active_mtu) - 3;	/* the path MTU, less 3: an odd length */
	sge.length = len;
	drop_all();
	vt_fill(region + LOCAL_OFF, len, seed);
	if (ask(CMD_POST_RECV, 1, REMOTE_OFF, UD_GRH + len, 0, k))
		tap_diag("the target could not post its UD receive");
	sent = post_wait(ud_qp, &wr, "UD SEND");
	got = ask(CMD_WAIT_RECV, 0, 0, 0, 0, k);
	if (got == UD_GRH + len)
		bad = ask(CMD_CHECK, 0, REMOTE_OFF + UD_GRH, len, seed, k);
	tap_ok(sent && got == UD_GRH + len && bad == -1, "%s: UD SEND of %u bytes into a "
	       "receive in untouched memory of the target (received %lld with the GRH), every "
	       "byte checked", kind_name[k], len, (long long)got);
}

/*
 * The target invalidates its whole region in a loop, way @way, while this node moves
 * --stream chunks of its start into it (RDMA WRITE), or out of it (RDMA READ, for
 * mprotect: its pages must stay readable). Every transfer must succeed; afterwards
 * those chunks are written (or read) once more and every byte checked; the target's
 * invalidations counter must have moved.
 */
static void check_invalidation(enum kind k, enum inval way, unsigned int seed)
{
	bool reading = way == INVAL_MPROTECT, moved = true;
	long before, invalidated, rounds, bad = -1;
	enum ibv_wr_opcode op = reading ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
	unsigned int i, done = 0;
	size_t span = (size_t)stream_ops * CHUNK;

	drop_all();
	if (reading)
		ask(CMD_FILL, CHUNK, 0, REGION, seed, k);
	else
		fill_chunks(region, REGION, CHUNK, seed);
	before = target_counter(VT_ODP_INVALIDATIONS);
	if (ask(CMD_INVAL_START, way, 0, 0, 0, k)) {
		tap_ok(false, "%s: the target could not start invalidating with %s",
		       kind_name[k], inval_name[way]);
		return;
	}
	for (i = 0; i < stream_ops && moved; i++) {
		size_t off = (size_t)i * CHUNK;

		moved = rdma(op, k, off, off, CHUNK);
		if (moved && reading) {
			long b = vt_check(region + off, CHUNK, seed + off / CHUNK);

			if (b >= 0 && bad < 0)
				bad = (long)off + b;
		}
		done += moved;
	}
	rounds = ask(CMD_INVAL_STOP, 0, 0, 0, 0, k);
	invalidated = target_counter(VT_ODP_INVALIDATIONS) - before;
	/* Once more without invalidations, and every byte of the region checked. */
	for (i = 0; i < stream_ops && moved; i++)
		moved = rdma(op, k, (size_t)i * CHUNK, (size_t)i * CHUNK, CHUNK);
	if (moved && bad < 0)
		bad = reading ? check_chunks(region, span, CHUNK, seed) :
			ask(CMD_CHECK, CHUNK, 0, span, seed, k);
	tap_ok(moved && done == stream_ops && rounds > 0 && invalidated > 0 && bad == -1,
	       "%s: %u of %u RDMA %ss of %lu KiB succeeded while the target invalidated its "
	       "memory with %s (%ld rounds, invalidations +%ld); then every byte checked",
	       kind_name[k], done, (unsigned int)stream_ops, reading ? "READ" : "WRITE",
	       CHUNK >> 10,
	       inval_name[way], rounds, invalidated);
	if (bad >= 0)
		tap_diag("first wrong byte at offset %ld of the region", bad);
}

#define CHECKS_PER_KIND (7 + NINVALS)
#define WINDOW_CHECKS	2

/*
 * A window the target binds over [WIN_OFF, WIN_OFF + WIN_LEN) of its explicit MR: a
 * WRITE through it lands, a WRITE that crosses its end fails with a remote access
 * error and changes nothing. Last: the error ends the RC connection.
 */
#define WIN_OFF		(16UL << 10)
#define WIN_LEN		(8UL << 10)
#define WIN_SPAN	(64UL << 10)	/* what the target checks around the window */
static void check_window(unsigned int seed)
{
	struct ibv_sge sge = { (uintptr_t)region, WIN_LEN, mr[EXPLICIT]->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_wc wc = { .status = IBV_WC_SUCCESS };
	int64_t rkey;
	bool ok, refused = false;

	/* Before, in and after the window: patterns seed, seed + 3 and seed + 4. */
	drop_all();
	ask(CMD_FILL, 0, 0, WIN_OFF, seed, 0);
	ask(CMD_FILL, 0, WIN_OFF, WIN_LEN, seed + 3, 0);
	ask(CMD_FILL, 0, WIN_OFF + WIN_LEN, WIN_SPAN - WIN_OFF - WIN_LEN, seed + 4, 0);
	vt_fill(region, WIN_LEN, seed + 1);
	rkey = ask(CMD_BIND_WINDOW, 0, WIN_OFF, WIN_LEN, 0, 0);
	if (rkey < 0)
		tap_diag("the target could not bind its window: %lld", (long long)rkey);
	wr.wr.rdma.remote_addr = them.addr + WIN_OFF;
	wr.wr.rdma.rkey = (uint32_t)rkey;
	ok = rkey >= 0 && post_wait(rc_qp, &wr, "RDMA WRITE through the window") &&
	     ask(CMD_CHECK, 0, WIN_OFF, WIN_LEN, seed + 1, 0) < 0 &&
	     ask(CMD_CHECK, 0, 0, WIN_OFF, seed, 0) < 0 &&
	     ask(CMD_CHECK, 0, WIN_OFF + WIN_LEN, WIN_SPAN - WIN_OFF - WIN_LEN, seed + 4, 0) < 0;
	tap_ok(ok, "the target's window over 8 KiB of its ODP MR: a WRITE of all of it "
	       "through the window lands, nothing around it changes");

	/* 4 KiB from the middle of the window: 2 KiB of it past the end. */
	vt_fill(region, WIN_LEN, seed + 2);
	sge.length = 4096;
	wr.wr.rdma.remote_addr = them.addr + WIN_OFF + WIN_LEN - 2048;
	if (ok && !ibv_post_send(rc_qp, &wr, &bad) && !vt_poll_one(send_cq, &wc, VT_WAIT_MS))
		refused = wc.status == IBV_WC_REM_ACCESS_ERR;
	if (ok && !refused)
		tap_diag("WRITE across the window's end: %s", ibv_wc_status_str(wc.status));
	ok = ok && refused &&
	     ask(CMD_CHECK, 0, WIN_OFF, WIN_LEN, seed + 1, 0) < 0 &&
	     ask(CMD_CHECK, 0, WIN_OFF + WIN_LEN, WIN_SPAN - WIN_OFF - WIN_LEN, seed + 4, 0) < 0;
	tap_ok(ok, "a WRITE through the window that crosses its end fails with a remote "
	       "access error, and no byte of the target changes");
}

static int initiator(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	char service[16];
	unsigned int seed = 1;
	int k, way, rc, i;
	const char *why;

	snprintf(service, sizeof(service), "%ld", tcp_port);
	rc = getaddrinfo(peer, service, &hints, &ai);
	if (rc)
		tap_bail("cannot resolve %s: %s", peer, gai_strerror(rc));
	sock = socket(ai->ai_family, ai->ai_socktype, 0);
	if (sock < 0 || connect(sock, ai->ai_addr, ai->ai_addrlen))
		tap_bail("cannot connect to %s port %ld: %s", peer, tcp_port, strerror(errno));
	freeaddrinfo(ai);
	if (!set_timeout(sock))
		tap_bail("cannot set a timeout on the control connection");
	if (!xfer(false, &them, sizeof(them)) || !xfer(true, &me, sizeof(me)))
		tap_bail("the control connection broke at the start");
	if (!me.ok || !them.ok) {
		for (i = 0; i < NKINDS * CHECKS_PER_KIND + WINDOW_CHECKS; i++)
			tap_skip(me.ok ? them.why : me.why, "check %d", i + 1);
		return tap_done();
	}
	why = connect_qps();
	if (why)
		tap_bail("%s", why);
	for (k = 0; k < NKINDS; k++) {
		check_write(k, seed++);
		check_read(k, seed++);
		check_send(k, seed++);
		check_atomics(k);
		check_ud(k, seed++);
		for (way = 0; way < NINVALS; way++, seed += REGION / CHUNK)
			check_invalidation(k, way, seed);
	}
	check_window(seed);
	ask(CMD_BYE, 0, 0, 0, 0, 0);
	return tap_done();
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	const char *why;
	int rc;

	page_size = sysconf(_SC_PAGESIZE);
	vt_extra_options(extra);
	vt_parse_options(argc, argv, &opt);
	if (stream_ops < 1) {
		fprintf(stderr, "odp_remote: --stream takes 1 to %lu\n", REGION / CHUNK);
		return 2;
	}
	if (peer)
		tap_plan(NKINDS * CHECKS_PER_KIND + WINDOW_CHECKS);
	ctx = vt_open_device(opt.dev);
	if (!ctx) {
		if (peer)
			tap_bail("no RDMA device");
		return 1;
	}
	why = ibv_query_device_ex(ctx, NULL, &attr) ? "cannot query the device" : setup(&attr);
	me.ok = !why;
	snprintf(me.why, sizeof(me.why), "%s", why ? why : "");
	rc = peer ? initiator() : target();
	teardown();
	return rc;
}
