// SPDX-License-Identifier: GPL-2.0
/*
 * ODP faults that fail, injected with the kernel's function error injection
 * (/sys/kernel/debug/fail_function, CONFIG_FAIL_FUNCTION: the distro-mm and debug profiles).
 *
 * A fault that does not settle: hmm_range_fault() returns -EBUSY on every call, as when
 * KSM or reclaim keep changing the MR's pages, until rxe has given the fault up at least
 * once (its odp_fault_retries counter moved); then the injection stops. The operation
 * must complete, with every byte right, and no fault may count as an error: rxe tries it
 * again later (an RNR NAK from the responder, the packet built again by the requester,
 * the response taken again by the completer). Each place an ODP MR is faulted: RDMA
 * WRITE into it and READ from it (responder), SEND into a receive in it (responder) and
 * from it (requester), RDMA READ into it (completer), an atomic on it (responder).
 *
 * A fault that fails for good: hmm_range_fault() returns -EFAULT, or linking the pages
 * (hmm_dma_map_pfns()) -EIO. The operation completes with its own error (a remote access
 * error, or for the requester's fault a local protection error: rxe once reported it as
 * flushed, like the requests after it), the fault is counted as one, and a new QP pair
 * on the same device then moves data as before.
 *
 * Without an IOVA: an ODP MR registered while dma_iova_try_alloc() fails (as when the
 * device's IOVA space is used up) maps its pages one by one, and each operation above
 * must move the right bytes through it (rxe once took their IOVAs for physical
 * addresses).
 *
 * A READ parked by a fault that does not settle, its responder QP then moved to the
 * error state: deregistering the ODP MR must return. rxe once kept the READ's MR
 * reference for a retry that never came, and ibv_dereg_mr() waited for it forever,
 * uninterruptibly.
 *
 * A SEND into a receive of a shared receive queue in the ODP MR, sent back with an
 * RNR NAK by a fault that does not settle: the retried SEND lands in the same
 * receive, and the next receive stays for the next SEND. rxe once took another SRQ
 * entry for each retry, and the first never completed.
 *
 * The injection reaches the whole guest (lib/inject.h). About 10 s.
 *
 * vmtest-class: mm
 */
#include "lib/inject.h"
#include "lib/odp.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUF_SIZE	(1UL << 20)
/* How long the injection may take to reach a fault: long, the machine may be busy. */
#define REACH_MS	30000
/*
 * While the injection lasts, a fault gives up (and is counted) within a second
 * (HMM_RANGE_DEFAULT_TIMEOUT): none counted for this long means none is in flight.
 */
#define QUIET_MS	5000

static struct vt_options opt;
static struct ibv_context *ctx;

/* Wait until counter @name passes @before; false when it did not within @ms. */
static bool counter_moves_within(const char *name, long before, int ms)
{
	long long deadline = vt_now_ms() + ms;

	do {
		if (vt_hw_counter(ctx, opt.port, name) > before)
			return true;
		usleep(1000);
	} while (vt_now_ms() < deadline);
	return false;
}

/* counter_moves_within() REACH_MS, saying so when the counter did not move. */
static bool counter_moves(const char *name, long before)
{
	if (counter_moves_within(name, before, REACH_MS))
		return true;
	tap_diag("%s did not move from %ld in %d ms: the injection never reached a fault",
		 name, before, REACH_MS);
	return false;
}

enum op { WRITE_INTO, READ_FROM, SEND_INTO, SEND_FROM, READ_INTO, ATOMIC_ON, NR_OPS };

static const char *const op_names[NR_OPS] = {
	[WRITE_INTO] = "RDMA WRITE into the ODP MR (responder)",
	[READ_FROM] = "RDMA READ from the ODP MR (responder)",
	[SEND_INTO] = "SEND into a receive in the ODP MR (responder)",
	[SEND_FROM] = "SEND from the ODP MR (requester)",
	[READ_INTO] = "RDMA READ into the ODP MR (completer)",
	[ATOMIC_ON] = "fetch-and-add on the ODP MR (responder)",
};

/* One test's buffers: a pinned one and an untouched ODP one, and a QP pair. */
struct odp_pair {
	struct vt_loopback lb;
	struct vt_odp_buf pinned, odp;
};

static bool odp_pair_open(struct odp_pair *s)
{
	memset(s, 0, sizeof(*s));
	if (vt_loopback_create(&s->lb, ctx, &opt)) {
		tap_diag("no connected QP pair");
		return false;
	}
	if (!vt_odp_buf_init(&s->pinned, s->lb.pd, BUF_SIZE, 0, VT_PINNED_ACCESS)) {
		vt_loopback_destroy(&s->lb);
		return false;
	}
	if (!vt_odp_buf_init(&s->odp, s->lb.pd, BUF_SIZE, 0, VT_ODP_ACCESS)) {
		vt_odp_buf_fini(&s->pinned);
		vt_loopback_destroy(&s->lb);
		return false;
	}
	return true;
}

static void odp_pair_close(struct odp_pair *s)
{
	vt_odp_buf_fini(&s->odp);
	vt_odp_buf_fini(&s->pinned);
	vt_loopback_destroy(&s->lb);
}

/*
 * Where @op's data comes from and goes to: one of them is the ODP MR. The atomic's
 * operand is in the ODP MR, its original value comes back into the pinned buffer.
 */
static bool from_odp(enum op op)
{
	return op == READ_FROM || op == SEND_FROM || op == ATOMIC_ON;
}

static struct vt_odp_buf *source(struct odp_pair *s, enum op op)
{
	return from_odp(op) ? &s->odp : &s->pinned;
}

static struct vt_odp_buf *destination(struct odp_pair *s, enum op op)
{
	return from_odp(op) ? &s->pinned : &s->odp;
}

/*
 * Post @op on qp[0] (with its receive on qp[1] for a SEND), the source filled with
 * pattern @seed. The ODP MR is new: whatever the CPU wrote to it, the device faults it.
 * For the atomic, the ODP MR's first 8 bytes hold the pattern, and the original value
 * comes back into the pinned buffer.
 */
static bool post(struct odp_pair *s, enum op op, unsigned int seed)
{
	struct vt_odp_buf *src = source(s, op), *dst = destination(s, op);
	bool read = op == READ_FROM || op == READ_INTO;
	struct ibv_sge sge = { .addr = (uintptr_t)src->p, .length = BUF_SIZE,
			       .lkey = src->mr->lkey };
	struct ibv_sge rsge = { .addr = (uintptr_t)dst->p, .length = BUF_SIZE,
				.lkey = dst->mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = &rsge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	int ret;

	vt_fill(src->p, op == ATOMIC_ON ? 8 : BUF_SIZE, seed);
	switch (op) {
	case WRITE_INTO:
	case READ_FROM:
	case READ_INTO:
		/* A WRITE goes from the local source, a READ into the local destination. */
		wr.opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
		if (read)
			sge = rsge;
		wr.wr.rdma.remote_addr = (uintptr_t)(read ? src : dst)->p;
		wr.wr.rdma.rkey = (read ? src : dst)->mr->rkey;
		break;
	case SEND_INTO:
	case SEND_FROM:
		wr.opcode = IBV_WR_SEND;
		ret = ibv_post_recv(s->lb.qp[1], &rwr, &rbad);
		if (ret) {
			tap_diag("ibv_post_recv: %s", strerror(ret));
			return false;
		}
		break;
	case ATOMIC_ON:
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		sge = (struct ibv_sge){ .addr = (uintptr_t)s->pinned.p, .length = 8,
					.lkey = s->pinned.mr->lkey };
		wr.wr.atomic.remote_addr = (uintptr_t)s->odp.p;
		wr.wr.atomic.rkey = s->odp.mr->rkey;
		wr.wr.atomic.compare_add = 1;
		break;
	case NR_OPS:
		break;
	}
	ret = ibv_post_send(s->lb.qp[0], &wr, &bad);
	if (ret)
		tap_diag("ibv_post_send: %s", strerror(ret));
	return !ret;
}

/*
 * Wait for @op's completions: 0 when all succeeded, 1 when one completed with an error
 * (*status, said), -1 when one did not come.
 */
static int complete(struct odp_pair *s, enum op op, enum ibv_wc_status *status)
{
	struct ibv_wc wc;

	if (vt_poll_one(s->lb.send_cq, &wc, VT_WAIT_MS)) {
		tap_diag("%s: no completion within %d ms", op_names[op], VT_WAIT_MS);
		return -1;
	}
	*status = wc.status;
	if (wc.status != IBV_WC_SUCCESS) {
		tap_diag("%s: %s", op_names[op], ibv_wc_status_str(wc.status));
		return 1;
	}
	if (op == SEND_INTO || op == SEND_FROM) {
		if (vt_poll_one(s->lb.recv_cq, &wc, VT_WAIT_MS)) {
			tap_diag("%s: the receive did not complete", op_names[op]);
			return -1;
		}
		*status = wc.status;
		if (wc.status != IBV_WC_SUCCESS) {
			tap_diag("%s: the receive: %s", op_names[op], ibv_wc_status_str(wc.status));
			return 1;
		}
	}
	return 0;
}

/* Whether the destination holds the pattern; for the atomic, the value and the original. */
static bool right_bytes(struct odp_pair *s, enum op op, unsigned int seed)
{
	uint64_t orig, now, back;
	long bad;

	if (op == ATOMIC_ON) {
		vt_fill(&orig, 8, seed);
		memcpy(&now, s->odp.p, 8);
		memcpy(&back, s->pinned.p, 8);
		if (back != orig || now != orig + 1) {
			tap_diag("the atomic: original %#llx returned, %#llx now; expected %#llx "
				 "and %#llx", (unsigned long long)back, (unsigned long long)now,
				 (unsigned long long)orig, (unsigned long long)(orig + 1));
			return false;
		}
		return true;
	}
	bad = vt_check(destination(s, op)->p, BUF_SIZE, seed);
	if (bad >= 0)
		tap_diag("%s: byte %ld differs", op_names[op], bad);
	return bad < 0;
}

/* A fault that does not settle until rxe gave it up once: the operation must complete. */
static void unsettled(enum op op)
{
	long retries, errors, d_retries, d_errors;
	enum ibv_wc_status status;
	unsigned int seed = 0x4400 + op;
	struct odp_pair s;
	bool ok;

	if (!odp_pair_open(&s)) {
		tap_ok(false, "-EBUSY: %s: cannot set up", op_names[op]);
		return;
	}
	vt_hw_counters_settle();
	retries = vt_hw_counter(ctx, opt.port, "odp_fault_retries");
	errors = vt_hw_counter(ctx, opt.port, "odp_fault_errors");
	ok = retries >= 0 && errors >= 0;
	if (!ok)
		tap_diag("cannot read odp_fault_retries and odp_fault_errors (a kernel without "
			 "them fails a fault that does not settle)");
	ok = ok && vt_inject_start("hmm_range_fault", EBUSY, 100);
	ok = ok && post(&s, op, seed);
	ok = ok && counter_moves("odp_fault_retries", retries);
	ok = vt_inject_stop() && ok;
	ok = ok && complete(&s, op, &status) == 0 && right_bytes(&s, op, seed);
	vt_hw_counters_settle();
	d_retries = vt_hw_counter(ctx, opt.port, "odp_fault_retries") - retries;
	d_errors = vt_hw_counter(ctx, opt.port, "odp_fault_errors") - errors;
	tap_ok(ok && d_retries > 0 && d_errors == 0,
	       "-EBUSY from hmm_range_fault(): %s completes with the right bytes after %ld "
	       "retried faults, %ld fault errors", op_names[op], d_retries, d_errors);
	odp_pair_close(&s);
}

/*
 * A READ parked, its responder QP moved to the error state, the MR deregistered: true
 * when that returned 0. Run in a child of its own (a kernel that keeps the READ's MR
 * waits in ibv_dereg_mr() for ever, uninterruptibly).
 */
static bool parked_read_child(void)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct odp_pair s;
	long retries;
	bool ok;
	int ret;

	if (!odp_pair_open(&s))
		return false;
	vt_hw_counters_settle();
	retries = vt_hw_counter(ctx, opt.port, "odp_fault_retries");
	ok = retries >= 0 && vt_inject_start("hmm_range_fault", EBUSY, 100);
	ok = ok && post(&s, READ_FROM, 0x4700);
	ok = ok && counter_moves("odp_fault_retries", retries);
	/* qp[1] answers qp[0]'s READ. */
	ret = ok ? ibv_modify_qp(s.lb.qp[1], &attr, IBV_QP_STATE) : 0;
	if (ret)
		tap_diag("ibv_modify_qp(ERR): %s", strerror(ret));
	/*
	 * A fault in flight would succeed once the injection stops, and the READ with
	 * it: keep failing until one more gave up, so that the next try finds the QP in
	 * the error state, or until none has for QUIET_MS: then none was in flight (on
	 * one CPU the fault the test saw counted was the last, given up before the QP
	 * went to the error state, and the next try found it there).
	 */
	if (ok && !ret) {
		vt_hw_counters_settle();
		retries = vt_hw_counter(ctx, opt.port, "odp_fault_retries");
		ok = retries >= 0;
		if (ok && !counter_moves_within("odp_fault_retries", retries, QUIET_MS))
			tap_diag("no fault gave up in %d ms after the QP's error state: none in flight",
				 QUIET_MS);
	}
	ok = vt_inject_stop() && ok && !ret;
	if (ok) {
		ret = ibv_dereg_mr(s.odp.mr);
		if (ret)
			tap_diag("ibv_dereg_mr: %s", strerror(ret));
		else
			s.odp.mr = NULL;
		ok = !ret;
	}
	odp_pair_close(&s);
	return ok;
}

static void parked_read_qp_error(void)
{
	long long deadline;
	int status = 0;
	pid_t pid, r = 0;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		/* Its own context: a forked child does not use its parent's. */
		ctx = vt_open_device(opt.dev);
		_exit(ctx && parked_read_child() ? 0 : 1);
	}
	deadline = vt_now_ms() + 3LL * VT_WAIT_MS;
	while (pid > 0 && (r = waitpid(pid, &status, WNOHANG)) == 0 && vt_now_ms() < deadline)
		usleep(10000);
	if (pid > 0 && r == 0)
		tap_diag("the child has not returned in %lld s: ibv_dereg_mr() waits for the "
			 "parked READ's MR", 3LL * VT_WAIT_MS / 1000);
	tap_ok(pid > 0 && r == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "a READ parked by an unsettled fault, its responder QP then in error: the ODP MR deregisters");
}

/* An RC QP on s->lb's PD and CQs, receiving from @srq (or its own queue). */
static struct ibv_qp *srq_qp(struct odp_pair *s, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = s->lb.send_cq, .recv_cq = s->lb.recv_cq, .srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = srq ? 0 : 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(s->lb.pd, &init);

	if (!qp)
		tap_diag("ibv_create_qp(%s): %s", srq ? "with an SRQ" : "RC", strerror(errno));
	return qp;
}

static bool srq_connect(struct odp_pair *s, struct ibv_qp *qp, struct ibv_qp *peer)
{
	struct vt_rc_path path = {
		.port = opt.port, .gid_index = opt.gid_index, .dgid = s->lb.gid,
		.remote_qpn = peer->qp_num, .access = IBV_ACCESS_LOCAL_WRITE,
		.hop_limit = 1, .rd_atomic = 1, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
	};

	return vt_connect_rc(qp, &path) == 0;
}

/* A SEND of 4 KiB from the pinned buffer on @qp into the SRQ; its completion's status. */
static bool srq_send(struct odp_pair *s, struct ibv_qp *qp, unsigned int seed)
{
	struct ibv_sge sge = { (uintptr_t)s->pinned.p, 4096, s->pinned.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	int ret;

	vt_fill(s->pinned.p, 4096, seed);
	ret = ibv_post_send(qp, &wr, &bad);
	if (ret)
		tap_diag("ibv_post_send(SEND): %s", strerror(ret));
	return !ret;
}

/* The receive that completes next: its wr_id, its bytes right for @seed at @at. */
static bool srq_received(struct odp_pair *s, uint64_t want_id, size_t at, unsigned int seed)
{
	struct ibv_wc wc;
	long bad;

	if (vt_poll_one(s->lb.send_cq, &wc, VT_WAIT_MS) || wc.status != IBV_WC_SUCCESS) {
		tap_diag("the SEND did not complete successfully");
		return false;
	}
	if (vt_poll_one(s->lb.recv_cq, &wc, VT_WAIT_MS)) {
		tap_diag("no receive completed");
		return false;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != want_id) {
		tap_diag("receive wr_id %llu completed (%s), expected %llu",
			 (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
			 (unsigned long long)want_id);
		return false;
	}
	bad = vt_check(s->odp.p + at, 4096, seed);
	if (bad >= 0)
		tap_diag("receive %llu: byte %ld differs", (unsigned long long)want_id, bad);
	return bad < 0;
}

/* A SEND into an SRQ receive in the ODP MR, sent back by an unsettled fault. */
static void srq_unsettled(void)
{
	struct ibv_srq_init_attr sattr = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_qp *qa = NULL, *qb = NULL;
	struct ibv_srq *srq = NULL;
	struct odp_pair s;
	long retries;
	bool ok;
	int i, ret;

	if (!odp_pair_open(&s)) {
		tap_ok(false, "SRQ receive, unsettled fault: cannot set up");
		return;
	}
	srq = ibv_create_srq(s.lb.pd, &sattr);
	if (!srq)
		tap_diag("ibv_create_srq: %s", strerror(errno));
	ok = srq && (qa = srq_qp(&s, NULL)) && (qb = srq_qp(&s, srq)) &&
	     srq_connect(&s, qa, qb) && srq_connect(&s, qb, qa);
	/* Two receives, at the ODP MR's start and in its second half. */
	for (i = 0; ok && i < 2; i++) {
		struct ibv_sge sge = { (uintptr_t)s.odp.p + i * (BUF_SIZE / 2), 4096,
				       s.odp.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 100 + i, .sg_list = &sge, .num_sge = 1 }, *bad;

		ret = ibv_post_srq_recv(srq, &wr, &bad);
		if (ret)
			tap_diag("ibv_post_srq_recv: %s", strerror(ret));
		ok = !ret;
	}
	vt_hw_counters_settle();
	retries = vt_hw_counter(ctx, opt.port, "odp_fault_retries");
	ok = ok && retries >= 0 && vt_inject_start("hmm_range_fault", EBUSY, 100);
	ok = ok && srq_send(&s, qa, 0x4800);
	ok = ok && counter_moves("odp_fault_retries", retries);
	ok = vt_inject_stop() && ok;
	ok = ok && srq_received(&s, 100, 0, 0x4800);
	tap_ok(ok, "a SEND into an SRQ receive in the ODP MR, sent back by an unsettled fault, lands in that receive");
	ok = ok && srq_send(&s, qa, 0x4801) && srq_received(&s, 101, BUF_SIZE / 2, 0x4801);
	tap_ok(ok, "the next SEND lands in the next SRQ receive");
	if (qa)
		ibv_destroy_qp(qa);
	if (qb)
		ibv_destroy_qp(qb);
	if (srq)
		ibv_destroy_srq(srq);
	odp_pair_close(&s);
}

/*
 * A fault that fails for good (@err from @func): the operation completes with error
 * @want (the request's own, not the flush of the work requests after it), counted as a
 * fault error; a new QP pair then moves data.
 */
static void fails(const char *func, int err, enum op op, enum ibv_wc_status want)
{
	enum ibv_wc_status status = IBV_WC_SUCCESS;
	unsigned int seed = 0x4500 + op;
	long errors, d_errors = 0;
	bool ok, failed = false;
	struct odp_pair s;

	if (!odp_pair_open(&s)) {
		tap_ok(false, "%s from %s(): cannot set up", strerror(err), func);
		return;
	}
	vt_hw_counters_settle();
	errors = vt_hw_counter(ctx, opt.port, "odp_fault_errors");
	ok = errors >= 0 && vt_inject_start(func, err, 100) && post(&s, op, seed);
	if (ok) {
		failed = complete(&s, op, &status) == 1 && status == want;
		vt_hw_counters_settle();
		d_errors = vt_hw_counter(ctx, opt.port, "odp_fault_errors") - errors;
	}
	ok = vt_inject_stop() && ok;
	odp_pair_close(&s);
	/* The device keeps working: a new pair, no injection. */
	if (ok && failed && odp_pair_open(&s)) {
		ok = post(&s, op, seed + 1) && complete(&s, op, &status) == 0 &&
		     right_bytes(&s, op, seed + 1);
		odp_pair_close(&s);
	} else {
		ok = false;
	}
	tap_ok(ok && failed && d_errors > 0,
	       "%s from %s(): %s completes with %s, %ld fault errors; a new QP pair then moves "
	       "the right bytes", strerror(err), func, op_names[op], ibv_wc_status_str(want),
	       d_errors);
}

/*
 * An ODP MR registered while dma_iova_try_alloc() fails (as when the device's IOVA
 * space is used up): its pages are then mapped one by one, and every operation on it
 * must still move the right bytes. rxe once took the IOVA of such a page for its
 * physical address.
 */
static void no_iova(void)
{
	unsigned int right = 0, seed;
	enum ibv_wc_status status;
	struct odp_pair s;
	long injected = -1;
	bool ok, opened;
	enum op op;

	opened = vt_inject_start("dma_iova_try_alloc", 0, 100) && odp_pair_open(&s);
	if (opened)
		injected = vt_inject_count();
	ok = vt_inject_stop() && opened;
	for (op = 0; ok && op < NR_OPS; op++) {
		seed = 0x4600 + op;
		if (post(&s, op, seed) && complete(&s, op, &status) == 0 &&
		    right_bytes(&s, op, seed))
			right++;
		else
			break;
	}
	if (opened)
		odp_pair_close(&s);
	tap_ok(ok && injected > 0 && right == NR_OPS,
	       "ODP MR without an IOVA (dma_iova_try_alloc() failed %ld times at its "
	       "registration): %u of %d operations on it move the right bytes", injected,
	       right, NR_OPS);
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	const int tests = NR_OPS + 7;
	enum op op;

	ctx = vt_odp_start(argc, argv, &opt, tests, VT_NEED_ODP | VT_NEED_COUNTERS,
			   "ODP fault injection", &attr);
	if (!vt_inject_available()) {
		for (int i = 0; i < tests; i++)
			tap_skip(VT_NO_FAIL_FUNCTION, "ODP fault injection check %d", i + 1);
		ibv_close_device(ctx);
		return tap_done();
	}
	/* Nothing left over from a run that died. */
	vt_inject_stop();

	for (op = 0; op < NR_OPS; op++)
		unsettled(op);
	parked_read_qp_error();
	srq_unsettled();
	fails("hmm_range_fault", EFAULT, WRITE_INTO, IBV_WC_REM_ACCESS_ERR);
	fails("hmm_range_fault", EFAULT, SEND_FROM, IBV_WC_LOC_PROT_ERR);
	if (vt_odp_dma(ctx, &opt) == VT_DMA_VIRTUAL)
		tap_skip("virtual DMA links no pages", "-EIO from hmm_dma_map_pfns()");
	else
		fails("hmm_dma_map_pfns", EIO, READ_FROM, IBV_WC_REM_ACCESS_ERR);
	if (vt_odp_dma(ctx, &opt) != VT_DMA_IOVA)
		tap_skip("the device has no IOMMU DMA domain: no IOVA to go without",
			 "ODP MR without an IOVA");
	else
		no_iova();

	ibv_close_device(ctx);
	return tap_done();
}
