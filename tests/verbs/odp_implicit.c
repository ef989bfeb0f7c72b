// SPDX-License-Identifier: GPL-2.0
/*
 * Implicit ODP: one MR for the whole address space, ibv_reg_mr(pd, NULL, SIZE_MAX,
 * IBV_ACCESS_ON_DEMAND | ...), used by its lkey for local buffers and by its rkey for
 * remote access, at addresses far apart, across the boundary of the driver's child
 * ranges, after invalidations, with atomics, and at an address with nothing mapped
 * (an access error, not a kernel report), also many times over far apart, which must
 * cost the kernel nothing. Every byte is checked; the ODP counters show the faults and
 * invalidations.
 *
 * vmtest-class: dma
 */
#include "lib/odp.h"
#include "tap.h"

#include <stdlib.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NPAGES		16
/* Where the far buffer goes: 100 GiB below the near one, past any child range. */
#define FAR_OFFSET	(100ULL << 30)
/* The size of rxe's child ranges; any power of two up to it works the same. */
#define CHILD_SIZE	(256ULL << 20)
/* Accesses into unmapped memory, each in a window of its own; their kernel memory. */
#define HOLE_TRIES	64
#define HOLE_STRIDE	(1ULL << 30)
#define HOLE_KB_MAX	4096	/* a child each: 512 KiB * HOLE_TRIES * 3 kinds */

static struct vt_options opt;
static struct ibv_context *ctx;
static size_t page_size, buf_size;
static struct ibv_mr *imr;

/* Map size bytes at exactly addr (a hint that must be taken), or NULL. */
static unsigned char *map_at(uintptr_t addr, size_t size)
{
	void *p = mmap((void *)addr, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED) {
		tap_diag("mmap(%zu bytes at %#lx): %s", size, (unsigned long)addr,
			 strerror(errno));
		return NULL;
	}
	return p;
}

static bool move(struct vt_loopback *lb, enum ibv_wr_opcode op, void *src, void *dst,
		 size_t len)
{
	return vt_move(lb, op, src, imr, dst, imr, len);
}

static void test_far_apart(struct vt_loopback *lb, unsigned char *near, unsigned char *far)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	int i;

	for (i = 0; i < VT_NTRANSFERS; i++) {
		const struct vt_transfer *t = &vt_transfers[i];
		bool ok;

		/* Both buffers new to the device: the transfer faults on both sides. */
		ok = !madvise(near, buf_size, MADV_DONTNEED) &&
		     !madvise(far, buf_size, MADV_DONTNEED);
		vt_fill(near, buf_size, 40 + i);
		ok = ok && vt_odp_counters(ctx, opt.port, b) &&
		     move(lb, t->op, near, far, buf_size) &&
		     vt_odp_counters(ctx, opt.port, a);
		vt_odp_delta(b, a, d);
		tap_ok(ok && vt_check(far, buf_size, 40 + i) < 0 && d[VT_ODP_PAGE_FAULTS] >= 2,
		       "%s through the implicit MR, %llu GiB apart: data right, %ld faults",
		       t->name, FAR_OFFSET >> 30, d[VT_ODP_PAGE_FAULTS]);
	}
}

/* A transfer whose destination straddles the boundary of two child ranges. */
static void test_child_boundary(struct vt_loopback *lb, unsigned char *near, uintptr_t base)
{
	uintptr_t boundary = (base + 2 * CHILD_SIZE) & ~(CHILD_SIZE - 1);
	unsigned char *p = map_at(boundary - 2 * page_size, 4 * page_size);
	bool ok;

	if (!p) {
		tap_ok(false, "RDMA WRITE across a child range boundary: no memory there");
		return;
	}
	vt_fill(near, 4 * page_size, 50);
	ok = move(lb, IBV_WR_RDMA_WRITE, near + 5, p + 3, 4 * page_size - 8);
	tap_ok(ok && !memcmp(p + 3, near + 5, 4 * page_size - 8),
	       "RDMA WRITE of %zu bytes across the %llu MiB boundary at %#lx: data right",
	       4 * page_size - 8, CHILD_SIZE >> 20, (unsigned long)boundary);
	munmap(p, 4 * page_size);
}

static void test_invalidations(struct vt_loopback *lb, unsigned char *near, unsigned char *far)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	bool ok;

	/* The far buffer is faulted and linked from the previous checks. */
	ok = vt_odp_counters(ctx, opt.port, b) && !madvise(far, buf_size, MADV_DONTNEED);
	vt_fill(near, buf_size, 60);
	ok = ok && move(lb, IBV_WR_RDMA_WRITE, near, far, buf_size) &&
	     vt_odp_counters(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && vt_check(far, buf_size, 60) < 0 && d[VT_ODP_INVALIDATIONS] >= 1 &&
	       d[VT_ODP_PAGES_UNLINKED] >= NPAGES && d[VT_ODP_PAGES_FAULTED] >= NPAGES,
	       "MADV_DONTNEED, then RDMA WRITE: data right, %ld invalidations, %ld pages unlinked, %ld faulted again",
	       d[VT_ODP_INVALIDATIONS], d[VT_ODP_PAGES_UNLINKED], d[VT_ODP_PAGES_FAULTED]);

	/* New memory at the same address: the device must see the new pages. */
	ok = !munmap(far, buf_size) && map_at((uintptr_t)far, buf_size);
	vt_fill(far, buf_size, 61);
	memset(near, 0, buf_size);
	ok = ok && move(lb, IBV_WR_RDMA_READ, far, near, buf_size);
	tap_ok(ok && vt_check(near, buf_size, 61) < 0,
	       "munmap + mmap at the same address, then RDMA READ: the new data");
}

static void test_atomic(struct vt_loopback *lb, unsigned char *near, unsigned char *far)
{
	uint64_t *target = (uint64_t *)(far + page_size), *result = (uint64_t *)near;
	struct ibv_sge sge = { (uintptr_t)result, 8, imr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
	bool ok;

	*target = 1000;
	*result = 0;
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = imr->rkey;
	wr.wr.atomic.compare_add = 234;
	ok = !vt_post_send_wait(lb, lb->qp[0], &wr);
	tap_ok(ok && *result == 1000 && *target == 1234,
	       "FETCH_AND_ADD through the implicit rkey: returned %llu, now %llu",
	       (unsigned long long)*result, (unsigned long long)*target);
}

/* Nothing mapped at the address: a remote access error completion, last (the QP dies). */
static void test_unmapped(struct vt_loopback *lb, unsigned char *near, uintptr_t hole)
{
	enum ibv_wc_status status = IBV_WC_SUCCESS;
	int ret;

	ret = vt_rdma(lb, IBV_WR_RDMA_WRITE, near, imr, (void *)hole, imr, page_size, &status);
	tap_ok(!ret && status == IBV_WC_REM_ACCESS_ERR,
	       "RDMA WRITE through the implicit rkey to an unmapped address: %s",
	       ret ? "no completion" : ibv_wc_status_str(status));
}

/* Slab plus vmalloc memory of the kernel, in kB, from /proc/meminfo; -1 if unreadable. */
static long kernel_kb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	long slab = -1, vmalloc = -1, v;
	char line[128];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Slab: %ld kB", &v) == 1)
			slab = v;
		else if (sscanf(line, "VmallocUsed: %ld kB", &v) == 1)
			vmalloc = v;
	}
	fclose(f);
	return slab < 0 || vmalloc < 0 ? -1 : slab + vmalloc;
}

/*
 * Many accesses into unmapped memory, each in a window of its own: an RDMA WRITE (a
 * remote access error), a prefetch (EFAULT) and a prefetch without faults (nothing to
 * do). The driver once kept the 512 KiB page list of a child range for each until the
 * MR went away, so a peer's failed WRITEs could exhaust the kernel's memory.
 */
static void test_holes_cost_nothing(unsigned char *near, uintptr_t hole)
{
	int writes = 0, prefetches = 0, no_fault = 0, tried = 0, i;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, NULL, SIZE_MAX, VT_ODP_ACCESS) : NULL;
	long before = kernel_kb(), grew = 0;
	struct vt_loopback lb;

	for (i = 0; mr && i < HOLE_TRIES; i++) {
		uintptr_t a = hole + i * HOLE_STRIDE;
		struct ibv_sge sge = { a + CHILD_SIZE, (uint32_t)page_size, mr->lkey };
		enum ibv_wc_status status = IBV_WC_SUCCESS;
		void *probe;

		/* Only a window with nothing mapped at all: one the test can map itself. */
		probe = mmap((void *)a, HOLE_STRIDE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
			     MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
		if (probe != MAP_FAILED)
			munmap(probe, HOLE_STRIDE);
		if (probe != (void *)a)
			continue;
		tried++;
		/* The WRITE kills its QP pair: one pair each. */
		if (vt_loopback_create_on(&lb, ctx, &opt, pd))
			break;
		if (!vt_rdma(&lb, IBV_WR_RDMA_WRITE, near, mr, (void *)a, mr, page_size,
			     &status) && status == IBV_WC_REM_ACCESS_ERR)
			writes++;
		vt_loopback_destroy(&lb);
		if (vt_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH,
				 &sge, 1, NULL) == EFAULT)
			prefetches++;
		sge.addr = a + 2 * CHILD_SIZE;
		if (!vt_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
				  IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1, NULL))
			no_fault++;
	}
	if (before >= 0)
		grew = kernel_kb() - before;
	tap_ok(mr && before >= 0 && tried >= HOLE_TRIES / 2 && writes == tried &&
	       prefetches == tried && no_fault == tried && grew < HOLE_KB_MAX,
	       "%d RDMA WRITEs, prefetches and prefetches without faults into unmapped "
	       "memory, each in a window of its own: %d remote access errors, %d EFAULT, "
	       "%d done; the kernel's memory grew %ld kB (less than %d)", tried, writes,
	       prefetches, no_fault, grew, HOLE_KB_MAX);
	if (mr)
		ibv_dereg_mr(mr);
	if (pd)
		ibv_dealloc_pd(pd);
}

#define RC_CAPS (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | \
		 IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC)

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	unsigned char *near, *far;
	struct vt_loopback lb;

	page_size = sysconf(_SC_PAGESIZE);
	buf_size = NPAGES * page_size;
	ctx = vt_odp_start(argc, argv, &opt, 2 + VT_NTRANSFERS + 1 + 2 + 1 + 1 + 1 + 1,
			   VT_NEED_IMPLICIT, "implicit ODP", &attr);
	/* Implicit ODP is only of use with the RC operations the checks below make. */
	tap_ok((attr.odp_caps.per_transport_caps.rc_odp_caps & RC_CAPS) == RC_CAPS,
	       "implicit ODP comes with RC ODP SEND, RECV, WRITE, READ and ATOMIC (rc caps 0x%x)",
	       attr.odp_caps.per_transport_caps.rc_odp_caps);
	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");

	imr = ibv_reg_mr(lb.pd, NULL, SIZE_MAX, VT_ODP_ACCESS);
	if (!tap_ok(imr != NULL, "implicit ODP MR registered: %s",
		    imr ? "ok" : strerror(errno)))
		tap_bail("no implicit MR");

	near = vt_map_anon(buf_size, PROT_READ | PROT_WRITE, 0);
	far = near ? map_at((uintptr_t)near - FAR_OFFSET, buf_size) : NULL;
	if (!far)
		tap_bail("cannot map the test buffers");
	test_far_apart(&lb, near, far);
	test_child_boundary(&lb, near, (uintptr_t)far + buf_size);
	test_invalidations(&lb, near, far);
	test_atomic(&lb, near, far);
	test_unmapped(&lb, near, (uintptr_t)far - FAR_OFFSET);
	test_holes_cost_nothing(near, (uintptr_t)far - FAR_OFFSET - HOLE_TRIES * HOLE_STRIDE);

	tap_ok(!ibv_dereg_mr(imr), "implicit MR deregistered after traffic");
	munmap(far, buf_size);
	munmap(near, buf_size);
	vt_loopback_destroy(&lb);
	ibv_close_device(ctx);
	return tap_done();
}
