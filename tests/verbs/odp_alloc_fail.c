// SPDX-License-Identifier: GPL-2.0
/*
 * Allocations that fail in the ODP paths a process runs in its own task, injected with
 * the kernel's failslab and fail_page_alloc (CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC:
 * the distro-mm and debug profiles), scoped to this thread (task-filter and
 * /proc/thread-self/make-it-fail): the rest of the guest allocates as usual.
 *
 * Each round, with PERCENT% of this thread's allocations failing (those that may sleep
 * too, any order): register an ODP MR over a buffer (filled by the CPU, or every other
 * pair of rounds untouched: the prefetch then allocates its pages), explicit (the umem,
 * its page list, its IOVA, the MMU notifier) or, every other round, the implicit one (its
 * child ranges and their page lists come with the prefetch); prefetch the buffer for
 * writing, synchronously (hmm_range_fault(), the page tables, the links into the IOVA);
 * deregister at the end. Each call either works or fails with an errno (a failed
 * deregistration must then work when tried again without the injection). In between,
 * nothing injected: every MR that was made gives back the buffer's bytes (RDMA READ) and
 * takes new ones (RDMA WRITE, read by the CPU) on the QP pair made before any injection,
 * which must still move data at the end.
 *
 * Leaks are found by the harness (kmemleak on the debug kernel); rxe reads back in the
 * IOMMU every page it unlinks meanwhile (odp_check_links: a stale link is a WARN). About
 * 5 s, 30 s on the debug kernel.
 *
 * vmtest-class: mm
 */
#include "lib/inject.h"
#include "lib/odp.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ROUNDS		200
#define PERCENT		"5"
#define BUF_SIZE	(256UL << 10)
/* The count the injection starts from: its debugfs "times" counts down what it injected. */
#define TIMES		1000000L
#define CHECKS_PER_KIND	3

static struct vt_options opt;
static struct ibv_context *ctx;

struct kind {
	const char *name;
	/* Its folder in debugfs. */
	const char *dir;
	const char *config;
	/* Settings beyond the common ones: name, value; NULL ends them (room for it kept). */
	const char *extra[8];
};

static const struct kind kinds[] = {
	{ "failslab", "/sys/kernel/debug/failslab/", "CONFIG_FAILSLAB",
	  { "ignore-gfp-wait", "N", NULL } },
	{ "fail_page_alloc", "/sys/kernel/debug/fail_page_alloc/", "CONFIG_FAIL_PAGE_ALLOC",
	  { "ignore-gfp-wait", "N", "ignore-gfp-highmem", "N", "min-order", "0" } },
};
#define NR_KINDS	(sizeof(kinds) / sizeof(kinds[0]))

static bool set(const struct kind *k, const char *name, const char *value)
{
	char path[128];

	snprintf(path, sizeof(path), "%s%s", k->dir, name);
	if (vt_write_str(path, value))
		return true;
	tap_diag("cannot write %s to %s: %s", value, path, strerror(errno));
	return false;
}

static long times_left(const struct kind *k)
{
	char path[128];

	snprintf(path, sizeof(path), "%stimes", k->dir);
	return vt_read_long(path);
}

/* Armed for this thread only; make_it_fail() then turns it on and off. */
static bool arm(const struct kind *k)
{
	char times[32];
	int i;

	snprintf(times, sizeof(times), "%ld", TIMES);
	if (!set(k, "probability", "0") || !set(k, "interval", "1") || !set(k, "times", times) ||
	    !set(k, "space", "0") || !set(k, "verbose", "0") || !set(k, "task-filter", "Y"))
		return false;
	for (i = 0; k->extra[i]; i += 2)
		if (!set(k, k->extra[i], k->extra[i + 1]))
			return false;
	return set(k, "probability", PERCENT);
}

/*
 * This thread's /proc/.../make-it-fail, opened once: opening it while the injection is
 * on could fail (the kernel allocates a struct file), and turning it off must not.
 */
static int make_it_fail_fd = -1;

static bool make_it_fail(bool on)
{
	if (make_it_fail_fd < 0)
		make_it_fail_fd = open("/proc/thread-self/make-it-fail", O_WRONLY | O_CLOEXEC);
	if (make_it_fail_fd >= 0 && pwrite(make_it_fail_fd, on ? "1" : "0", 1, 0) == 1)
		return true;
	tap_diag("cannot write /proc/thread-self/make-it-fail: %s", strerror(errno));
	return false;
}

static void disarm(void)
{
	size_t i;

	if (make_it_fail_fd < 0)
		return;
	make_it_fail(false);
	for (i = 0; i < NR_KINDS; i++)
		if (!access(kinds[i].dir, W_OK))
			set(&kinds[i], "probability", "0");
}

/* What the calls of a kind's rounds gave. */
struct tally {
	unsigned int regs, reg_failed, prefetches, prefetch_failed, deregs, dereg_failed;
	/* Calls that failed without saying why (errno 0), or a deregistration that failed again. */
	unsigned int unclean;
	/* Errno values of the failed calls: ENOMEM, EFAULT, EAGAIN, others. */
	unsigned int enomem, efault, eagain, other;
	unsigned int moved, wrong;
};

static void count_errno(struct tally *t, int err)
{
	if (err == ENOMEM)
		t->enomem++;
	else if (err == EFAULT)
		t->efault++;
	else if (err == EAGAIN)
		t->eagain++;
	else if (err)
		t->other++;
	else
		t->unclean++;
}

/* The first byte of p that is not zero, or -1. */
static long nonzero(const unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return (long)i;
	return -1;
}

/*
 * Through mr (rkey at the buffer's address): READ back seed's bytes (zeros for a buffer
 * the CPU never wrote: @fresh), WRITE seed + 1's.
 */
static void traffic(struct vt_loopback *lb, struct vt_odp_buf *pinned, unsigned char *buf,
		    struct ibv_mr *mr, unsigned int seed, bool fresh, struct tally *t)
{
	long bad;

	memset(pinned->p, 0, BUF_SIZE);
	if (!vt_move(lb, IBV_WR_RDMA_READ, buf, mr, pinned->p, pinned->mr, BUF_SIZE)) {
		t->wrong++;
		return;
	}
	bad = fresh ? nonzero(pinned->p, BUF_SIZE) : vt_check(pinned->p, BUF_SIZE, seed);
	if (bad >= 0) {
		tap_diag("round %u: byte %ld read from the MR differs", seed, bad);
		t->wrong++;
		return;
	}
	vt_fill(pinned->p, BUF_SIZE, seed + 1);
	if (!vt_move(lb, IBV_WR_RDMA_WRITE, pinned->p, pinned->mr, buf, mr, BUF_SIZE)) {
		t->wrong++;
		return;
	}
	bad = vt_check(buf, BUF_SIZE, seed + 1);
	if (bad >= 0) {
		tap_diag("round %u: byte %ld written into the MR differs", seed, bad);
		t->wrong++;
		return;
	}
	t->moved++;
}

/*
 * One round: registration, prefetch and deregistration under the injection. Every other
 * pair of rounds the CPU leaves the buffer untouched, so that the prefetch allocates
 * its pages (fail_page_alloc's part).
 */
static bool round_under(struct vt_loopback *lb, struct vt_odp_buf *pinned, unsigned int r,
			struct tally *t)
{
	bool implicit = r & 1, fresh = r & 2;
	unsigned char *buf = vt_map_anon(BUF_SIZE, PROT_READ | PROT_WRITE, 0);
	struct ibv_sge sge;
	struct ibv_mr *mr;
	int err;

	if (!buf)
		return false;
	if (!fresh)
		vt_fill(buf, BUF_SIZE, r);
	if (!make_it_fail(true))
		return false;
	t->regs++;
	mr = implicit ? ibv_reg_mr(lb->pd, NULL, SIZE_MAX, VT_ODP_ACCESS) :
			ibv_reg_mr(lb->pd, buf, BUF_SIZE, VT_ODP_ACCESS);
	err = errno;
	if (mr) {
		sge = (struct ibv_sge){ (uintptr_t)buf, BUF_SIZE, mr->lkey };
		t->prefetches++;
		err = vt_advise_mr(lb->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1, NULL);
		if (err) {
			t->prefetch_failed++;
			count_errno(t, err);
		}
	} else {
		t->reg_failed++;
		count_errno(t, err);
	}
	if (!make_it_fail(false))
		return false;
	if (mr) {
		/* The pages a failed prefetch did not take fault now, without the injection. */
		traffic(lb, pinned, buf, mr, r, fresh, t);
		if (!make_it_fail(true))
			return false;
		t->deregs++;
		err = ibv_dereg_mr(mr);
		if (!make_it_fail(false))
			return false;
		if (err) {
			t->dereg_failed++;
			count_errno(t, err);
			err = ibv_dereg_mr(mr);
			if (err) {
				tap_diag("round %u: ibv_dereg_mr failed again without the injection: %s",
					 r, strerror(err));
				t->unclean++;
			}
		}
	}
	munmap(buf, BUF_SIZE);
	return true;
}

static void run_kind(const struct kind *k, struct vt_loopback *lb, struct vt_odp_buf *pinned)
{
	struct tally t = { 0 };
	long injected, left;
	bool went_on = true;
	unsigned int r;
	char why[160];
	int i;

	if (access(k->dir, W_OK)) {
		snprintf(why, sizeof(why), "no %s (%s): the distro-mm and debug profiles have it",
			 k->dir, k->config);
		for (i = 0; i < CHECKS_PER_KIND; i++)
			tap_skip(why, "%s, check %d", k->name, i + 1);
		return;
	}
	if (!make_it_fail(false) || !arm(k)) {
		disarm();
		for (i = 0; i < CHECKS_PER_KIND; i++)
			tap_ok(false, "%s, check %d: cannot set up the injection", k->name, i + 1);
		return;
	}
	for (r = 0; r < ROUNDS && went_on; r++)
		went_on = round_under(lb, pinned, r, &t);
	left = times_left(k);
	disarm();
	injected = left >= 0 ? TIMES - left : -1;

	tap_ok(went_on && injected > 0 && !t.unclean,
	       "%s, %s%% of this thread's allocations: %u rounds, %ld failures injected; "
	       "%u of %u registrations, %u of %u prefetches and %u of %u deregistrations "
	       "failed (ENOMEM %u, EFAULT %u, EAGAIN %u, other %u), %u without a clean error",
	       k->name, PERCENT, r, injected, t.reg_failed, t.regs, t.prefetch_failed,
	       t.prefetches, t.dereg_failed, t.deregs, t.enomem, t.efault, t.eagain, t.other,
	       t.unclean);
	tap_ok(went_on && t.moved > 0 && !t.wrong,
	       "%s: every MR made moved the right bytes afterwards (%u READ and WRITE pairs, "
	       "%u wrong or failed)", k->name, t.moved, t.wrong);
	vt_fill(pinned->p, BUF_SIZE, 0x5a5a);
	tap_ok(vt_move(lb, IBV_WR_SEND, pinned->p, pinned->mr, pinned->p + BUF_SIZE, pinned->mr,
		       BUF_SIZE) && vt_check(pinned->p + BUF_SIZE, BUF_SIZE, 0x5a5a) < 0,
	       "%s: the QP pair made before the injection still moves data (SEND of %lu KiB)",
	       k->name, BUF_SIZE >> 10);
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	struct vt_odp_buf pinned;
	struct vt_loopback lb;
	struct ibv_sge sge;
	bool check_links;
	size_t i;

	ctx = vt_odp_start(argc, argv, &opt, NR_KINDS * CHECKS_PER_KIND,
			   VT_NEED_ODP | VT_NEED_IMPLICIT, "allocation failures in ODP", &attr);
	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");
	if (!vt_odp_buf_init(&pinned, lb.pd, 2 * BUF_SIZE, 0, VT_PINNED_ACCESS))
		tap_bail("cannot register a pinned MR");
	memset(pinned.p, 0, 2 * BUF_SIZE);
	/* The prefetch path opens what it needs once: not under the injection. */
	sge = (struct ibv_sge){ (uintptr_t)pinned.p, 1, pinned.mr->lkey };
	vt_advise_mr(lb.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1, NULL);
	atexit(disarm);
	check_links = vt_read_long(VT_RXE_PARAMS "odp_check_links") == 0 &&
		      vt_write_str(VT_RXE_PARAMS "odp_check_links", "1");
	if (check_links)
		tap_diag("rxe reads back in the IOMMU each page it unlinks");

	for (i = 0; i < NR_KINDS; i++)
		run_kind(&kinds[i], &lb, &pinned);

	if (check_links)
		vt_write_str(VT_RXE_PARAMS "odp_check_links", "0");
	vt_odp_buf_fini(&pinned);
	vt_loopback_destroy(&lb);
	ibv_close_device(ctx);
	return tap_done();
}
