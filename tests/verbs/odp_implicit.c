// SPDX-License-Identifier: GPL-2.0
/*
 * Implicit ODP: one MR for the whole address space, ibv_reg_mr(pd, NULL, SIZE_MAX,
 * IBV_ACCESS_ON_DEMAND | ...), used by its lkey for local buffers and by its rkey for
 * remote access, at addresses far apart, across the boundary of the driver's child
 * ranges, after invalidations, with atomics, and at an address with nothing mapped
 * (an access error, not a kernel report). Every byte is checked; the ODP counters show
 * the faults and invalidations.
 */
#include "lib/odp.h"
#include "lib/tap.h"

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

#define RC_CAPS (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | \
		 IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC)

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	unsigned char *near, *far;
	struct vt_loopback lb;

	page_size = sysconf(_SC_PAGESIZE);
	buf_size = NPAGES * page_size;
	ctx = vt_odp_start(argc, argv, &opt, 2 + VT_NTRANSFERS + 1 + 2 + 1 + 1 + 1,
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

	tap_ok(!ibv_dereg_mr(imr), "implicit MR deregistered after traffic");
	munmap(far, buf_size);
	munmap(near, buf_size);
	vt_loopback_destroy(&lb);
	ibv_close_device(ctx);
	return tap_done();
}
