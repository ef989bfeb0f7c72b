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
 * that window while this program changes the mapping: the race, every time. Each way a
 * page the device may not write can be present there has a case: the huge zero page;
 * fork (the THP shared copy-on-write with a child, whose copy must keep its zeros); KSM
 * (ksmd merges the THP's zero pages into one KSM page, which the WRITE must break, not
 * write); mprotect(PROT_READ) (the WRITE fails with a remote access error, the memory
 * keeps its zeros). The KSM case needs CONFIG_KSM (distro-mm, debug).
 * stress: without the hook, a thread keeps replacing, invalidating and reading a huge
 * page range while small RDMA WRITEs go into it, for a bounded time: no write may fail,
 * and the huge zero page stays zero.
 *
 * vmtest-class: dma
 */
#include "lib/odp.h"
#include "tap.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HUGE_SIZE	(2UL << 20)
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

/*
 * What a case does to the THP while the WRITE is held: each leaves the pages the
 * widening then finds present but not writable.
 */
enum held_change {
	/* MADV_DONTNEED, then a CPU read maps the huge zero page. */
	HELD_ZERO_PAGE,
	/* fork(): the THP becomes copy-on-write, shared with a child. */
	HELD_FORK,
	/* The THP split, ksmd merges its pages (zeros) into one KSM page. */
	HELD_KSM,
	/* mprotect(PROT_READ): the WRITE must fail. */
	HELD_READ_ONLY,
};

struct held_case {
	const char *name;
	enum held_change change;
	/* tap checks of the case; the first is thp_setup()'s. */
	int checks;
	/* NULL when the kernel can do it, else why not. */
	const char *(*unavailable)(void);
};

static const char *no_ksm(void)
{
	if (access(VT_KSM "run", W_OK))
		return VT_NO_KSM;
	return access(VT_SPLIT_HUGE_PAGES, W_OK) ? "no " VT_SPLIT_HUGE_PAGES " (debugfs)" : NULL;
}

/* Whether the page at p is merged with the range's first page (zeros, both of them). */
static bool merged(const unsigned char *range, const unsigned char *p)
{
	long long frame = vt_page_frame(p);

	return frame > 0 && frame == vt_page_frame(range);
}

static const struct held_case held_cases[] = {
	{ "the huge zero page", HELD_ZERO_PAGE, 5, NULL },
	{ "fork, the THP shared with a child", HELD_FORK, 5, NULL },
	{ "KSM merging the THP's pages", HELD_KSM, 5, no_ksm },
	{ "mprotect(PROT_READ)", HELD_READ_ONLY, 4, NULL },
};
#define NR_HELD		(sizeof(held_cases) / sizeof(held_cases[0]))

static int held_checks(void)
{
	int n = 0;
	size_t i;

	for (i = 0; i < NR_HELD; i++)
		n += held_cases[i].checks;
	return n;
}

static bool all_zero(const unsigned char *p, size_t len)
{
	const volatile unsigned char *v = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (v[i])
			return false;
	return true;
}

/* Whether the THP range p reads as zeros but for the word src at offset off. */
static bool only_word(const unsigned char *p, size_t off, const uint64_t *src)
{
	size_t end = off + sizeof(*src);

	return all_zero(p, off) && all_zero(p + end, HUGE_SIZE - end) &&
	       !memcmp(p + off, src, sizeof(*src));
}

/* The child of HELD_FORK: waits for the parent's word, then checks its copy is zeros. */
static void fork_child(int done_fd, const unsigned char *p)
{
	char c;

	while (read(done_fd, &c, 1) < 0 && errno == EINTR)
		;
	_exit(all_zero(p, HUGE_SIZE) ? 0 : 1);
}

/*
 * The change of @hc made in the window; for HELD_FORK, *child and *done_fd (the write
 * end of the pipe that tells the child to check) are set. False (said) on failure.
 */
static bool held_change(const struct held_case *hc, unsigned char *p, size_t off, pid_t *child,
			int *done_fd)
{
	long long deadline;
	int fds[2];
	bool ksm;

	switch (hc->change) {
	case HELD_ZERO_PAGE:
		if (madvise(p, HUGE_SIZE, MADV_DONTNEED)) {
			tap_diag("madvise(MADV_DONTNEED): %s", strerror(errno));
			return false;
		}
		(void)((volatile unsigned char *)p)[off];
		return true;
	case HELD_FORK:
		if (pipe(fds)) {
			tap_diag("pipe: %s", strerror(errno));
			return false;
		}
		*child = fork();
		if (*child < 0) {
			tap_diag("fork: %s", strerror(errno));
			close(fds[0]);
			close(fds[1]);
			return false;
		}
		if (!*child) {
			close(fds[1]);
			fork_child(fds[0], p);
		}
		close(fds[0]);
		*done_fd = fds[1];
		return true;
	case HELD_KSM:
		/* ksmd leaves a THP whole: split it, its small pages stay writable. */
		if (!vt_thp_split(p, HUGE_SIZE) || !vt_ksm_start(p, HUGE_SIZE))
			return false;
		deadline = vt_now_ms() + VT_WAIT_MS;
		while (!(ksm = merged(p, p + off)) && vt_now_ms() < deadline)
			usleep(1000);
		if (!ksm)
			tap_diag("KSM did not merge the page the WRITE goes to in %d s", VT_WAIT_MS / 1000);
		return ksm;
	case HELD_READ_ONLY:
		if (mprotect(p, HUGE_SIZE, PROT_READ)) {
			tap_diag("mprotect(PROT_READ): %s", strerror(errno));
			return false;
		}
		return true;
	}
	return false;
}

/*
 * An RDMA WRITE into a THP under an ODP MR, held by rxe's hook in the window where it
 * takes the THP whole without the MR's lock, while @hc changes the mapping: the pages
 * it then finds present are not writable, and the WRITE must fault its own again for
 * writing (HELD_READ_ONLY: fail), never write through them.
 */
static void test_held(struct ibv_pd *pd, uint64_t *src, struct ibv_mr *src_mr,
		      const struct held_case *hc, unsigned int seed)
{
	size_t off = 5 * page_size + 64;
	struct ibv_wc wc = { .status = IBV_WC_GENERAL_ERR };
	enum ibv_wc_status want = hc->change == HELD_READ_ONLY ? IBV_WC_REM_ACCESS_ERR :
								 IBV_WC_SUCCESS;
	struct vt_loopback qps, *lb = &qps;
	bool held = false, changed = false, done = false, child_ok = false;
	int status = 0, done_fd = -1;
	const char *why = hc->unavailable ? hc->unavailable() : NULL;
	struct vt_thp_range r;
	struct ibv_mr *mr;
	pid_t child = -1;
	long long start;
	long dirty;
	bool ksm;
	int k;

	if (vt_read_long(HOLD_PARAM) < 0)
		why = "rxe has no odp_test_widen_hold parameter (CONFIG_RDMA_RXE_ODP_TEST_HOOKS=n)";
	if (why) {
		for (k = 0; k < hc->checks; k++)
			tap_skip(why, "held WRITE, %s, check %d", hc->name, k + 1);
		return;
	}
	/* A QP pair of its own: the read-only case leaves its pair in error. */
	if (vt_loopback_create_on(lb, ctx, &opt, pd))
		tap_bail("no connected QP pair");
	mr = thp_setup(&r, pd, hc->name, hc->checks);
	if (!mr) {
		vt_loopback_destroy(lb);
		return;
	}
	*src = word(seed);

	if (!vt_write_str(HOLD_PARAM, "1"))
		tap_bail("cannot arm %s: %s", HOLD_PARAM, strerror(errno));
	start = vt_now_ms();
	if (post_write(lb, src, src_mr, r.p + off, mr, 1))
		held = wait_held();
	if (held)
		changed = held_change(hc, r.p, off, &child, &done_fd);
	tap_ok(held && changed,
	       "%s: an RDMA WRITE into the THP held in the widening window after %lld ms, %s",
	       hc->name, vt_now_ms() - start,
	       !held ? "not held" : changed ? "the mapping changed" : "the change failed");
	if (!vt_write_str(HOLD_PARAM, "0"))
		tap_diag("cannot release %s: %s", HOLD_PARAM, strerror(errno));
	if (held)
		done = !vt_poll_one(lb->send_cq, &wc, VT_WAIT_MS);
	if (!tap_ok(done && wc.status == want, "%s: the held RDMA WRITE completes with %s",
		    hc->name, ibv_wc_status_str(want)))
		tap_diag("it ended with %s", done ? ibv_wc_status_str(wc.status) : "no completion");

	if (hc->change == HELD_READ_ONLY)
		tap_ok(done && all_zero(r.p, HUGE_SIZE),
		       "%s: the read-only range still reads zeros", hc->name);
	else
		tap_ok(done && only_word(r.p, off, src),
		       "%s: the process reads the written bytes at offset %zu, and zeros around them",
		       hc->name, off);
	switch (hc->change) {
	case HELD_ZERO_PAGE:
		dirty = huge_zero_page_dirty();
		tap_ok(dirty < 0, "%s: the huge zero page is still zero%s", hc->name,
		       dirty < 0 ? "" : " (a fresh mapping reads a non-zero byte: the device wrote into it)");
		if (dirty >= 0)
			tap_diag("first non-zero byte of a fresh mapping at offset %ld", dirty);
		break;
	case HELD_FORK:
		if (child > 0) {
			close(done_fd);
			child_ok = waitpid(child, &status, 0) == child && WIFEXITED(status) &&
				   !WEXITSTATUS(status);
		}
		tap_ok(child_ok, "%s: the child's copy still reads zeros%s", hc->name,
		       child_ok || child <= 0 ? "" : " (the device wrote into the page it shares)");
		break;
	case HELD_KSM:
		/* The WRITE broke its page out of KSM: the first page still maps the KSM page. */
		ksm = merged(r.p, r.p + off);
		tap_ok(done && !ksm && merged(r.p, r.p + page_size),
		       "%s: the written page left the KSM page, which the others still share%s",
		       hc->name, ksm ? " (the device wrote into the KSM page)" : "");
		vt_ksm_stop(r.p, HUGE_SIZE);
		break;
	case HELD_READ_ONLY:
		break;
	}
	ibv_dereg_mr(mr);
	vt_thp_unmap(&r);
	vt_loopback_destroy(lb);
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
	ctx = vt_odp_start(argc, argv, &opt, held_checks() + STRESS_CHECKS,
			   VT_NEED_ODP | VT_NEED_COUNTERS, "THP widening race", &attr);
	missing = thp_missing();
	if (missing) {
		for (i = 0; i < held_checks() + STRESS_CHECKS; i++)
			tap_skip(missing, "THP widening race, check %d", i + 1);
		ibv_close_device(ctx);
		return tap_done();
	}
	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");
	if (!vt_odp_buf_init(&src, lb.pd, page_size, 0, VT_PINNED_ACCESS))
		tap_bail("cannot register a pinned MR");

	atexit(disarm);
	for (i = 0; i < (int)NR_HELD; i++)
		test_held(lb.pd, (uint64_t *)src.p, src.mr, &held_cases[i], i + 1);
	test_stress(lb.pd, (uint64_t *)src.p, src.mr);

	vt_odp_buf_fini(&src);
	vt_loopback_destroy(&lb);
	ibv_close_device(ctx);
	return tap_done();
}
