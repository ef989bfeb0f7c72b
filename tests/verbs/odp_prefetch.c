// SPDX-License-Identifier: GPL-2.0
/*
 * Prefetch of ODP MRs (ibv_advise_mr()): PREFETCH, PREFETCH_WRITE and
 * PREFETCH_NO_FAULT, synchronous (IBV_ADVISE_MR_FLAG_FLUSH) and asynchronous. The
 * device's ODP counters prove what happened: a prefetched range faults in the
 * prefetch, and the access after it does not fault again. Debian's rxe provider
 * answers EOPNOTSUPP, so the request then goes to the kernel's ADVISE_MR method
 * directly (lib/odp.c). Also: asynchronous prefetches racing the deregistration of
 * their MR, and bad requests.
 *
 * vmtest-class: dma
 */
#include "lib/odp.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NPAGES		16
#define RACE_ROUNDS	40
#define RACE_SIZE	(32UL << 20)

static struct vt_options opt;
static struct ibv_context *ctx;
static size_t page_size, buf_size;

static int advise(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		  void *addr, size_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, (uint32_t)len, lkey };

	return vt_advise_mr(pd, advice, flags, &sge, 1, NULL);
}

/* Exactly the pages of the DMA path: all of them, or none when used directly. */
static bool linked_ok(const long *d, long pages)
{
	return d[VT_ODP_PAGES_LINKED] == vt_odp_linked(ctx, &opt, pages);
}

/* PREFETCH_WRITE then a WRITE into the range: the faults happen in the prefetch. */
static void test_prefetch_write(struct vt_loopback *lb, struct ibv_mr *pinned_mr,
				unsigned char *pinned)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	struct vt_odp_buf dst;
	bool direct = false, ok;
	struct ibv_sge sge;
	int ret;

	if (!vt_odp_buf_init(&dst, lb->pd, buf_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register an ODP MR");
	sge = (struct ibv_sge){ (uintptr_t)dst.p, (uint32_t)buf_size, dst.mr->lkey };
	ok = vt_odp_snapshot(ctx, opt.port, b);
	ret = vt_advise_mr(lb->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1, &direct);
	ok = ok && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && !ret && d[VT_ODP_PREFETCH_REQUESTS] == 1 &&
	       d[VT_ODP_PAGES_FAULTED] == NPAGES && linked_ok(d, NPAGES),
	       "sync PREFETCH_WRITE of %d pages (%s): %s, %ld request, %ld pages faulted, %ld linked",
	       NPAGES, direct ? "kernel ADVISE_MR directly, the provider has no advise_mr" :
	       "through the provider", ret ? strerror(ret) : "ok", d[VT_ODP_PREFETCH_REQUESTS],
	       d[VT_ODP_PAGES_FAULTED], d[VT_ODP_PAGES_LINKED]);

	vt_fill(pinned, buf_size, 21);
	ok = vt_odp_snapshot(ctx, opt.port, b) && vt_move(lb, IBV_WR_RDMA_WRITE, pinned, pinned_mr, dst.p, dst.mr,
				    buf_size) && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && vt_check(dst.p, buf_size, 21) < 0 && d[VT_ODP_PAGE_FAULTS] == 0,
	       "RDMA WRITE into the prefetched range: data right, %ld faults",
	       d[VT_ODP_PAGE_FAULTS]);
	vt_odp_buf_fini(&dst);
}

/* PREFETCH (read): a READ from the range does not fault, a WRITE into it does. */
static void test_prefetch_read(struct vt_loopback *lb, struct ibv_mr *pinned_mr,
			       unsigned char *pinned)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	struct vt_odp_buf src;
	bool ok;
	int ret;

	if (!vt_odp_buf_init(&src, lb->pd, buf_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register an ODP MR");
	vt_fill(src.p, buf_size, 22);
	ok = vt_odp_snapshot(ctx, opt.port, b);
	ret = advise(lb->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, src.p,
		     buf_size, src.mr->lkey);
	ok = ok && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && !ret && d[VT_ODP_PAGES_FAULTED] == NPAGES,
	       "sync PREFETCH of %d pages: %s, %ld pages faulted", NPAGES,
	       ret ? strerror(ret) : "ok", d[VT_ODP_PAGES_FAULTED]);

	memset(pinned, 0, buf_size);
	ok = vt_odp_snapshot(ctx, opt.port, b) && vt_move(lb, IBV_WR_RDMA_READ, src.p, src.mr, pinned, pinned_mr,
				    buf_size) && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && vt_check(pinned, buf_size, 22) < 0 && d[VT_ODP_PAGE_FAULTS] == 0,
	       "RDMA READ of the prefetched range: data right, %ld faults",
	       d[VT_ODP_PAGE_FAULTS]);

	ok = vt_odp_snapshot(ctx, opt.port, b) && vt_move(lb, IBV_WR_RDMA_WRITE, pinned, pinned_mr, src.p, src.mr,
				    page_size) && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && d[VT_ODP_PAGE_FAULTS] == 1,
	       "RDMA WRITE into a page prefetched for reading faults it for writing (%ld faults)",
	       d[VT_ODP_PAGE_FAULTS]);
	vt_odp_buf_fini(&src);
}

/* PREFETCH_NO_FAULT maps the pages the CPU touched and leaves the others. */
static void test_prefetch_no_fault(struct vt_loopback *lb, struct ibv_mr *pinned_mr,
				   unsigned char *pinned)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	size_t half = buf_size / 2;
	struct vt_odp_buf src;
	bool ok;
	int ret;

	if (!vt_odp_buf_init(&src, lb->pd, buf_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register an ODP MR");
	vt_fill(src.p, half, 23);
	ok = vt_odp_snapshot(ctx, opt.port, b);
	ret = advise(lb->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, IBV_ADVISE_MR_FLAG_FLUSH,
		     src.p, buf_size, src.mr->lkey);
	ok = ok && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && !ret && d[VT_ODP_PAGES_FAULTED] == NPAGES / 2 &&
	       linked_ok(d, NPAGES / 2),
	       "sync PREFETCH_NO_FAULT over %d pages, %d present: %s, %ld pages faulted, %ld linked",
	       NPAGES, NPAGES / 2, ret ? strerror(ret) : "ok", d[VT_ODP_PAGES_FAULTED],
	       d[VT_ODP_PAGES_LINKED]);

	ok = vt_odp_snapshot(ctx, opt.port, b) && vt_move(lb, IBV_WR_RDMA_READ, src.p, src.mr, pinned, pinned_mr,
				    half) && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && vt_check(pinned, half, 23) < 0 && d[VT_ODP_PAGE_FAULTS] == 0,
	       "RDMA READ of the present half: data right, %ld faults", d[VT_ODP_PAGE_FAULTS]);
	ok = vt_odp_snapshot(ctx, opt.port, b) && vt_move(lb, IBV_WR_RDMA_READ, src.p + half, src.mr, pinned,
				    pinned_mr, half) && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	/* rxe faults per packet: as many faults as MTU-sized pieces, at least one. */
	tap_ok(ok && d[VT_ODP_PAGE_FAULTS] >= 1 && d[VT_ODP_PAGES_FAULTED] == NPAGES / 2,
	       "RDMA READ of the untouched half faults it (%ld faults, %ld pages)",
	       d[VT_ODP_PAGE_FAULTS], d[VT_ODP_PAGES_FAULTED]);
	vt_odp_buf_fini(&src);
}

/* Asynchronous PREFETCH_WRITE: returns at once, the pages arrive soon after. */
static void test_prefetch_async(struct vt_loopback *lb, struct ibv_mr *pinned_mr,
				unsigned char *pinned)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	long long until = vt_now_ms() + VT_WAIT_MS;
	struct vt_odp_buf dst;
	bool ok;
	int ret;

	if (!vt_odp_buf_init(&dst, lb->pd, buf_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register an ODP MR");
	ok = vt_odp_snapshot(ctx, opt.port, b);
	ret = advise(lb->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, dst.p, buf_size,
		     dst.mr->lkey);
	while (ok && !ret && d[VT_ODP_PAGES_FAULTED] < NPAGES && vt_now_ms() < until) {
		ok = vt_odp_snapshot(ctx, opt.port, a);
		vt_odp_delta(b, a, d);
	}
	tap_ok(ok && !ret && d[VT_ODP_PAGES_FAULTED] == NPAGES && d[VT_ODP_PREFETCH_REQUESTS] == 1,
	       "async PREFETCH_WRITE: %s, %ld pages faulted in the background",
	       ret ? strerror(ret) : "ok", d[VT_ODP_PAGES_FAULTED]);

	vt_fill(pinned, buf_size, 24);
	ok = vt_odp_snapshot(ctx, opt.port, b) && vt_move(lb, IBV_WR_RDMA_WRITE, pinned, pinned_mr, dst.p, dst.mr,
				    buf_size) && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && vt_check(dst.p, buf_size, 24) < 0 && d[VT_ODP_PAGE_FAULTS] == 0,
	       "RDMA WRITE after the async prefetch: data right, %ld faults",
	       d[VT_ODP_PAGE_FAULTS]);
	vt_odp_buf_fini(&dst);
}

/*
 * An asynchronous prefetch of a large MR, deregistered at once: the deregistration
 * must succeed while the prefetch runs (it holds the MR, and stops); the kernel must
 * report nothing (the harness reads its log). The pages faulted show that the race
 * happened: fewer than all the rounds' pages, so some prefetch was cut short.
 */
static void test_prefetch_vs_dereg(struct ibv_pd *pd)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	long long t0 = vt_now_ms(), until;
	int round, ret = 0, dereg_failed = 0;
	long all, last = -1;
	struct vt_odp_buf buf;
	bool ok;

	ok = vt_odp_snapshot(ctx, opt.port, b);
	for (round = 0; round < RACE_ROUNDS && !ret; round++) {
		if (!vt_odp_buf_init(&buf, pd, RACE_SIZE, 0, VT_ODP_ACCESS))
			tap_bail("cannot register an ODP MR");
		ret = advise(pd, round & 1 ? IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE :
			     IBV_ADVISE_MR_ADVICE_PREFETCH, 0, buf.p, RACE_SIZE, buf.mr->lkey);
		if (ibv_dereg_mr(buf.mr)) {
			tap_diag("ibv_dereg_mr during a prefetch: %s", strerror(errno));
			dereg_failed++;
		}
		buf.mr = NULL;
		vt_odp_buf_fini(&buf);
	}
	/* Until the count of pages faulted stands still: nothing runs on a gone MR. */
	until = vt_now_ms() + VT_WAIT_MS;
	while (ok && d[VT_ODP_PAGES_FAULTED] != last && vt_now_ms() < until) {
		last = d[VT_ODP_PAGES_FAULTED];
		ok = vt_odp_snapshot(ctx, opt.port, a);
		vt_odp_delta(b, a, d);
	}
	all = (long)round * (long)(RACE_SIZE / page_size);
	tap_ok(ok && !ret && !dereg_failed && d[VT_ODP_PAGES_FAULTED] < all,
	       "%d async prefetches of %lu MiB, each MR deregistered at once: %d deregistrations failed (%s), %ld of %ld pages faulted (fewer: prefetches were cut short), %lld ms",
	       round, RACE_SIZE >> 20, dereg_failed, ret ? strerror(ret) : "prefetch ok",
	       d[VT_ODP_PAGES_FAULTED], all, vt_now_ms() - t0);
}

static void expect_errno(int ret, int want, const char *what)
{
	tap_ok(ret == want, "%s: %s (want %s)", what, ret ? strerror(ret) : "success",
	       strerror(want));
}

static void test_errors(struct ibv_pd *pd)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	long long until = vt_now_ms() + VT_WAIT_MS;
	struct vt_odp_buf odp, ro;
	unsigned char *pinned;
	struct ibv_mr *mr;
	bool ok;
	int ret;

	if (!vt_odp_buf_init(&odp, pd, buf_size, 0, VT_ODP_ACCESS) ||
	    !vt_odp_buf_init(&ro, pd, buf_size, 0, IBV_ACCESS_ON_DEMAND))
		tap_bail("cannot register ODP MRs");
	pinned = vt_map_anon(buf_size, PROT_READ | PROT_WRITE, 0);
	mr = pinned ? ibv_reg_mr(pd, pinned, buf_size, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr)
		tap_bail("cannot register a pinned MR: %s", strerror(errno));

	expect_errno(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, odp.p,
			    page_size, odp.mr->lkey ^ 0x5a00), ENOENT, "prefetch with an unknown lkey");
	expect_errno(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, pinned,
			    page_size, mr->lkey), EINVAL, "prefetch of a pinned MR");
	expect_errno(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, odp.p,
			    buf_size + page_size, odp.mr->lkey), EINVAL,
		     "prefetch past the end of the MR");
	expect_errno(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH,
			    ro.p, page_size, ro.mr->lkey), EPERM,
		     "PREFETCH_WRITE of an MR without local write");
	expect_errno(advise(pd, (enum ibv_advise_mr_advice)7, IBV_ADVISE_MR_FLAG_FLUSH, odp.p,
			    page_size, odp.mr->lkey), EOPNOTSUPP, "an advice that does not exist");

	/* A hole in the MR: the sync request fails, an async one counts a fault error. */
	if (munmap(odp.p + page_size, page_size))
		tap_bail("munmap: %s", strerror(errno));
	expect_errno(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, odp.p,
			    2 * page_size, odp.mr->lkey), EFAULT,
		     "sync prefetch over an unmapped page of the MR");
	ok = vt_odp_snapshot(ctx, opt.port, b);
	ret = advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, odp.p, 2 * page_size, odp.mr->lkey);
	while (ok && !ret && !d[VT_ODP_FAULT_ERRORS] && vt_now_ms() < until) {
		ok = vt_odp_snapshot(ctx, opt.port, a);
		vt_odp_delta(b, a, d);
	}
	tap_ok(ok && !ret && d[VT_ODP_FAULT_ERRORS] == 1,
	       "async prefetch over an unmapped page: %s, then %ld fault error counted",
	       ret ? strerror(ret) : "accepted", d[VT_ODP_FAULT_ERRORS]);

	ibv_dereg_mr(mr);
	munmap(pinned, buf_size);
	vt_odp_buf_fini(&ro);
	vt_odp_buf_fini(&odp);
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	struct vt_odp_buf pin;
	struct vt_loopback lb;
	struct ibv_mr *mr;
	unsigned char *pinned;

	page_size = sysconf(_SC_PAGESIZE);
	buf_size = NPAGES * page_size;
	/* The counters prove what a prefetch did. */
	ctx = vt_odp_start(argc, argv, &opt, 2 + 3 + 3 + 2 + 1 + 7,
			   VT_NEED_ODP | VT_NEED_COUNTERS, "prefetch", &attr);
	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");
	if (!vt_odp_buf_init(&pin, lb.pd, buf_size, 0, VT_PINNED_ACCESS))
		tap_bail("cannot register a pinned MR");
	mr = pin.mr;
	pinned = pin.p;

	test_prefetch_write(&lb, mr, pinned);
	test_prefetch_read(&lb, mr, pinned);
	test_prefetch_no_fault(&lb, mr, pinned);
	test_prefetch_async(&lb, mr, pinned);
	test_prefetch_vs_dereg(lb.pd);
	test_errors(lb.pd);

	vt_odp_buf_fini(&pin);
	vt_loopback_destroy(&lb);
	ibv_close_device(ctx);
	return tap_done();
}
