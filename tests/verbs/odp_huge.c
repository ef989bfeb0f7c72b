// SPDX-License-Identifier: GPL-2.0
/*
 * ODP MRs on huge pages: 2 MiB hugetlb memory registered with IBV_ACCESS_HUGETLB, and
 * transparent huge pages in an ordinary ODP MR. The counters show that a huge page
 * faults as one entry of the MR (hugetlb), counted as the base pages it holds, as mlx5
 * counts them, and that a THP faults in one go; every byte is checked. The suite reserves the hugetlb pages; without them those checks skip.
 *
 * vmtest-class: dma
 */
#include "lib/odp.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_SIZE	(2UL << 20)
#define NHUGE		2
#define HUGETLB_CHECKS	4
#define THP_CHECKS	2
#define HUGETLB_FREE	"/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages"

static struct vt_options opt;
static struct ibv_context *ctx;

static void test_hugetlb(struct vt_loopback *lb, struct ibv_mr *pinned_mr, unsigned char *pinned)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	size_t size = NHUGE * HUGE_SIZE;
	long pages = size / (size_t)sysconf(_SC_PAGESIZE);
	struct ibv_mr *mr;
	unsigned char *p;
	long free_huge;
	bool ok;
	int i;

	/* Skipped only when no huge pages are free; a failure with free pages fails. */
	free_huge = vt_read_long(HUGETLB_FREE);
	if (free_huge < NHUGE) {
		for (i = 0; i < HUGETLB_CHECKS; i++)
			tap_skip("fewer than 2 free 2 MiB hugetlb pages (vm.nr_hugepages)",
				 "ODP on hugetlb memory, check %d", i + 1);
		return;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (p == MAP_FAILED) {
		tap_diag("mmap(MAP_HUGETLB) of %zu bytes: %s", size, strerror(errno));
		for (i = 0; i < HUGETLB_CHECKS; i++)
			tap_ok(false, "ODP on hugetlb memory, check %d: %ld huge pages free, no mapping",
			       i + 1, free_huge);
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
	       d[VT_ODP_PAGES_FAULTED] == pages &&
	       d[VT_ODP_PAGES_LINKED] == vt_odp_linked(ctx, &opt, pages),
	       "RDMA WRITE of %d huge pages: data right, %ld faults (one per huge page), "
	       "%ld pages faulted, %ld linked (of %ld base pages)",
	       NHUGE, d[VT_ODP_PAGE_FAULTS], d[VT_ODP_PAGES_FAULTED], d[VT_ODP_PAGES_LINKED], pages);

	ok = vt_odp_snapshot(ctx, opt.port, b) && !madvise(p, size, MADV_DONTNEED) && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && d[VT_ODP_PAGES_UNLINKED] == pages && d[VT_ODP_INVALIDATIONS] >= 1,
	       "MADV_DONTNEED of the huge pages: %ld invalidations, %ld pages unlinked (of %ld)",
	       d[VT_ODP_INVALIDATIONS], d[VT_ODP_PAGES_UNLINKED], pages);

	memset(pinned, 0xff, size);
	ok = vt_move(lb, IBV_WR_RDMA_READ, p, mr, pinned, pinned_mr, size);
	for (i = 0; ok && i < (int)size; i++)
		ok = !pinned[i];
	tap_ok(ok, "RDMA READ after MADV_DONTNEED: the new, zeroed huge pages");
	ibv_dereg_mr(mr);
	munmap(p, size);
}

/* Whether THPs can back an madvised range: "always" or "madvise" is selected. */
static bool thp_enabled(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char line[128] = "";

	if (!f)
		return false;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	return !strstr(line, "[never]") && (strstr(line, "[always]") || strstr(line, "[madvise]"));
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

/*
 * A transparent huge page, present before the MR is used: one fault maps all of it.
 * That a THP backs the range is checked first: without it "1 fault" proves nothing.
 */
static void test_thp(struct vt_loopback *lb, struct ibv_mr *pinned_mr, unsigned char *pinned)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	long page_size = sysconf(_SC_PAGESIZE), kb;
	struct vt_thp_range r;
	struct ibv_mr *mr;
	bool ok;

	if (!thp_enabled()) {
		for (int i = 0; i < THP_CHECKS; i++)
			tap_skip("transparent huge pages are off (transparent_hugepage/enabled)",
				 "ODP on a transparent huge page, check %d", i + 1);
		return;
	}
	if (!vt_thp_map(&r))
		tap_bail("no memory for a huge page range");
	vt_fill(r.p, HUGE_SIZE, 81);
	kb = vt_anon_huge_kb(r.p);
	if (!tap_ok(kb >= (long)(HUGE_SIZE >> 10),
		    "the 2 MiB range is backed by a transparent huge page (AnonHugePages %ld kB)", kb)) {
		tap_ok(false, "RDMA READ of a 2 MiB transparent huge page range: no THP to take whole");
		vt_thp_unmap(&r);
		return;
	}
	mr = ibv_reg_mr(lb->pd, r.p, HUGE_SIZE, VT_ODP_ACCESS);
	ok = mr && vt_odp_snapshot(ctx, opt.port, b) &&
	     vt_move(lb, IBV_WR_RDMA_READ, r.p, mr, pinned, pinned_mr, HUGE_SIZE) &&
	     vt_odp_snapshot(ctx, opt.port, a);
	if (ok)
		vt_odp_delta(b, a, d);
	tap_ok(ok && vt_check(pinned, HUGE_SIZE, 81) < 0 && d[VT_ODP_PAGE_FAULTS] == 1 &&
	       d[VT_ODP_PAGES_FAULTED] == (long)(HUGE_SIZE / page_size) &&
	       d[VT_ODP_PAGES_LINKED] == vt_odp_linked(ctx, &opt, HUGE_SIZE / page_size),
	       "RDMA READ of a 2 MiB transparent huge page range: data right, %ld fault, %ld pages, %ld linked",
	       d[VT_ODP_PAGE_FAULTS], d[VT_ODP_PAGES_FAULTED], d[VT_ODP_PAGES_LINKED]);
	if (mr)
		ibv_dereg_mr(mr);
	vt_thp_unmap(&r);
}

/*
 * The other side of taking a THP whole: where small pages map a 2 MiB-aligned range
 * (MADV_NOHUGEPAGE), all of them present, a READ of one page faults and links that page
 * alone. A widening that does not ask how the page is mapped would take all 512.
 */
static void test_small_pages(struct vt_loopback *lb, struct ibv_mr *pinned_mr,
			     unsigned char *pinned)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	long page_size = sysconf(_SC_PAGESIZE);
	unsigned char *raw, *p;
	struct ibv_mr *mr = NULL;
	bool ok;

	raw = vt_map_anon(2 * HUGE_SIZE, PROT_READ | PROT_WRITE, 0);
	if (!raw)
		tap_bail("no memory for a 2 MiB range");
	p = (unsigned char *)(((uintptr_t)raw + HUGE_SIZE - 1) & ~(uintptr_t)(HUGE_SIZE - 1));
	ok = madvise(p, HUGE_SIZE, MADV_NOHUGEPAGE) == 0;
	if (!ok)
		tap_diag("madvise(MADV_NOHUGEPAGE): %s", strerror(errno));
	vt_fill(p, HUGE_SIZE, 82);
	ok = ok && vt_anon_huge_kb(p) == 0;
	if (ok)
		mr = ibv_reg_mr(lb->pd, p, HUGE_SIZE, VT_ODP_ACCESS);
	ok = ok && mr && vt_odp_snapshot(ctx, opt.port, b) &&
	     vt_move(lb, IBV_WR_RDMA_READ, p + 5 * page_size, mr, pinned, pinned_mr, page_size) &&
	     vt_odp_snapshot(ctx, opt.port, a);
	if (ok)
		vt_odp_delta(b, a, d);
	tap_ok(ok && memcmp(pinned, p + 5 * page_size, page_size) == 0 &&
	       d[VT_ODP_PAGE_FAULTS] == 1 && d[VT_ODP_PAGES_FAULTED] == 1 &&
	       d[VT_ODP_PAGES_LINKED] == vt_odp_linked(ctx, &opt, 1),
	       "RDMA READ of one small page of a present 2 MiB range: data right, %ld fault, %ld pages, %ld linked",
	       d[VT_ODP_PAGE_FAULTS], d[VT_ODP_PAGES_FAULTED], d[VT_ODP_PAGES_LINKED]);
	if (mr)
		ibv_dereg_mr(mr);
	munmap(raw, 2 * HUGE_SIZE);
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	struct vt_odp_buf pin;
	struct vt_loopback lb;

	ctx = vt_odp_start(argc, argv, &opt, HUGETLB_CHECKS + 1 + 1 + THP_CHECKS,
			   VT_NEED_ODP | VT_NEED_COUNTERS, "huge page ODP", &attr);
	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");
	if (!vt_odp_buf_init(&pin, lb.pd, NHUGE * HUGE_SIZE, 0, VT_PINNED_ACCESS))
		tap_bail("cannot register a pinned MR");

	test_hugetlb(&lb, pin.mr, pin.p);
	test_hugetlb_refused(lb.pd);
	test_small_pages(&lb, pin.mr, pin.p);
	test_thp(&lb, pin.mr, pin.p);

	vt_odp_buf_fini(&pin);
	vt_loopback_destroy(&lb);
	ibv_close_device(ctx);
	return tap_done();
}
