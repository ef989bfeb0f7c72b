// SPDX-License-Identifier: GPL-2.0
/*
 * One ODP fault per message, not per packet. The first packet of a message that needs
 * a page makes the rest of the message in that MR ready at once (up to 2 MiB per
 * fault): a first-touch 1 MiB RDMA WRITE, READ or SEND between untouched ODP MRs costs
 * one fault on each side and 256 pages faulted and linked on each, where faulting
 * packet by packet costs one fault per page. Both sides are the same device here, so
 * the counters give totals: two faults in all means one on each side, since each side
 * has to fault at least once.
 *
 * Also: a message that spans three pages unaligned (1 fault, 3 pages per side); an
 * 8 MiB WRITE made ready in 2 MiB pieces (4 faults per side); a WRITE whose destination
 * is invalidated again and again while its packets go in (refaults, no error, every
 * byte right); a WRITE that runs into a page it may not write (the packet that reaches
 * it fails, the ones before it land, as without the look-ahead).
 *
 * Buffers are advised MADV_NOHUGEPAGE: a transparent huge page is taken whole on its
 * first fault (odp_huge tests that), which would change the counts.
 *
 * vmtest-class: dma
 */
#include "lib/odp.h"
#include "tap.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MSG_SIZE	(1UL << 20)
#define LARGE_SIZE	(8UL << 20)
/* The most of a message one fault takes (RXE_ODP_AHEAD_MAX in rxe_odp.c). */
#define AHEAD_MAX	(2UL << 20)
/* A WRITE under invalidation: large enough to take many packets, rounds to see one hit. */
#define CHURN_SIZE	(16UL << 20)
#define CHURN_ROUNDS	50
/*
 * Refaults after which the churn stops and lets the WRITE finish: on a slow kernel
 * (the debug one, on a loaded host) every piece can be taken away again before its
 * packets are in, and the WRITE would not finish in time.
 */
#define CHURN_REFAULTS	16
#define CHECKS		8

static struct vt_options opt;
static struct ibv_context *ctx;
static long page_size;

/* An untouched ODP buffer without transparent huge pages. */
static bool odp_buf(struct vt_odp_buf *b, struct ibv_pd *pd, size_t size)
{
	if (!vt_odp_buf_init(b, pd, size, 0, VT_ODP_ACCESS))
		return false;
	if (madvise(b->p, size, MADV_NOHUGEPAGE)) {
		tap_diag("madvise(MADV_NOHUGEPAGE): %s", strerror(errno));
		vt_odp_buf_fini(b);
		return false;
	}
	return true;
}

/*
 * A first-touch move of @len bytes between fresh ODP buffers, @src_off and @dst_off
 * into them; true when it moved the right bytes with @faults faults and @pages pages
 * faulted (and linked, on this DMA path) in all.
 */
static bool first_touch(struct vt_loopback *lb, enum ibv_wr_opcode op, size_t len,
			size_t src_off, size_t dst_off, long faults, long pages,
			unsigned int seed, const char *what)
{
	long b[VT_ODP_NCOUNTERS], a[VT_ODP_NCOUNTERS], d[VT_ODP_NCOUNTERS] = { 0 };
	size_t size = len + 2 * page_size;
	struct vt_odp_buf src, dst;
	bool ok = false, moved;
	long bad = -1;

	if (!odp_buf(&src, lb->pd, size))
		return false;
	if (!odp_buf(&dst, lb->pd, size)) {
		vt_odp_buf_fini(&src);
		return false;
	}
	/* The CPU writes the source; the device has touched neither buffer. */
	vt_fill(src.p + src_off, len, seed);
	if (vt_odp_snapshot(ctx, opt.port, b)) {
		moved = vt_move(lb, op, src.p + src_off, src.mr, dst.p + dst_off, dst.mr, len);
		if (moved)
			bad = vt_check(dst.p + dst_off, len, seed);
		if (vt_odp_snapshot(ctx, opt.port, a)) {
			vt_odp_delta(b, a, d);
			ok = moved && bad < 0 && d[VT_ODP_PAGE_FAULTS] == faults &&
			     d[VT_ODP_PAGES_FAULTED] == pages &&
			     d[VT_ODP_PAGES_LINKED] == vt_odp_linked(ctx, &opt, pages) &&
			     d[VT_ODP_FAULT_ERRORS] == 0;
		}
	}
	if (bad >= 0)
		tap_diag("byte %ld of %zu differs", bad, len);
	tap_ok(ok, "%s: %ld faults, %ld pages faulted, %ld linked (want %ld, %ld, %ld)", what,
	       d[VT_ODP_PAGE_FAULTS], d[VT_ODP_PAGES_FAULTED], d[VT_ODP_PAGES_LINKED], faults,
	       pages, vt_odp_linked(ctx, &opt, pages));
	vt_odp_buf_fini(&dst);
	vt_odp_buf_fini(&src);
	return ok;
}

struct churn {
	unsigned char *p;
	size_t size;
	/* The device's page fault count at which the WRITE has refaulted enough. */
	long faults_enough;
	atomic_bool stop;
	atomic_long rounds;
	int err;
};

/*
 * Invalidate the destination again and again without taking anything from the writer:
 * mprotect() adding and removing PROT_EXEC changes the page tables (an invalidation
 * for every ODP MR on them) and keeps the pages and their write permission. Until the
 * WRITE is done, or has refaulted CHURN_REFAULTS times.
 */
static void *churn_thread(void *arg)
{
	struct churn *c = arg;

	while (!atomic_load(&c->stop)) {
		if (mprotect(c->p, c->size, PROT_READ | PROT_WRITE | PROT_EXEC) ||
		    mprotect(c->p, c->size, PROT_READ | PROT_WRITE)) {
			c->err = errno;
			break;
		}
		atomic_fetch_add(&c->rounds, 1);
		if (vt_hw_counter(ctx, opt.port, "odp_page_faults") >= c->faults_enough)
			break;
	}
	return NULL;
}

/*
 * A large WRITE whose destination is invalidated while its packets go in: each round
 * must complete with every byte right and no fault error. A round shows that an
 * invalidation hit a prepared piece when it took more faults than the pieces need
 * (those refaults); rounds go on until one did, at most CHURN_ROUNDS.
 */
static void test_churn(struct vt_loopback *lb)
{
	long b[VT_ODP_NCOUNTERS], a[VT_ODP_NCOUNTERS], d[VT_ODP_NCOUNTERS];
	long pieces = 2 * (CHURN_SIZE / AHEAD_MAX), refaulted = 0, invalidations = 0;
	struct churn c = { 0 };
	struct vt_odp_buf src, dst;
	int round, ok_rounds = 0;
	pthread_t thread;
	long bad = -1;
	bool ok = true;

	if (!odp_buf(&src, lb->pd, CHURN_SIZE) || !odp_buf(&dst, lb->pd, CHURN_SIZE))
		tap_bail("cannot register %lu MiB ODP MRs", CHURN_SIZE >> 20);
	c.p = dst.p;
	c.size = CHURN_SIZE;
	for (round = 0; round < CHURN_ROUNDS && ok && !refaulted; round++) {
		/* Untouched by the device again, so that every piece needs its fault. */
		if (madvise(src.p, CHURN_SIZE, MADV_DONTNEED) ||
		    madvise(dst.p, CHURN_SIZE, MADV_DONTNEED))
			tap_bail("madvise(MADV_DONTNEED): %s", strerror(errno));
		vt_fill(src.p, CHURN_SIZE, 0xc400 + round);
		if (!vt_odp_snapshot(ctx, opt.port, b))
			break;
		c.faults_enough = b[VT_ODP_PAGE_FAULTS] + pieces + CHURN_REFAULTS;
		atomic_store(&c.stop, false);
		if (pthread_create(&thread, NULL, churn_thread, &c))
			tap_bail("pthread_create failed");
		ok = vt_move(lb, IBV_WR_RDMA_WRITE, src.p, src.mr, dst.p, dst.mr, CHURN_SIZE);
		atomic_store(&c.stop, true);
		pthread_join(thread, NULL);
		if (c.err) {
			tap_diag("mprotect: %s", strerror(c.err));
			ok = false;
		}
		if (ok) {
			bad = vt_check(dst.p, CHURN_SIZE, 0xc400 + round);
			if (bad >= 0)
				tap_diag("round %d: byte %ld of %lu differs", round, bad, CHURN_SIZE);
			ok = bad < 0;
		}
		if (!vt_odp_snapshot(ctx, opt.port, a)) {
			ok = false;
			break;
		}
		vt_odp_delta(b, a, d);
		if (d[VT_ODP_FAULT_ERRORS]) {
			tap_diag("round %d: %ld fault errors", round, d[VT_ODP_FAULT_ERRORS]);
			ok = false;
		}
		invalidations += d[VT_ODP_INVALIDATIONS];
		if (d[VT_ODP_PAGE_FAULTS] > pieces)
			refaulted = d[VT_ODP_PAGE_FAULTS] - pieces;
		ok_rounds += ok;
	}
	tap_ok(ok && ok_rounds == round,
	       "%d WRITEs of %lu MiB with the destination invalidated meanwhile (%ld mprotect rounds): "
	       "all completed, every byte right, no fault error", round, CHURN_SIZE >> 20,
	       atomic_load(&c.rounds));
	/* Without a refault the rounds proved nothing about a prepared piece taken away. */
	tap_ok(refaulted > 0,
	       "an invalidation hit the WRITE's prepared pages: %ld faults beyond the %ld pieces, "
	       "%ld invalidations", refaulted, pieces, invalidations);
	vt_odp_buf_fini(&dst);
	vt_odp_buf_fini(&src);
}

/*
 * A 1 MiB WRITE whose destination's last page the process may not write: the fault
 * ahead fails there, so the packets are faulted one by one again until the one that
 * reaches that page, which fails with the error completion it always had.
 */
static void test_hole(struct vt_loopback *lb)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	size_t hole = MSG_SIZE - page_size;
	struct vt_odp_buf src, dst;
	enum ibv_wc_status status = IBV_WC_SUCCESS;
	long bad = 0;
	bool ok;

	if (!odp_buf(&src, lb->pd, MSG_SIZE) || !odp_buf(&dst, lb->pd, MSG_SIZE))
		tap_bail("cannot register 1 MiB ODP MRs");
	vt_fill(src.p, MSG_SIZE, 0xd0);
	ok = mprotect(dst.p + hole, page_size, PROT_READ) == 0 &&
	     vt_odp_snapshot(ctx, opt.port, b) &&
	     vt_rdma(lb, IBV_WR_RDMA_WRITE, src.p, src.mr, dst.p, dst.mr, MSG_SIZE, &status) == 0 &&
	     vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	if (ok)
		bad = vt_check(dst.p, hole, 0xd0);
	tap_ok(ok && status == IBV_WC_REM_ACCESS_ERR && bad < 0 && d[VT_ODP_FAULT_ERRORS] >= 1,
	       "WRITE of 1 MiB into an MR whose last page is read-only: %s, the %zu bytes before "
	       "it %s, %ld fault errors", ibv_wc_status_str(status), hole,
	       bad < 0 ? "landed" : "did not land", d[VT_ODP_FAULT_ERRORS]);
	vt_odp_buf_fini(&dst);
	vt_odp_buf_fini(&src);
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	struct vt_loopback lb;
	long pages = MSG_SIZE / sysconf(_SC_PAGESIZE);

	page_size = sysconf(_SC_PAGESIZE);
	ctx = vt_odp_start(argc, argv, &opt, CHECKS, VT_NEED_ODP | VT_NEED_COUNTERS,
			   "per-message ODP fault", &attr);
	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");

	first_touch(&lb, IBV_WR_RDMA_WRITE, MSG_SIZE, 0, 0, 2, 2 * pages, 0xa1,
		    "first-touch RDMA WRITE of 1 MiB");
	first_touch(&lb, IBV_WR_RDMA_READ, MSG_SIZE, 0, 0, 2, 2 * pages, 0xa2,
		    "first-touch RDMA READ of 1 MiB");
	first_touch(&lb, IBV_WR_SEND, MSG_SIZE, 0, 0, 2, 2 * pages, 0xa3,
		    "first-touch SEND/RECV of 1 MiB");
	/* [page - 100, 2 pages + 100): three pages on each side. */
	first_touch(&lb, IBV_WR_RDMA_WRITE, page_size + 200, page_size - 100, page_size - 100,
		    2, 6, 0xa4, "first-touch RDMA WRITE over 3 pages, unaligned");
	first_touch(&lb, IBV_WR_RDMA_WRITE, LARGE_SIZE, 0, 0, 2 * (LARGE_SIZE / AHEAD_MAX),
		    2 * (LARGE_SIZE / page_size), 0xa5,
		    "first-touch RDMA WRITE of 8 MiB, in 2 MiB pieces");
	test_churn(&lb);
	/* A new pair: a WRITE of the churn that failed may still be posted on the old one. */
	vt_loopback_destroy(&lb);
	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");
	test_hole(&lb);

	vt_loopback_destroy(&lb);
	ibv_close_device(ctx);
	return tap_done();
}
