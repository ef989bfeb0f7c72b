// SPDX-License-Identifier: GPL-2.0
/*
 * rxe's ODP fault path takes a transparent huge page whole: after a fault for the pages
 * a request needs, it drops the MR's lock and takes the rest of the huge page as it is
 * (present only, without faulting). If the mapping changes in that window
 * (MADV_DONTNEED, then a CPU read that maps the huge zero page), the pages the request
 * needs must be faulted again: a device write must never go through a page taken
 * present only. Otherwise the write lands in the huge zero page, which every process
 * then reads as not zero.
 *
 * held: with rxe's test hook (CONFIG_RDMA_RXE_ODP_TEST_HOOKS), an RDMA WRITE is held in
 * that window while this program changes the mapping: the race, every time.
 * stress: without the hook, a thread keeps replacing, invalidating and reading a huge
 * page range while small RDMA WRITEs go into it, for a bounded time: no write may fail,
 * and the huge zero page stays zero.
 */
#include "lib/odp.h"
#include "lib/tap.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define HUGE_SIZE	(2UL << 20)
#define HELD_CHECKS	5
#define STRESS_CHECKS	3
#define HOLD_PARAM	VT_RXE_PARAMS "odp_test_widen_hold"
#define STRESS_SECONDS	3

static struct vt_options opt;
static struct ibv_context *ctx;
static long page_size;

/* 8 bytes no page of zeros or of another seed holds. */
static uint64_t word(unsigned int seed)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL * (seed + 1);

	x ^= x >> 31;
	return x * 0xbf58476d1ce4e5b9ULL | 1;
}

/*
 * A THP range written (zeros) by the CPU under an ODP MR on pd, its first check (that
 * a THP backs it) reported. NULL when it is not a THP: the other checks - 1 of the
 * case are then reported failed.
 */
static struct ibv_mr *thp_setup(struct vt_thp_range *r, struct ibv_pd *pd, const char *what,
				int checks)
{
	struct ibv_mr *mr;
	long kb;
	int k;

	if (!vt_thp_map(r))
		tap_bail("no memory for a huge page range");
	memset(r->p, 0, HUGE_SIZE);
	kb = vt_anon_huge_kb(r->p);
	if (!tap_ok(kb >= (long)(HUGE_SIZE >> 10),
		    "%s: the range is backed by a transparent huge page (AnonHugePages %ld kB)",
		    what, kb)) {
		for (k = 1; k < checks; k++)
			tap_ok(false, "%s, check %d: no THP to take whole", what, k + 1);
		vt_thp_unmap(r);
		return NULL;
	}
	mr = ibv_reg_mr(pd, r->p, HUGE_SIZE, VT_ODP_ACCESS);
	if (!mr)
		tap_bail("ODP MR over the huge page range: %s", strerror(errno));
	return mr;
}

/*
 * The huge zero page is still zero: a fresh THP-aligned anonymous range, read from the
 * CPU, maps it. Returns the offset of the first byte that is not zero, or -1.
 */
static long huge_zero_page_dirty(void)
{
	struct vt_thp_range r;
	volatile unsigned char *q;
	size_t i;
	long at = -1;

	if (!vt_thp_map(&r))
		return 0;
	q = r.p;
	for (i = 0; i < HUGE_SIZE && at < 0; i++)
		if (q[i])
			at = (long)i;
	vt_thp_unmap(&r);
	return at;
}

static bool post_write(struct vt_loopback *lb, uint64_t *src, struct ibv_mr *src_mr, void *dst,
		       struct ibv_mr *dst_mr, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)src, sizeof(*src), src_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
		*bad;
	int ret;

	wr.wr.rdma.remote_addr = (uintptr_t)dst;
	wr.wr.rdma.rkey = dst_mr->rkey;
	ret = ibv_post_send(lb->qp[0], &wr, &bad);
	if (ret)
		tap_diag("ibv_post_send(RDMA WRITE): %s", strerror(ret));
	return !ret;
}

/* Never leave the hook armed: the next ODP fault of anyone would wait in it. */
static void disarm(void)
{
	vt_write_str(HOLD_PARAM, "0");
}

/* Wait for the hook to say it holds a fault in the window. */
static bool wait_held(void)
{
	long long deadline = vt_now_ms() + VT_WAIT_MS;

	while (vt_now_ms() < deadline) {
		if (vt_read_long(HOLD_PARAM) == 2)
			return true;
		usleep(1000);
	}
	return false;
}

static void test_held(struct vt_loopback *lb, uint64_t *src, struct ibv_mr *src_mr)
{
	size_t off = 5 * page_size + 64, i;
	struct ibv_mr *mr = NULL;
	struct ibv_wc wc = { .status = IBV_WC_GENERAL_ERR };
	volatile unsigned char *v;
	struct vt_thp_range r;
	bool held = false, done = false, data_ok = true;
	long long start;
	long dirty;
	int k;

	if (vt_read_long(HOLD_PARAM) < 0) {
		for (k = 0; k < HELD_CHECKS; k++)
			tap_skip("rxe has no odp_test_widen_hold parameter (CONFIG_RDMA_RXE_ODP_TEST_HOOKS=n)",
				 "RDMA WRITE held in the THP widening window, check %d", k + 1);
		return;
	}
	mr = thp_setup(&r, lb->pd, "held", HELD_CHECKS);
	if (!mr)
		return;
	*src = word(1);

	atexit(disarm);
	if (!vt_write_str(HOLD_PARAM, "1"))
		tap_bail("cannot arm %s: %s", HOLD_PARAM, strerror(errno));
	start = vt_now_ms();
	if (post_write(lb, src, src_mr, r.p + off, mr, 1))
		held = wait_held();
	tap_ok(held, "an RDMA WRITE into the THP was held in the widening window after %lld ms",
	       vt_now_ms() - start);
	if (held) {
		/* The race: the page goes away, and a read maps the huge zero page. */
		if (madvise(r.p, HUGE_SIZE, MADV_DONTNEED))
			tap_diag("madvise(MADV_DONTNEED): %s", strerror(errno));
		v = r.p;
		(void)v[off];
	}
	if (!vt_write_str(HOLD_PARAM, "0"))
		tap_diag("cannot release %s: %s", HOLD_PARAM, strerror(errno));
	if (held)
		done = !vt_poll_one(lb->send_cq, &wc, VT_WAIT_MS);
	tap_ok(done && wc.status == IBV_WC_SUCCESS,
	       "the held RDMA WRITE completes after the invalidation: %s",
	       done ? ibv_wc_status_str(wc.status) : "no completion");

	v = r.p;
	for (i = 0; i < HUGE_SIZE && data_ok; i++)
		if (i < off || i >= off + sizeof(*src))
			data_ok = !v[i];
	data_ok = data_ok && !memcmp(r.p + off, src, sizeof(*src));
	tap_ok(done && data_ok,
	       "the process reads the written bytes at offset %zu, and zeros around them", off);
	dirty = huge_zero_page_dirty();
	tap_ok(dirty < 0, "the huge zero page is still zero%s",
	       dirty < 0 ? "" : " (a fresh mapping reads a non-zero byte: the device wrote into it)");
	if (dirty >= 0)
		tap_diag("first non-zero byte of a fresh mapping at offset %ld", dirty);
	ibv_dereg_mr(mr);
	vt_thp_unmap(&r);
}

struct churn {
	unsigned char *p;
	atomic_bool stop;
	atomic_long rounds;
	atomic_int error;
};

/*
 * Replace the range by a new mapping, make it a THP from the CPU, take it away and read
 * it (the huge zero page), over and over: every state the widening can meet.
 */
static void *churn_fn(void *arg)
{
	struct churn *c = arg;
	volatile unsigned char *v = c->p;

	while (!atomic_load(&c->stop)) {
		if (mmap(c->p, HUGE_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED ||
		    madvise(c->p, HUGE_SIZE, MADV_HUGEPAGE)) {
			atomic_store(&c->error, errno);
			break;
		}
		v[0] = 1;
		sched_yield();
		if (madvise(c->p, HUGE_SIZE, MADV_DONTNEED)) {
			atomic_store(&c->error, errno);
			break;
		}
		(void)v[HUGE_SIZE / 2];
		sched_yield();
		atomic_fetch_add(&c->rounds, 1);
	}
	return NULL;
}

static void test_stress(struct ibv_pd *pd, uint64_t *src, struct ibv_mr *src_mr)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	long writes = 0, failed = 0, dirty;
	struct churn c = { 0 };
	struct vt_loopback qps, *lb = &qps;
	struct vt_thp_range r;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	long long end;
	pthread_t t;
	bool ok;

	/* A QP pair of its own: a failure of the held case leaves its pair in error. */
	if (vt_loopback_create_on(lb, ctx, &opt, pd))
		tap_bail("no connected QP pair for the stress");
	mr = thp_setup(&r, pd, "stress", STRESS_CHECKS);
	if (!mr) {
		vt_loopback_destroy(lb);
		return;
	}
	c.p = r.p;
	ok = vt_odp_snapshot(ctx, opt.port, b);
	if (pthread_create(&t, NULL, churn_fn, &c))
		tap_bail("pthread_create failed");
	end = vt_now_ms() + STRESS_SECONDS * 1000;
	srand(7);
	while (vt_now_ms() < end) {
		size_t off = ((size_t)rand() % (HUGE_SIZE / 8)) * 8;

		*src = word((unsigned int)writes + 2);
		if (!post_write(lb, src, src_mr, r.p + off, mr, (uint64_t)writes) ||
		    vt_poll_one(lb->send_cq, &wc, VT_WAIT_MS)) {
			failed++;
			break;
		}
		writes++;
		if (wc.status != IBV_WC_SUCCESS) {
			tap_diag("RDMA WRITE %ld at offset %zu: %s", writes, off,
				 ibv_wc_status_str(wc.status));
			failed++;
			break;
		}
	}
	atomic_store(&c.stop, true);
	pthread_join(t, NULL);
	ok = ok && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && !failed && !c.error && writes > 0 && atomic_load(&c.rounds) > 0 &&
	       d[VT_ODP_INVALIDATIONS] > 0,
	       "%ld 8-byte RDMA WRITEs into a THP range replaced, invalidated and read %ld times meanwhile: %ld failed, %ld invalidations%s%s",
	       writes, atomic_load(&c.rounds), failed, d[VT_ODP_INVALIDATIONS],
	       c.error ? ", mapping thread: " : "", c.error ? strerror(c.error) : "");
	dirty = huge_zero_page_dirty();
	tap_ok(dirty < 0, "after the stress, the huge zero page is still zero%s",
	       dirty < 0 ? "" : " (the device wrote into it)");
	ibv_dereg_mr(mr);
	vt_thp_unmap(&r);
	vt_loopback_destroy(lb);
}

/* Whether THP and the huge zero page are in use; else why not. */
static const char *thp_missing(void)
{
	char mode[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (!f)
		return "no transparent huge pages in this kernel";
	if (!fgets(mode, sizeof(mode), f))
		mode[0] = 0;
	fclose(f);
	if (strstr(mode, "[never]"))
		return "transparent huge pages are disabled (enabled = never)";
	if (vt_read_long("/sys/kernel/mm/transparent_hugepage/use_zero_page") != 1)
		return "the huge zero page is not used (use_zero_page = 0)";
	return NULL;
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	struct vt_odp_buf src;
	struct vt_loopback lb;
	const char *missing;
	int i;

	page_size = sysconf(_SC_PAGESIZE);
	ctx = vt_odp_start(argc, argv, &opt, HELD_CHECKS + STRESS_CHECKS,
			   VT_NEED_ODP | VT_NEED_COUNTERS, "THP widening race", &attr);
	missing = thp_missing();
	if (missing) {
		for (i = 0; i < HELD_CHECKS + STRESS_CHECKS; i++)
			tap_skip(missing, "THP widening race, check %d", i + 1);
		ibv_close_device(ctx);
		return tap_done();
	}
	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");
	if (!vt_odp_buf_init(&src, lb.pd, page_size, 0, VT_PINNED_ACCESS))
		tap_bail("cannot register a pinned MR");

	test_held(&lb, (uint64_t *)src.p, src.mr);
	test_stress(lb.pd, (uint64_t *)src.p, src.mr);

	vt_odp_buf_fini(&src);
	vt_loopback_destroy(&lb);
	ibv_close_device(ctx);
	return tap_done();
}
