// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA ATOMIC WRITE and RDMA FLUSH on ODP MRs, and their ODP capability bits.
 * ATOMIC WRITE goes through the provider's ibv_wr_atomic_write(); FLUSH, which
 * Debian's provider lacks, through rxe's send queue directly (lib/rxe_raw.c). The
 * counters show that an ATOMIC WRITE faults an untouched page once, and that a
 * persistent FLUSH faults nothing: it takes and writes back the pages that are
 * present, whatever the size of the MR (a whole 64 GiB MR, a whole implicit MR).
 */
#include "lib/odp.h"
#include "lib/rxe_raw.h"
#include "lib/tap.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define ODP_SUPPORT_FLUSH		(1 << 6)
#define ODP_SUPPORT_ATOMIC_WRITE	(1 << 7)
#define NPAGES				16
#define SPARSE_SIZE			(64ULL << 30)
#define ATOMIC_WRITE_CHECKS		3
#define FLUSH_CHECKS			6

static struct vt_options opt;
static struct ibv_context *ctx;
static size_t page_size, buf_size;

static bool atomic_write(struct vt_loopback *lb, void *addr, uint32_t rkey, uint64_t value)
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(lb->qp[0]);
	struct ibv_wc wc;
	int ret;

	ibv_wr_start(qpx);
	qpx->wr_id = 7;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qpx, rkey, (uintptr_t)addr, &value);
	ret = ibv_wr_complete(qpx);
	if (ret) {
		tap_diag("ibv_wr_complete(ATOMIC WRITE): %s", strerror(ret));
		return false;
	}
	if (vt_poll_one(lb->send_cq, &wc, VT_WAIT_MS))
		return false;
	if (wc.status != IBV_WC_SUCCESS) {
		tap_diag("ATOMIC WRITE: %s", ibv_wc_status_str(wc.status));
		return false;
	}
	return true;
}

static void test_atomic_write(uint32_t caps)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	struct vt_loopback lb;
	struct vt_odp_buf t;
	uint64_t *word;
	bool ok;
	int i;

	/* The one reason to skip: the device does not offer it. Anything else fails. */
	if (!(caps & ODP_SUPPORT_ATOMIC_WRITE)) {
		for (i = 0; i < ATOMIC_WRITE_CHECKS; i++)
			tap_skip("the device has no ODP ATOMIC WRITE",
				 "ATOMIC WRITE on ODP, check %d", i + 1);
		return;
	}
	if (vt_loopback_create_ex(&lb, ctx, &opt, NULL, IBV_QP_EX_WITH_ATOMIC_WRITE, 0)) {
		for (i = 0; i < ATOMIC_WRITE_CHECKS; i++)
			tap_ok(false, "ATOMIC WRITE on ODP, check %d: no QP pair with ATOMIC WRITE",
			       i + 1);
		return;
	}
	if (!vt_odp_buf_init(&t, lb.pd, buf_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register an ODP MR");
	word = (uint64_t *)(t.p + 3 * page_size + 64);

	ok = vt_odp_snapshot(ctx, opt.port, b) && atomic_write(&lb, word, t.mr->rkey, 0x1122334455667788ULL) &&
	     vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && *word == 0x1122334455667788ULL && d[VT_ODP_PAGE_FAULTS] == 1 &&
	       d[VT_ODP_PAGES_FAULTED] == 1,
	       "ATOMIC WRITE into an untouched ODP page: value %#llx, %ld fault, %ld page",
	       (unsigned long long)*word, d[VT_ODP_PAGE_FAULTS], d[VT_ODP_PAGES_FAULTED]);

	ok = vt_odp_snapshot(ctx, opt.port, b) && atomic_write(&lb, word + 1, t.mr->rkey, 42) && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && word[1] == 42 && d[VT_ODP_PAGE_FAULTS] == 0,
	       "ATOMIC WRITE into the same page again: no fault (%ld)", d[VT_ODP_PAGE_FAULTS]);

	ok = !madvise(t.p, buf_size, MADV_DONTNEED) && vt_odp_snapshot(ctx, opt.port, b) &&
	     atomic_write(&lb, word, t.mr->rkey, 7) && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && *word == 7 && word[1] == 0 && d[VT_ODP_PAGE_FAULTS] == 1,
	       "ATOMIC WRITE after MADV_DONTNEED: into the new page (%ld fault)",
	       d[VT_ODP_PAGE_FAULTS]);
	vt_odp_buf_fini(&t);
	vt_loopback_destroy(&lb);
}

static bool flush(struct vt_loopback *lb, void *sq, void *addr, uint32_t len, uint32_t rkey,
		  uint8_t type, uint8_t level, enum ibv_wc_status *status)
{
	struct ibv_wc wc;

	if (vt_rxe_post_flush(lb->qp[0], sq, 8, (uintptr_t)addr, len, rkey, type, level) ||
	    vt_poll_one(lb->send_cq, &wc, 20000))
		return false;
	*status = wc.status;
	if (wc.status == IBV_WC_SUCCESS && wc.opcode != VT_WC_FLUSH) {
		tap_diag("FLUSH completed as opcode %d", wc.opcode);
		return false;
	}
	return true;
}

/* A persistent FLUSH and the counters around it: pages taken without a fault. */
static bool flush_counted(struct vt_loopback *lb, void *sq, void *addr, uint32_t len,
			  uint32_t rkey, uint8_t level, long *d, long long *ms)
{
	enum ibv_wc_status st = IBV_WC_GENERAL_ERR;
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 };
	long long t0 = vt_now_ms();
	bool ok;

	ok = vt_odp_snapshot(ctx, opt.port, b) && flush(lb, sq, addr, len, rkey, VT_FLUSH_PERSISTENT, level, &st);
	*ms = vt_now_ms() - t0;
	ok = ok && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	if (ok && st != IBV_WC_SUCCESS)
		tap_diag("FLUSH: %s", ibv_wc_status_str(st));
	return ok && st == IBV_WC_SUCCESS;
}

/*
 * rxe writes back the pages of an ODP MR that are present, without faulting: a FLUSH
 * takes into the MR the pages the CPU has (pages faulted, no page faults) and leaves
 * the rest alone, whatever the size of the MR.
 */
static void test_flush(uint32_t caps)
{
	const int access = VT_ODP_ACCESS | VT_ACCESS_FLUSH_GLOBAL | VT_ACCESS_FLUSH_PERSISTENT;
	enum ibv_wc_status st = IBV_WC_GENERAL_ERR;
	struct vt_odp_buf t, sparse, noflush;
	long d[VT_ODP_NCOUNTERS] = { 0 };
	struct vt_rxe_maps before;
	struct vt_loopback lb;
	struct ibv_mr *imr;
	long long ms;
	void *sq;
	bool ok;
	int i;

	if (!(caps & ODP_SUPPORT_FLUSH)) {
		for (i = 0; i < FLUSH_CHECKS; i++)
			tap_skip("the device has no ODP FLUSH", "FLUSH on ODP, check %d", i + 1);
		return;
	}
	if (vt_rxe_maps_read(ctx, &before) ||
	    vt_loopback_create_ex(&lb, ctx, &opt, NULL, 0,
				  VT_ACCESS_FLUSH_GLOBAL | VT_ACCESS_FLUSH_PERSISTENT))
		tap_bail("no connected QP pair for FLUSH");
	sq = vt_rxe_sq_of_loopback(ctx, &before);
	if (!sq) {
		/* Our own helper failing is not a missing feature. */
		for (i = 0; i < FLUSH_CHECKS; i++)
			tap_ok(false, "FLUSH on ODP, check %d: rxe's send queue not found to post it on",
			       i + 1);
		vt_loopback_destroy(&lb);
		return;
	}
	if (!vt_odp_buf_init(&t, lb.pd, buf_size, 0, access) ||
	    !vt_odp_buf_init(&sparse, lb.pd, SPARSE_SIZE, MAP_NORESERVE, access) ||
	    !vt_odp_buf_init(&noflush, lb.pd, buf_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register ODP MRs");

	/* The first half written by the device: present in the MR; the rest untouched. */
	vt_fill(noflush.p, buf_size / 2, 90);
	ok = vt_move(&lb, IBV_WR_RDMA_WRITE, noflush.p, noflush.mr, t.p, t.mr, buf_size / 2) &&
	     flush_counted(&lb, sq, t.p, buf_size, t.mr->rkey, VT_FLUSH_RANGE, d, &ms);
	tap_ok(ok && d[VT_ODP_PAGE_FAULTS] == 0 && d[VT_ODP_PAGES_FAULTED] == 0 &&
	       vt_check(t.p, buf_size / 2, 90) < 0,
	       "persistent FLUSH of an ODP range half written by the device: %ld faults, %ld pages taken",
	       d[VT_ODP_PAGE_FAULTS], d[VT_ODP_PAGES_FAULTED]);

	/* The second half written by the CPU: the flush takes it, without a fault. */
	vt_fill(t.p + buf_size / 2, buf_size / 2, 91);
	ok = flush_counted(&lb, sq, t.p, buf_size, t.mr->rkey, VT_FLUSH_RANGE, d, &ms);
	tap_ok(ok && d[VT_ODP_PAGE_FAULTS] == 0 && d[VT_ODP_PAGES_FAULTED] == NPAGES / 2,
	       "the same after the CPU wrote the other half: %ld faults, %ld pages taken (want %d)",
	       d[VT_ODP_PAGE_FAULTS], d[VT_ODP_PAGES_FAULTED], NPAGES / 2);

	/* One CPU page 40 GiB into a 64 GiB MR (not a THP): a whole-MR FLUSH reaches it. */
	if (madvise(sparse.p, SPARSE_SIZE, MADV_NOHUGEPAGE))
		tap_diag("madvise(MADV_NOHUGEPAGE): %s", strerror(errno));
	sparse.p[40ULL << 30] = 1;
	ok = flush_counted(&lb, sq, sparse.p, 0, sparse.mr->rkey, VT_FLUSH_MR, d, &ms);
	tap_ok(ok && d[VT_ODP_PAGE_FAULTS] == 0 && d[VT_ODP_PAGES_FAULTED] == 1,
	       "persistent FLUSH of a whole %llu GiB ODP MR with one page 40 GiB in: %ld pages taken, %ld faults, %lld ms",
	       SPARSE_SIZE >> 30, d[VT_ODP_PAGES_FAULTED], d[VT_ODP_PAGE_FAULTS], ms);

	imr = ibv_reg_mr(lb.pd, NULL, SIZE_MAX, access);
	if (!imr) {
		tap_skip("no implicit ODP", "FLUSH of a whole implicit MR");
	} else {
		/* One page through the implicit MR makes its child; the CPU writes 3 more. */
		vt_fill(noflush.p, page_size, 92);
		ok = vt_move(&lb, IBV_WR_RDMA_WRITE, noflush.p, noflush.mr, t.p, imr, page_size);
		vt_fill(t.p + page_size, 3 * page_size, 93);
		ok = ok && flush_counted(&lb, sq, NULL, 0, imr->rkey, VT_FLUSH_MR, d, &ms);
		tap_ok(ok && d[VT_ODP_PAGE_FAULTS] == 0 && d[VT_ODP_PAGES_FAULTED] >= 3,
		       "persistent FLUSH of a whole implicit MR (all the address space): %ld pages taken, %ld faults, %lld ms",
		       d[VT_ODP_PAGES_FAULTED], d[VT_ODP_PAGE_FAULTS], ms);
		ibv_dereg_mr(imr);
	}

	ok = flush(&lb, sq, t.p, buf_size, t.mr->rkey, VT_FLUSH_GLOBAL, VT_FLUSH_RANGE, &st);
	tap_ok(ok && st == IBV_WC_SUCCESS, "global FLUSH of an ODP range: %s",
	       ok ? ibv_wc_status_str(st) : "no completion");

	/* Last: the error moves the QP to the error state. */
	ok = flush(&lb, sq, noflush.p, page_size, noflush.mr->rkey, VT_FLUSH_PERSISTENT,
		   VT_FLUSH_RANGE, &st);
	tap_ok(ok && st == IBV_WC_REM_ACCESS_ERR,
	       "FLUSH of an ODP MR registered without FLUSH access: %s", ok ?
	       ibv_wc_status_str(st) : "no completion");

	vt_odp_buf_fini(&noflush);
	vt_odp_buf_fini(&sparse);
	vt_odp_buf_fini(&t);
	vt_loopback_destroy(&lb);
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	uint32_t caps;

	page_size = sysconf(_SC_PAGESIZE);
	buf_size = NPAGES * page_size;
	ctx = vt_odp_start(argc, argv, &opt, 2 + ATOMIC_WRITE_CHECKS + FLUSH_CHECKS,
			   VT_NEED_ODP | VT_NEED_COUNTERS, "ODP write-op", &attr);
	caps = attr.odp_caps.per_transport_caps.rc_odp_caps;
	tap_ok(caps & ODP_SUPPORT_FLUSH, "RC ODP caps include FLUSH (0x%x)", caps);
	tap_ok(caps & ODP_SUPPORT_ATOMIC_WRITE, "RC ODP caps include ATOMIC WRITE (0x%x)", caps);

	test_atomic_write(caps);
	test_flush(caps);
	ibv_close_device(ctx);
	return tap_done();
}
