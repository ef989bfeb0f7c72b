// SPDX-License-Identifier: GPL-2.0
/*
 * ODP needs no locked memory: an unprivileged process with a small RLIMIT_MEMLOCK
 * (10-verbs.sh runs this program as nobody, without capabilities, with a limit of
 * 64 KiB) registers ODP MRs of many times the limit, explicit and implicit, and moves
 * verified data through them; a pinned MR of the same size fails with ENOMEM, the
 * errno that tells the user to raise the limit.
 *
 * Run with CAP_IPC_LOCK (as root, in the suite's first pass over every program) or with
 * a limit of 64 MiB or more, the limit binds nothing and every check is skipped, saying so.
 *
 * vmtest-class: dma
 */
#include "lib/odp.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define BUF_SIZE	(16UL << 20)
#define CHECKS		4

static struct vt_options opt;
static struct ibv_context *ctx;

/* Why the limit does not bind this process, or NULL. */
static const char *limit_unbound(struct rlimit *rl)
{
	if (getrlimit(RLIMIT_MEMLOCK, rl))
		tap_bail("getrlimit(RLIMIT_MEMLOCK): %s", strerror(errno));
	if (geteuid() == 0)
		return "run as root (CAP_IPC_LOCK): the suite runs it unprivileged too";
	if (rl->rlim_cur == RLIM_INFINITY || rl->rlim_cur >= BUF_SIZE)
		return "RLIMIT_MEMLOCK of 16 MiB or more: the suite runs it with 64 KiB";
	return NULL;
}

/* WRITE @src to @dst and READ it back into @back, every byte checked; false (said) if not. */
static bool write_read(struct vt_loopback *lb, struct vt_odp_buf *src, struct vt_odp_buf *dst,
		       struct ibv_mr *dst_mr, struct vt_odp_buf *back, unsigned int seed)
{
	long bad;

	vt_fill(src->p, BUF_SIZE, seed);
	if (!vt_move(lb, IBV_WR_RDMA_WRITE, src->p, src->mr, dst->p, dst_mr, BUF_SIZE) ||
	    !vt_move(lb, IBV_WR_RDMA_READ, dst->p, dst_mr, back->p, back->mr, BUF_SIZE))
		return false;
	bad = vt_check(back->p, BUF_SIZE, seed);
	if (bad < 0)
		bad = vt_check(dst->p, BUF_SIZE, seed);
	if (bad >= 0)
		tap_diag("byte %ld of %lu differs", bad, BUF_SIZE);
	return bad < 0;
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	struct vt_odp_buf src, dst, back;
	struct vt_loopback lb;
	struct ibv_mr *mr, *imr;
	struct rlimit rl;
	const char *why;
	int i, err;

	ctx = vt_odp_start(argc, argv, &opt, CHECKS, VT_NEED_ODP, "ODP without locked memory",
			   &attr);
	why = limit_unbound(&rl);
	if (why) {
		for (i = 0; i < CHECKS; i++)
			tap_skip(why, "ODP without locked memory, check %d", i + 1);
		ibv_close_device(ctx);
		return tap_done();
	}
	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");

	/* The pinned registration the limit forbids, on memory of the size the ODP MRs have. */
	src.p = vt_map_anon(BUF_SIZE, PROT_READ | PROT_WRITE, 0);
	if (!src.p)
		tap_bail("no memory for a %lu MiB buffer", BUF_SIZE >> 20);
	errno = 0;
	mr = ibv_reg_mr(lb.pd, src.p, BUF_SIZE, VT_PINNED_ACCESS);
	err = errno;
	if (mr)
		ibv_dereg_mr(mr);
	munmap(src.p, BUF_SIZE);
	tap_ok(!mr && err == ENOMEM,
	       "a pinned MR of %lu MiB with RLIMIT_MEMLOCK at %llu KiB fails with ENOMEM (got %s)",
	       BUF_SIZE >> 20, (unsigned long long)rl.rlim_cur >> 10,
	       mr ? "success" : strerrorname_np(err) ? strerrorname_np(err) : "unknown errno");

	if (!tap_ok(vt_odp_buf_init(&src, lb.pd, BUF_SIZE, 0, VT_ODP_ACCESS) &&
		    vt_odp_buf_init(&dst, lb.pd, BUF_SIZE, 0, VT_ODP_ACCESS) &&
		    vt_odp_buf_init(&back, lb.pd, BUF_SIZE, 0, VT_ODP_ACCESS),
		    "three ODP MRs of %lu MiB register with RLIMIT_MEMLOCK at %llu KiB",
		    BUF_SIZE >> 20, (unsigned long long)rl.rlim_cur >> 10))
		tap_bail("no ODP MRs to go on with");
	tap_ok(write_read(&lb, &src, &dst, dst.mr, &back, 0x4d10),
	       "RDMA WRITE and READ of %lu MiB between them: every byte right", BUF_SIZE >> 20);

	if (!(attr.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT)) {
		tap_skip("implicit ODP not supported by this device",
			 "an implicit ODP MR over the whole address space");
	} else {
		imr = ibv_reg_mr(lb.pd, NULL, SIZE_MAX, VT_ODP_ACCESS);
		if (!imr)
			tap_diag("ibv_reg_mr(implicit ODP): %s", strerror(errno));
		tap_ok(imr && write_read(&lb, &src, &dst, imr, &back, 0x4d11),
		       "an implicit ODP MR over the whole address space: RDMA WRITE and READ of "
		       "%lu MiB through it, every byte right", BUF_SIZE >> 20);
		if (imr && ibv_dereg_mr(imr))
			tap_diag("ibv_dereg_mr(implicit): %s", strerror(errno));
	}
	vt_odp_buf_fini(&dst);
	vt_odp_buf_fini(&back);
	vt_odp_buf_fini(&src);
	vt_loopback_destroy(&lb);
	ibv_close_device(ctx);
	return tap_done();
}
