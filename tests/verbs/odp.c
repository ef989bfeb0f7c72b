// SPDX-License-Identifier: GPL-2.0
/*
 * On-Demand Paging memory regions: registered without pinning, faulted by the device
 * on first access. RC traffic between two QPs of one device, with every byte checked:
 *  - first touch on both sides, for SEND/RECV, RDMA WRITE, RDMA READ and atomics,
 *    aligned, unaligned and page-spanning;
 *  - the device's ODP counters for a known workload;
 *  - a 64 GiB sparse MR touched in a few places;
 *  - bad requests: clean errors, no kernel report (the harness checks the log).
 * What happens when pages go away under an MR is odp_invalidate's. Without ODP on the
 * device every check is skipped with that reason.
 *
 * vmtest-class: dma
 */
#include "tap.h"
#include "lib/odp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NPAGES		16
#define SPARSE_SIZE	(64ULL << 30)

static size_t page_size, buf_size;
static struct vt_options opt;
static struct ibv_context *ctx;

static const struct {
	size_t soff, doff, len;
	const char *what;
} shapes[] = {
	{ 0, 0, 4096, "one aligned page" },
	{ 7, 13, 5000, "unaligned, across a page boundary" },
	{ 4095, 1, 3 * 4096 + 2, "from the last byte of a page over five pages" },
	{ 0, 0, NPAGES * 4096, "the whole buffer" },
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* First touch: the destination is untouched; the source only by the CPU's fill. */
static void test_first_touch(struct vt_loopback *lb)
{
	const struct vt_transfer *ops = vt_transfers;
	struct vt_odp_buf src, dst;
	unsigned int o, s;
	bool ok;

	for (o = 0; o < VT_NTRANSFERS; o++) {
		for (s = 0; s < NSHAPES; s++) {
			ok = vt_odp_buf_init(&src, lb->pd, buf_size, 0, VT_ODP_ACCESS) &&
			     vt_odp_buf_init(&dst, lb->pd, buf_size, 0, VT_ODP_ACCESS);
			if (ok) {
				vt_fill(src.p, buf_size, o * 10 + s + 1);
				ok = vt_odp_move(lb, &src, shapes[s].soff, &dst, shapes[s].doff,
						 shapes[s].len, ops[o].op) &&
				     vt_odp_same(&src, shapes[s].soff, &dst, shapes[s].doff,
						 shapes[s].len) &&
				     vt_odp_zero_outside(&dst, shapes[s].doff, shapes[s].len);
			}
			tap_ok(ok, "first touch, %s: %s (%zu bytes)", ops[o].name,
			       shapes[s].what, shapes[s].len);
			vt_odp_buf_fini(&src);
			vt_odp_buf_fini(&dst);
		}
	}
}

static bool atomic_op(struct vt_loopback *lb, struct vt_odp_buf *target, size_t off,
		      enum ibv_wr_opcode op, uint64_t compare_add, uint64_t swap,
		      struct vt_odp_buf *result, enum ibv_wc_status *status)
{
	struct ibv_sge sge = { (uintptr_t)result->p, 8, result->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = op };

	wr.wr.atomic.remote_addr = (uintptr_t)target->p + off;
	wr.wr.atomic.rkey = target->mr->rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return vt_post_send_status(lb, lb->qp[0], &wr, status) == 0;
}

/*
 * One atomic on the 8 bytes at target+off that must succeed and return old (when
 * old is not NULL); *now receives the value there afterwards.
 */
static bool atomic_ok(struct vt_loopback *lb, struct vt_odp_buf *target, size_t off,
		      enum ibv_wr_opcode op, uint64_t compare_add, uint64_t swap,
		      struct vt_odp_buf *result, const uint64_t *old, uint64_t *now)
{
	enum ibv_wc_status status;
	uint64_t v;
	bool ok;

	ok = atomic_op(lb, target, off, op, compare_add, swap, result, &status) &&
	     status == IBV_WC_SUCCESS;
	memcpy(&v, result->p, 8);
	memcpy(now, target->p + off, 8);
	return ok && (!old || v == *old);
}

static void test_atomics(struct vt_loopback *lb)
{
	const size_t off = 3 * page_size + 8;
	const uint64_t zero = 0, five = 5;
	struct vt_odp_buf target, result;
	uint64_t v;
	bool ok;

	ok = vt_odp_buf_init(&target, lb->pd, buf_size, 0, VT_ODP_ACCESS) &&
	     vt_odp_buf_init(&result, lb->pd, page_size, 0, VT_ODP_ACCESS);
	if (!ok)
		tap_bail("cannot register ODP MRs");

	/* Untouched: the responder faults in a zero page for writing. */
	ok = atomic_ok(lb, &target, off, IBV_WR_ATOMIC_FETCH_AND_ADD, 5, 0, &result, &zero, &v);
	tap_ok(ok && v == 5, "fetch-and-add on an untouched page: old 0, new %llu",
	       (unsigned long long)v);

	ok = atomic_ok(lb, &target, off, IBV_WR_ATOMIC_CMP_AND_SWP, 5, 77, &result, &five, &v);
	tap_ok(ok && v == 77, "compare-and-swap after it: old 5, new %llu",
	       (unsigned long long)v);

	ok = madvise(target.p, buf_size, MADV_DONTNEED) == 0 &&
	     atomic_ok(lb, &target, off, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0, &result, NULL, &v);
	tap_ok(ok && v == 1, "fetch-and-add after MADV_DONTNEED refaults a zero page");

	{
		/* Refused when posted, or failed by the responder: either is clean. */
		struct ibv_sge sge = { (uintptr_t)result.p, 8, result.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 10, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc;
		int ret;

		wr.wr.atomic.remote_addr = (uintptr_t)target.p + 3;
		wr.wr.atomic.rkey = target.mr->rkey;
		wr.wr.atomic.compare_add = 1;
		ret = ibv_post_send(lb->qp[0], &wr, &bad);
		if (ret)
			tap_ok(ret == EINVAL, "misaligned atomic refused when posted: %s",
			       strerror(ret));
		else
			tap_ok(!vt_poll_one(lb->send_cq, &wc, VT_WAIT_MS) &&
			       wc.status != IBV_WC_SUCCESS, "misaligned atomic fails: %s",
			       ibv_wc_status_str(wc.status));
	}

	vt_odp_buf_fini(&target);
	vt_odp_buf_fini(&result);
}

/* 64 GiB of address space, no memory behind it until touched. */
static void test_sparse(struct vt_loopback *lb)
{
	static const unsigned long long at[] = { 0, 17ULL << 30, SPARSE_SIZE - 4096 };
	struct vt_odp_buf big, src;
	unsigned int i;
	bool ok;

	ok = vt_odp_buf_init(&big, lb->pd, SPARSE_SIZE, MAP_NORESERVE, VT_ODP_ACCESS);
	if (!tap_ok(ok, "register a 64 GiB sparse ODP MR")) {
		for (i = 0; i < 3; i++)
			tap_skip("no 64 GiB MR", "64 GiB MR: page %u", i);
		return;
	}
	if (!vt_odp_buf_init(&src, lb->pd, page_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register an ODP MR");
	for (i = 0; i < 3; i++) {
		struct vt_odp_buf window = { big.p + at[i], page_size, big.mr };

		vt_fill(src.p, page_size, 50 + i);
		ok = vt_odp_move(lb, &src, 0, &window, 0, page_size, IBV_WR_RDMA_WRITE) &&
		     vt_odp_same(&src, 0, &window, 0, page_size);
		memset(src.p, 0, page_size);
		ok = ok && vt_odp_move(lb, &window, 0, &src, 0, page_size, IBV_WR_RDMA_READ) &&
		     vt_check(src.p, page_size, 50 + i) == -1;
		tap_ok(ok, "64 GiB MR: WRITE and READ back one page at %llu MiB", at[i] >> 20);
	}
	vt_odp_buf_fini(&src);
	vt_odp_buf_fini(&big);
}

/* Post a request that must fail; then replace the QPs, which are in error now. */
static void expect_failure(struct vt_loopback *lb, struct ibv_pd *pd, struct vt_odp_buf *src,
			   size_t soff, struct vt_odp_buf *dst, size_t doff, size_t len,
			   enum ibv_wr_opcode op, enum ibv_wc_status want, const char *what)
{
	enum ibv_wc_status status;
	bool ok;

	ok = vt_odp_rdma(lb, src, soff, dst, doff, len, op, &status) == 0;
	tap_ok(ok && (want == IBV_WC_SUCCESS ? status != IBV_WC_SUCCESS : status == want),
	       "%s: %s", what, ok ? ibv_wc_status_str(status) : "no completion");
	vt_loopback_destroy(lb);
	if (vt_loopback_create_on(lb, ctx, &opt, pd))
		tap_bail("no connected QP pair");
}

static void test_errors(void)
{
	struct vt_odp_buf a, b, local;
	struct vt_loopback lb;
	struct ibv_pd *pd;
	struct ibv_mr *mr;

	pd = ibv_alloc_pd(ctx);
	if (!pd || vt_loopback_create_on(&lb, ctx, &opt, pd))
		tap_bail("no connected QP pair");
	errno = 0;
	mr = ibv_reg_mr(pd, NULL, 0, VT_ODP_ACCESS);
	tap_ok(!mr && errno == EINVAL, "zero-length ODP MR: EINVAL (%s)",
	       mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	errno = 0;
	mr = ibv_reg_mr(pd, (void *)(uintptr_t)-4096, 8192, VT_ODP_ACCESS);
	tap_ok(!mr && (errno == EINVAL || errno == EOVERFLOW),
	       "ODP MR whose end overflows 64 bits: EINVAL or EOVERFLOW (%s)",
	       mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);

	if (!vt_odp_buf_init(&a, pd, buf_size, 0, VT_ODP_ACCESS) ||
	    !vt_odp_buf_init(&b, pd, buf_size, 0, VT_ODP_ACCESS) ||
	    !vt_odp_buf_init(&local, pd, buf_size, 0,
			  IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE))
		tap_bail("cannot register ODP MRs");
	vt_fill(a.p, buf_size, 60);

	expect_failure(&lb, pd, &a, 0, &b, buf_size - 8, 16, IBV_WR_RDMA_WRITE,
		       IBV_WC_REM_ACCESS_ERR, "RDMA WRITE past the end of the remote ODP MR");
	expect_failure(&lb, pd, &a, 0, &local, 0, 64, IBV_WR_RDMA_WRITE,
		       IBV_WC_REM_ACCESS_ERR, "RDMA WRITE into a local-only ODP MR");
	/* The VMA behind the remote MR is gone: the fault fails, nothing else. */
	munmap(b.p + 4 * page_size, 4 * page_size);
	expect_failure(&lb, pd, &b, 4 * page_size, &a, 0, page_size, IBV_WR_RDMA_READ,
		       IBV_WC_SUCCESS, "RDMA READ of an unmapped part of an ODP MR fails");
	/* And behind the local one: the requester's own fault fails. */
	expect_failure(&lb, pd, &b, 4 * page_size, &a, 0, page_size, IBV_WR_RDMA_WRITE,
		       IBV_WC_SUCCESS, "RDMA WRITE from an unmapped part of an ODP MR fails");
	munmap(b.p + 8 * page_size, buf_size - 8 * page_size);
	b.size = 4 * page_size;		/* what is left mapped at the start */
	vt_odp_buf_fini(&a);
	vt_odp_buf_fini(&b);
	vt_odp_buf_fini(&local);
	vt_loopback_destroy(&lb);
	ibv_dealloc_pd(pd);
}

/*
 * A known workload gives known counter deltas: one page written from an untouched
 * (by the device) source page into an untouched destination page faults and links one
 * page on each side; MADV_DONTNEED on both takes both away in two invalidations.
 */
static void test_counters(struct vt_loopback *lb)
{
	long before[VT_ODP_NCOUNTERS] = { 0 }, after[VT_ODP_NCOUNTERS] = { 0 }, linked;
	struct vt_odp_buf src, dst;
	bool ok;

	if (!vt_odp_counters(ctx, opt.port, before)) {
		tap_skip("the device has no ODP counters", "ODP counters after a first touch");
		tap_skip("the device has no ODP counters", "ODP counters after MADV_DONTNEED");
		return;
	}
	if (!vt_odp_buf_init(&src, lb->pd, page_size, 0, VT_ODP_ACCESS) ||
	    !vt_odp_buf_init(&dst, lb->pd, page_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register ODP MRs");
	vt_fill(src.p, page_size, 70);
	ok = vt_odp_counters(ctx, opt.port, before) && vt_odp_round_trip(lb, &src, &dst, IBV_WR_RDMA_WRITE) &&
	     vt_odp_counters(ctx, opt.port, after);
	if (!ok)	/* deltas of 0, not of counters never read */
		memcpy(after, before, sizeof(after));
	linked = vt_odp_linked(ctx, &opt, 2);
	tap_ok(ok && after[0] - before[0] == 2 && after[1] - before[1] == 2 &&
	       after[2] - before[2] == linked && after[3] == before[3],
	       "ODP counters after a first touch: %ld faults, %ld pages faulted, %ld linked, %ld unlinked",
	       after[0] - before[0], after[1] - before[1], after[2] - before[2],
	       after[3] - before[3]);

	ok = vt_odp_counters(ctx, opt.port, before) && madvise(src.p, page_size, MADV_DONTNEED) == 0 &&
	     madvise(dst.p, page_size, MADV_DONTNEED) == 0 && vt_odp_counters(ctx, opt.port, after);
	if (!ok)
		memcpy(after, before, sizeof(after));
	tap_ok(ok && after[3] - before[3] == 2 && after[4] - before[4] == 2 &&
	       after[0] == before[0],
	       "ODP counters after MADV_DONTNEED: %ld invalidations, %ld pages unlinked",
	       after[4] - before[4], after[3] - before[3]);
	vt_odp_buf_fini(&src);
	vt_odp_buf_fini(&dst);
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	struct vt_loopback lb;

	page_size = sysconf(_SC_PAGESIZE);
	buf_size = NPAGES * page_size;
	ctx = vt_odp_start(argc, argv, &opt, 1 + 2 + 3 * NSHAPES + 4 + 4 + 6, VT_NEED_ODP, "ODP",
			   &attr);
	tap_ok((attr.odp_caps.per_transport_caps.rc_odp_caps &
		(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
		 IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC)) ==
	       (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
		IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC),
	       "RC ODP caps: SEND, RECV, WRITE, READ, ATOMIC (0x%x)",
	       attr.odp_caps.per_transport_caps.rc_odp_caps);

	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");
	test_counters(&lb);
	test_first_touch(&lb);
	test_atomics(&lb);
	test_sparse(&lb);
	vt_loopback_destroy(&lb);
	test_errors();
	ibv_close_device(ctx);
	return tap_done();
}
