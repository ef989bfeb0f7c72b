// SPDX-License-Identifier: GPL-2.0
/*
 * ODP MRs on huge pages: 2 MiB hugetlb memory registered with IBV_ACCESS_HUGETLB, and
 * transparent huge pages in an ordinary ODP MR. The counters show that a huge page
 * faults as one page of the MR (hugetlb) and that a THP faults in one go; every byte
 * is checked. The suite reserves the hugetlb pages; without them those checks skip.
 */
#include "lib/odp.h"
#include "lib/tap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_SIZE	(2UL << 20)
#define NHUGE		2
#define HUGETLB_CHECKS	4

static struct vt_options opt;
static struct ibv_context *ctx;

static void test_hugetlb(struct vt_loopback *lb, struct ibv_mr *pinned_mr, unsigned char *pinned)
{
	long b[VT_ODP_NCOUNTERS], a[VT_ODP_NCOUNTERS], d[VT_ODP_NCOUNTERS];
	size_t size = NHUGE * HUGE_SIZE;
	struct ibv_mr *mr;
	unsigned char *p;
	bool ok;
	int i;

	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (p == MAP_FAILED) {
		for (i = 0; i < HUGETLB_CHECKS; i++)
			tap_skip("no 2 MiB hugetlb pages reserved (vm.nr_hugepages)",
				 "ODP on hugetlb memory, check %d", i + 1);
		return;
	}
	mr = ibv_reg_mr(lb->pd, p, size, VT_ODP_ACCESS | IBV_ACCESS_HUGETLB);
	if (!tap_ok(mr != NULL, "ODP MR with IBV_ACCESS_HUGETLB on %d huge pages: %s", NHUGE,
		    mr ? "registered" : strerror(errno))) {
		for (i = 1; i < HUGETLB_CHECKS; i++)
			tap_ok(false, "ODP on hugetlb memory, check %d: no MR", i + 1);
		munmap(p, size);
		return;
	}

	vt_fill(pinned, size, 80);
	ok = vt_odp_snapshot(ctx, opt.port, b) && vt_move(lb, IBV_WR_RDMA_WRITE, pinned, pinned_mr, p, mr, size) &&
	     vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && vt_check(p, size, 80) < 0 && d[VT_ODP_PAGE_FAULTS] == NHUGE &&
	       d[VT_ODP_PAGES_FAULTED] == NHUGE &&
	       (vt_behind_iommu(ctx, &opt) ? d[VT_ODP_PAGES_LINKED] == NHUGE : true),
	       "RDMA WRITE of %d huge pages: data right, %ld faults (one per huge page), %ld pages faulted, %ld linked",
	       NHUGE, d[VT_ODP_PAGE_FAULTS], d[VT_ODP_PAGES_FAULTED], d[VT_ODP_PAGES_LINKED]);

	ok = vt_odp_snapshot(ctx, opt.port, b) && !madvise(p, size, MADV_DONTNEED) && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && d[VT_ODP_PAGES_UNLINKED] == NHUGE && d[VT_ODP_INVALIDATIONS] >= 1,
	       "MADV_DONTNEED of the huge pages: %ld invalidations, %ld pages unlinked",
	       d[VT_ODP_INVALIDATIONS], d[VT_ODP_PAGES_UNLINKED]);

	memset(pinned, 0xff, size);
	ok = vt_move(lb, IBV_WR_RDMA_READ, p, mr, pinned, pinned_mr, size);
	for (i = 0; ok && i < (int)size; i++)
		ok = !pinned[i];
	tap_ok(ok, "RDMA READ after MADV_DONTNEED: the new, zeroed huge pages");
	ibv_dereg_mr(mr);
	munmap(p, size);
}

/* IBV_ACCESS_HUGETLB on memory that is not hugetlb: refused at registration. */
static void test_hugetlb_refused(struct ibv_pd *pd)
{
	unsigned char *p = vt_map_anon(HUGE_SIZE, PROT_READ | PROT_WRITE, 0);
	struct ibv_mr *mr = p ? ibv_reg_mr(pd, p, HUGE_SIZE, VT_ODP_ACCESS | IBV_ACCESS_HUGETLB) :
		NULL;
	int err = errno;

	tap_ok(p && !mr && err == EINVAL,
	       "IBV_ACCESS_HUGETLB ODP MR on ordinary memory: %s (want EINVAL)",
	       mr ? "registered" : strerror(err));
	if (mr)
		ibv_dereg_mr(mr);
	if (p)
		munmap(p, HUGE_SIZE);
}

/* A transparent huge page, present before the MR is used: one fault maps all of it. */
static void test_thp(struct vt_loopback *lb, struct ibv_mr *pinned_mr, unsigned char *pinned)
{
	long b[VT_ODP_NCOUNTERS], a[VT_ODP_NCOUNTERS], d[VT_ODP_NCOUNTERS];
	long page_size = sysconf(_SC_PAGESIZE);
	unsigned char *raw, *p;
	struct ibv_mr *mr;
	bool ok;

	/* 2 MiB aligned inside a larger mapping, so that a THP can back it. */
	raw = vt_map_anon(2 * HUGE_SIZE, PROT_READ | PROT_WRITE, 0);
	if (!raw) {
		tap_ok(false, "RDMA READ of a transparent huge page: no memory");
		return;
	}
	p = (unsigned char *)(((uintptr_t)raw + HUGE_SIZE - 1) & ~(HUGE_SIZE - 1));
	if (madvise(p, HUGE_SIZE, MADV_HUGEPAGE))
		tap_diag("madvise(MADV_HUGEPAGE): %s", strerror(errno));
	vt_fill(p, HUGE_SIZE, 81);
	mr = ibv_reg_mr(lb->pd, p, HUGE_SIZE, VT_ODP_ACCESS);
	ok = mr && vt_odp_snapshot(ctx, opt.port, b) &&
	     vt_move(lb, IBV_WR_RDMA_READ, p, mr, pinned, pinned_mr, HUGE_SIZE) && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && vt_check(pinned, HUGE_SIZE, 81) < 0 && d[VT_ODP_PAGE_FAULTS] == 1 &&
	       d[VT_ODP_PAGES_FAULTED] == (long)(HUGE_SIZE / page_size),
	       "RDMA READ of a 2 MiB transparent huge page range: data right, %ld fault, %ld pages",
	       d[VT_ODP_PAGE_FAULTS], d[VT_ODP_PAGES_FAULTED]);
	if (mr)
		ibv_dereg_mr(mr);
	munmap(raw, 2 * HUGE_SIZE);
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	struct vt_odp_buf pin;
	struct vt_loopback lb;

	ctx = vt_odp_start(argc, argv, &opt, HUGETLB_CHECKS + 1 + 1,
			   VT_NEED_ODP | VT_NEED_COUNTERS, "huge page ODP", &attr);
	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");
	if (!vt_odp_buf_init(&pin, lb.pd, NHUGE * HUGE_SIZE, 0, VT_PINNED_ACCESS))
		tap_bail("cannot register a pinned MR");

	test_hugetlb(&lb, pin.mr, pin.p);
	test_hugetlb_refused(lb.pd);
	test_thp(&lb, pin.mr, pin.p);

	vt_odp_buf_fini(&pin);
	vt_loopback_destroy(&lb);
	ibv_close_device(ctx);
	return tap_done();
}
