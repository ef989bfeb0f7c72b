// SPDX-License-Identifier: GPL-2.0
/*
 * ODP memory regions whose pages go away or change under them, with every byte checked
 * (RC traffic between two QPs of one device):
 *  - munmap + mmap, MADV_DONTNEED, mprotect, mremap and fork (copy-on-write) on the
 *    buffers between operations;
 *  - pages the device wrote stay dirty when it lets go of them (MADV_FREE, then
 *    MADV_PAGEOUT);
 *  - one thread invalidating (mprotect, fork) while others run traffic, for a bounded
 *    time;
 *  - the VMA behind a remote MR unmapped while RDMA WRITEs stream into it;
 *  - with an IOMMU, rxe reads back every page it unlinked (odp_check_links): a stale
 *    link is a kernel WARN, which the harness fails on.
 * Without ODP on the device every check is skipped with that reason.
 *
 * vmtest-class: dma
 */
#include "tap.h"
#include "lib/odp.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define NPAGES		16
#define STRESS_MS	4000
#define STRESS_THREADS	2

static size_t page_size, buf_size;
static struct vt_options opt;
static struct ibv_context *ctx;

/*
 * A child that shares a's and b's pages copy-on-write and lives on while the parent's
 * device writes: it waits for a byte on a pipe (the write end in *go), then exits 0
 * when its copies still hold patterns seed_a and seed_b.
 */
static pid_t cow_child(const struct vt_odp_buf *a, unsigned int seed_a,
		       const struct vt_odp_buf *b, unsigned int seed_b, int *go)
{
	int fds[2];
	pid_t pid;
	char c;

	if (pipe(fds)) {
		tap_diag("pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		close(fds[1]);
		if (read(fds[0], &c, 1) != 1)
			_exit(2);
		_exit(vt_check(a->p, a->size, seed_a) == -1 && vt_check(b->p, b->size, seed_b) == -1 ?
		      0 : 1);
	}
	close(fds[0]);
	if (pid < 0) {
		tap_diag("fork: %s", strerror(errno));
		close(fds[1]);
		return -1;
	}
	*go = fds[1];
	return pid;
}

/* Let the child of cow_child() look at its copies: true when they were intact. */
static bool cow_child_ok(pid_t pid, int go)
{
	bool sent;
	int status;

	if (pid <= 0)
		return false;
	sent = write(go, "g", 1) == 1;
	close(go);
	if (waitpid(pid, &status, 0) != pid)
		return false;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		tap_diag("the forked child %s %d: its copy of the pages %s", WIFEXITED(status) ?
			 "exited" : "died of signal", WIFEXITED(status) ? WEXITSTATUS(status) :
			 WTERMSIG(status), WIFEXITED(status) && WEXITSTATUS(status) == 1 ?
			 "changed" : "was not checked");
	return sent && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*
 * Fork a child that registers its copy of @shared (copy-on-write with ours) as an ODP
 * MR on a device context of its own and RDMA WRITEs pattern @seed into it: true when
 * the child saw every byte arrive.
 */
static bool child_writes(const struct vt_odp_buf *shared, unsigned int seed)
{
	struct vt_loopback clb;
	struct vt_odp_buf src;
	struct ibv_context *cctx;
	struct ibv_mr *mr;
	int status, rc = 1;
	pid_t pid;

	pid = fork();
	if (pid < 0) {
		tap_diag("fork: %s", strerror(errno));
		return false;
	}
	if (pid == 0) {
		cctx = vt_open_device(opt.dev);
		if (!cctx || vt_loopback_create(&clb, cctx, &opt))
			_exit(3);
		mr = ibv_reg_mr(clb.pd, shared->p, shared->size, VT_ODP_ACCESS);
		if (mr && vt_odp_buf_init(&src, clb.pd, shared->size, 0, VT_ODP_ACCESS)) {
			vt_fill(src.p, src.size, seed);
			if (vt_move(&clb, IBV_WR_RDMA_WRITE, src.p, src.mr, shared->p, mr,
				    shared->size))
				rc = vt_check(shared->p, shared->size, seed) == -1 ? 0 : 1;
		}
		_exit(rc);
	}
	if (waitpid(pid, &status, 0) != pid)
		return false;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		tap_diag("the writing child %s %d (1: wrong bytes, 3: no device or QPs)",
			 WIFEXITED(status) ? "exited" : "died of signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* What happens to the buffers between operations must be seen by the next one. */
static void test_invalidations(struct vt_loopback *lb)
{
	struct vt_odp_buf src, dst;
	unsigned char *p;
	bool ok;
	pid_t pid;
	int go;

	if (!vt_odp_buf_init(&src, lb->pd, buf_size, 0, VT_ODP_ACCESS) ||
	    !vt_odp_buf_init(&dst, lb->pd, buf_size, 0, VT_ODP_ACCESS)) {
		tap_bail("cannot register ODP MRs");
	}

	vt_fill(src.p, buf_size, 41);
	tap_ok(vt_odp_round_trip(lb, &src, &dst, IBV_WR_RDMA_WRITE), "RDMA WRITE before any change");

	/* munmap and a new mapping in the same place: the device sees the new pages. */
	ok = munmap(src.p + 2 * page_size, 4 * page_size) == 0;
	p = mmap(src.p + 2 * page_size, 4 * page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ok = ok && p == src.p + 2 * page_size;
	if (ok)
		vt_fill(p, 4 * page_size, 42);
	tap_ok(ok && vt_odp_round_trip(lb, &src, &dst, IBV_WR_RDMA_WRITE),
	       "munmap + mmap of the source: RDMA WRITE sends the new pages");

	ok = madvise(dst.p, buf_size, MADV_DONTNEED) == 0;
	tap_ok(ok && vt_odp_round_trip(lb, &src, &dst, IBV_WR_RDMA_READ),
	       "MADV_DONTNEED on the destination: RDMA READ refills it");

	ok = madvise(src.p, buf_size, MADV_DONTNEED) == 0;
	memset(dst.p, 0xff, buf_size);
	ok = ok && vt_odp_move(lb, &src, 0, &dst, 0, buf_size, IBV_WR_RDMA_WRITE);
	ok = ok && vt_odp_zero_outside(&dst, 0, 0);
	tap_ok(ok, "MADV_DONTNEED on the source: the device reads zero pages");

	vt_fill(src.p, buf_size, 43);
	ok = mprotect(src.p, buf_size, PROT_READ) == 0;
	ok = ok && vt_odp_round_trip(lb, &src, &dst, IBV_WR_RDMA_WRITE);
	/* Writable again whatever happened: the next checks fill it. */
	ok = mprotect(src.p, buf_size, PROT_READ | PROT_WRITE) == 0 && ok;
	tap_ok(ok, "mprotect(PROT_READ) on the source: still read by the device");

	/* mremap another mapping over the destination: its pages, not the old ones. */
	p = vt_map_anon(buf_size, PROT_READ | PROT_WRITE, 0);
	ok = p != NULL;
	if (ok) {
		memset(p, 0x5a, buf_size);
		ok = mremap(p, buf_size, buf_size, MREMAP_MAYMOVE | MREMAP_FIXED, dst.p) ==
		     dst.p;
	}
	ok = ok && dst.p[0] == 0x5a && vt_odp_round_trip(lb, &src, &dst, IBV_WR_RDMA_WRITE);
	tap_ok(ok, "mremap over the destination: the device writes the moved-in pages");

	/*
	 * fork: the pages become copy-on-write, shared with a child that lives on across
	 * the device's writes. A device write into a shared page must break the sharing
	 * (and land in the parent's new page), never reach the child's copy.
	 */
	vt_fill(src.p, buf_size, 45);
	vt_fill(dst.p, buf_size, 44);
	pid = cow_child(&src, 45, &dst, 44, &go);
	ok = pid > 0 && vt_odp_round_trip(lb, &src, &dst, IBV_WR_RDMA_WRITE);
	/* The READ's target, src, is still shared: only the device writes it. */
	vt_fill(dst.p, buf_size, 47);
	ok = ok && vt_odp_round_trip(lb, &dst, &src, IBV_WR_RDMA_READ);
	ok = cow_child_ok(pid, go) && ok;
	tap_ok(ok, "fork: the device's WRITE and READ land in the parent's pages, the child's copy keeps its bytes");

	/* The other way round: the child's device writes into pages it shares with us. */
	ok = child_writes(&dst, 48) && vt_check(dst.p, buf_size, 47) == -1;
	tap_ok(ok, "fork: a child's RDMA WRITE into memory shared with the parent leaves the parent's copy as it was");

	vt_odp_buf_fini(&src);
	vt_odp_buf_fini(&dst);
}

/*
 * A page the device wrote is dirty when the device lets go of it. After MADV_FREE the
 * CPU's copy is clean and reclaim may drop it instead of keeping it; a device write that
 * is not dirtied at invalidation would then be lost to MADV_PAGEOUT, and the CPU would
 * read zeros. A control buffer without the device write shows that reclaim did drop.
 */
static void test_dirty(struct vt_loopback *lb)
{
	struct vt_odp_buf src, dst, again, back, ctl = { .size = buf_size };
	size_t half;
	bool ok;

	if (!vt_odp_buf_init(&src, lb->pd, buf_size, 0, VT_ODP_ACCESS) ||
	    !vt_odp_buf_init(&dst, lb->pd, buf_size, 0, VT_ODP_ACCESS) ||
	    !vt_odp_buf_init(&again, lb->pd, buf_size, 0, VT_ODP_ACCESS) ||
	    !vt_odp_buf_init(&back, lb->pd, buf_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register ODP MRs");
	ctl.p = vt_map_anon(buf_size, PROT_READ | PROT_WRITE, 0);
	if (!ctl.p)
		tap_bail("no memory for a control buffer");

	vt_fill(ctl.p, buf_size, 90);
	ok = madvise(ctl.p, buf_size, MADV_FREE) == 0 &&
	     madvise(ctl.p, buf_size, MADV_PAGEOUT) == 0;
	tap_ok(ok && vt_odp_zero_outside(&ctl, 0, 0),
	       "MADV_FREE + MADV_PAGEOUT drops a page nothing wrote since (the control)");

	vt_fill(dst.p, buf_size, 91);
	vt_fill(src.p, buf_size, 92);
	ok = madvise(dst.p, buf_size, MADV_FREE) == 0 &&
	     vt_odp_round_trip(lb, &src, &dst, IBV_WR_RDMA_WRITE) &&
	     madvise(dst.p, buf_size, MADV_PAGEOUT) == 0;
	tap_ok(ok && vt_check(dst.p, buf_size, 92) == -1,
	       "RDMA WRITE after MADV_FREE: the device's bytes survive MADV_PAGEOUT (dirtied when unlinked)");

	/*
	 * The same, with an RDMA READ in between that starts in the half the device has
	 * not touched, so that its fault takes the written half again with it: faulted for
	 * reading, the written pages must stay writable for the device (it wrote them), or
	 * the invalidation would not dirty them and reclaim would drop the device's bytes.
	 */
	half = buf_size / 2;
	vt_fill(again.p, buf_size, 93);
	vt_fill(src.p, buf_size, 94);
	ok = madvise(again.p, buf_size, MADV_FREE) == 0 &&
	     vt_odp_move(lb, &src, half, &again, half, half, IBV_WR_RDMA_WRITE) &&
	     vt_odp_move(lb, &again, 0, &back, 0, buf_size, IBV_WR_RDMA_READ) &&
	     vt_odp_same(&src, half, &back, half, half) &&
	     madvise(again.p, buf_size, MADV_PAGEOUT) == 0;
	tap_ok(ok && vt_odp_same(&src, half, &again, half, half),
	       "RDMA WRITE after MADV_FREE, then a READ whose fault takes the written pages again: "
	       "the device's bytes survive MADV_PAGEOUT");
	munmap(ctl.p, buf_size);
	vt_odp_buf_fini(&back);
	vt_odp_buf_fini(&again);
	vt_odp_buf_fini(&src);
	vt_odp_buf_fini(&dst);
}

/*
 * One thread invalidates while others run verified traffic: it write-protects the
 * sources (mprotect) and COW-protects everything (fork) over and over, which keeps
 * the data, so every transfer must still copy exactly the right bytes. The CPU never
 * writes the sources during the run; each transfer copies another window of them.
 */
struct stress {
	struct vt_odp_buf src, dst;
	atomic_bool stop;
	atomic_long ops, bad, invalidations;
};

struct worker {
	struct stress *st;
	struct vt_loopback lb;
	size_t base, len;	/* this worker's part of the buffers */
	int failed;
};

static void *traffic(void *arg)
{
	struct worker *w = arg;
	struct stress *st = w->st;
	struct vt_odp_buf src = { st->src.p + w->base, w->len, st->src.mr };
	struct vt_odp_buf dst = { st->dst.p + w->base, w->len, st->dst.mr };
	unsigned int n = 0;

	while (!atomic_load(&st->stop)) {
		enum ibv_wr_opcode op = n & 1 ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
		size_t off = (n * 1237) % (w->len / 2), len = w->len / 2;

		memset(dst.p, 0, w->len);
		if (!vt_odp_move(&w->lb, &src, off, &dst, off, len, op)) {
			w->failed = 1;
			break;
		}
		if (memcmp(dst.p + off, src.p + off, len) || !vt_odp_zero_outside(&dst, off, len))
			atomic_fetch_add(&st->bad, 1);
		atomic_fetch_add(&st->ops, 1);
		n++;
	}
	return NULL;
}

static void test_stress(struct ibv_pd *pd)
{
	struct worker w[STRESS_THREADS];
	pthread_t tid[STRESS_THREADS];
	struct stress st = { 0 };
	long long end;
	int i, started = 0, failed = 0;
	pid_t pid;

	if (!vt_odp_buf_init(&st.src, pd, STRESS_THREADS * buf_size, 0, VT_ODP_ACCESS) ||
	    !vt_odp_buf_init(&st.dst, pd, STRESS_THREADS * buf_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register ODP MRs");
	vt_fill(st.src.p, st.src.size, 99);
	for (i = 0; i < STRESS_THREADS; i++) {
		w[i] = (struct worker){ .st = &st, .base = i * buf_size, .len = buf_size };
		/* Each worker its own QPs, on the MRs' PD. */
		if (vt_loopback_create_on(&w[i].lb, ctx, &opt, pd)) {
			failed = 1;
			break;
		}
		if (pthread_create(&tid[i], NULL, traffic, &w[i])) {
			failed = 1;
			vt_loopback_destroy(&w[i].lb);
			break;
		}
		started++;
	}

	end = vt_now_ms() + STRESS_MS;
	while (!failed && vt_now_ms() < end) {
		if (mprotect(st.src.p, st.src.size, PROT_READ) ||
		    mprotect(st.src.p, st.src.size, PROT_READ | PROT_WRITE)) {
			tap_diag("mprotect: %s", strerror(errno));
			failed = 1;
		}
		pid = fork();
		if (pid == 0)
			_exit(0);
		if (pid > 0)
			waitpid(pid, NULL, 0);
		atomic_fetch_add(&st.invalidations, 1);
		usleep(1000);
	}
	atomic_store(&st.stop, true);
	for (i = 0; i < started; i++) {
		pthread_join(tid[i], NULL);
		failed |= w[i].failed;
		vt_loopback_destroy(&w[i].lb);
	}
	failed |= vt_check(st.src.p, st.src.size, 99) != -1;
	tap_diag("stress: %ld verified transfers, %ld invalidation rounds, %ld wrong",
		 atomic_load(&st.ops), atomic_load(&st.invalidations), atomic_load(&st.bad));
	tap_ok(!failed && started == STRESS_THREADS && atomic_load(&st.ops) > 0 &&
	       atomic_load(&st.bad) == 0,
	       "%d threads of verified RDMA traffic while a thread invalidates, %d ms",
	       STRESS_THREADS, STRESS_MS);
	vt_odp_buf_fini(&st.src);
	vt_odp_buf_fini(&st.dst);
}

/*
 * The VMA behind a remote ODP MR disappears while RDMA WRITEs stream into it: each
 * WRITE either lands (before) or fails with a clean remote access error (after).
 */
struct vanish {
	struct vt_loopback *lb;
	struct vt_odp_buf *src, *dst;
	atomic_bool gone;
	atomic_int ok_before, failed;
	atomic_int other;	/* completions that are neither */
};

static void *vanish_traffic(void *arg)
{
	struct vanish *v = arg;
	enum ibv_wc_status status;
	int i;

	for (i = 0; i < 10000; i++) {
		if (vt_odp_rdma(v->lb, v->src, 0, v->dst, 0, v->src->size, IBV_WR_RDMA_WRITE,
			 &status)) {
			atomic_fetch_add(&v->other, 1);
			break;
		}
		if (status == IBV_WC_SUCCESS) {
			atomic_fetch_add(&v->ok_before, 1);
			continue;
		}
		if (status == IBV_WC_REM_ACCESS_ERR && atomic_load(&v->gone))
			atomic_fetch_add(&v->failed, 1);
		else
			atomic_fetch_add(&v->other, 1);
		break;		/* the QP is in error now */
	}
	return NULL;
}

static void test_vanishing_vma(void)
{
	struct vt_odp_buf src, dst;
	struct vt_loopback lb;
	struct vanish v = { 0 };
	pthread_t tid;
	bool ok;

	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");
	if (!vt_odp_buf_init(&src, lb.pd, buf_size, 0, VT_ODP_ACCESS) ||
	    !vt_odp_buf_init(&dst, lb.pd, buf_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register ODP MRs");
	vt_fill(src.p, buf_size, 80);
	v.lb = &lb;
	v.src = &src;
	v.dst = &dst;
	ok = pthread_create(&tid, NULL, vanish_traffic, &v) == 0;
	if (ok) {
		while (atomic_load(&v.ok_before) < 3 && !atomic_load(&v.failed) &&
		       !atomic_load(&v.other))
			usleep(1000);
		atomic_store(&v.gone, true);
		ok = munmap(dst.p, buf_size) == 0;
		pthread_join(tid, NULL);
	}
	tap_ok(ok && atomic_load(&v.other) == 0 && atomic_load(&v.failed) == 1,
	       "munmap of a remote ODP MR during RDMA WRITEs: %d landed, then a remote access error",
	       atomic_load(&v.ok_before));
	dst.p = NULL;
	vt_odp_buf_fini(&src);
	vt_odp_buf_fini(&dst);
	vt_loopback_destroy(&lb);
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	struct vt_loopback lb;
	long checked_before;

	page_size = sysconf(_SC_PAGESIZE);
	buf_size = NPAGES * page_size;
	ctx = vt_odp_start(argc, argv, &opt, 8 + 3 + 1 + 1 + 1, VT_NEED_ODP, "ODP invalidation",
			   &attr);

	/* rxe reads back every unlinked page in the IOMMU after each invalidation. */
	checked_before = vt_read_long(VT_RXE_PARAMS "odp_links_checked");
	if (checked_before >= 0 && !vt_write_str(VT_RXE_PARAMS "odp_check_links", "1"))
		tap_diag("cannot enable rxe's odp_check_links: %s", strerror(errno));

	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");
	test_invalidations(&lb);
	test_dirty(&lb);
	test_stress(lb.pd);
	vt_loopback_destroy(&lb);
	test_vanishing_vma();

	if (checked_before < 0) {
		tap_skip("the driver has no odp_links_checked parameter (not our rxe)",
			 "no stale IOVA link after any invalidation");
	} else if (vt_odp_dma(ctx, &opt) != VT_DMA_IOVA) {
		tap_skip("the network device has no IOMMU DMA domain: nothing to read back",
			 "no stale IOVA link after any invalidation");
	} else {
		long checked = vt_read_long(VT_RXE_PARAMS "odp_links_checked") - checked_before;

		tap_ok(checked > 0, "%ld unlinked pages read back in the IOMMU after invalidations",
		       checked);
	}
	vt_write_str(VT_RXE_PARAMS "odp_check_links", "0");
	ibv_close_device(ctx);
	return tap_done();
}
