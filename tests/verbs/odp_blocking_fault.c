// SPDX-License-Identifier: GPL-2.0
/*
 * ODP faults that block for as long as the memory's provider wants: ODP MRs over files
 * of a FUSE file system whose READs this program holds unanswered (lib/holdfs.h).
 *
 *  - An RDMA READ from such an MR waits in rxe's responder for the file system, and
 *    completes with the file's bytes once it answers.
 *  - An asynchronous prefetch of such an MR blocks in its fault while the MR is
 *    deregistered. rxe once waited 50 s for the MR's references, then WARNed and freed
 *    the MR and its umem under the fault (a use after free when the file system
 *    answered). The READ is held for HOLD_S seconds, longer than that: the deregistration
 *    must still be waiting, and return 0 once the file system answered.
 *  - More asynchronous prefetches of such an MR than rxe's QP work queue has workers
 *    (512), all parked on the held READ: the device's QPs still move data meanwhile.
 *    rxe once queued prefetches with the QPs' tasks, and every QP of the host stopped
 *    until the file system answered.
 *  - Two prefetches of one range at once, one parked on the held READ in the middle of
 *    its fault and one of the range's cached half that completes meanwhile: the pages
 *    are counted once. rxe once counted what the MR gained while a fault waited as that
 *    fault's pages, and the cached half twice.
 *  - Then the device still moves data.
 *
 * Needs CONFIG_FUSE_FS (distro-mm, debug) and root; about HOLD_S seconds.
 *
 * vmtest-class: mm
 */
#include "lib/holdfs.h"
#include "lib/odp.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FILE_SIZE	(64UL << 10)
#define SEED		0x4f00
/* Longer than the 50 s after which rxe's pool gave up waiting for references. */
#define HOLD_S		60
#define CHECKS		5
/* More prefetches than the 512 workers of rxe's QP work queue. */
#define PARKED		520

static struct vt_options opt;
static struct ibv_context *ctx;

/* A file of the file system mapped read-only, under an ODP MR. */
struct file_mr {
	int fd;
	unsigned char *p;
	struct ibv_mr *mr;
};

static bool file_mr_open(struct file_mr *f, struct vt_holdfs *fs, unsigned int n,
			 struct ibv_pd *pd)
{
	f->mr = NULL;
	f->p = MAP_FAILED;
	f->fd = open(vt_holdfs_path(fs, n), O_RDONLY);
	if (f->fd < 0) {
		tap_diag("open %s: %s", vt_holdfs_path(fs, n), strerror(errno));
		return false;
	}
	f->p = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, f->fd, 0);
	if (f->p == MAP_FAILED) {
		tap_diag("mmap %s: %s", vt_holdfs_path(fs, n), strerror(errno));
		return false;
	}
	f->mr = ibv_reg_mr(pd, f->p, FILE_SIZE, IBV_ACCESS_ON_DEMAND | IBV_ACCESS_REMOTE_READ);
	if (!f->mr)
		tap_diag("ODP MR over %s: %s", vt_holdfs_path(fs, n), strerror(errno));
	return f->mr;
}

static void file_mr_close(struct file_mr *f)
{
	if (f->mr)
		ibv_dereg_mr(f->mr);
	if (f->p != MAP_FAILED)
		munmap(f->p, FILE_SIZE);
	if (f->fd >= 0)
		close(f->fd);
}

/* The deregistration, in a thread made before anything blocks (thread stacks are mmap()ed). */
struct dereg {
	pthread_t thread;
	sem_t go;
	struct ibv_mr *mr;
	atomic_int tid;
	atomic_bool returned;
	int ret;
};

static void *dereg_fn(void *arg)
{
	struct dereg *d = arg;

	atomic_store(&d->tid, (int)syscall(SYS_gettid));
	while (sem_wait(&d->go) && errno == EINTR)
		;
	d->ret = ibv_dereg_mr(d->mr);
	atomic_store(&d->returned, true);
	return NULL;
}

/*
 * Whether thread @tid sleeps in the kernel (state D in its stat). Only open() and read():
 * nothing here may take the mmap lock for writing while a fault holds it.
 */
static bool in_kernel_wait(int tid)
{
	char path[64], buf[256], *state;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	state = strrchr(buf, ')');
	return state && state[1] == ' ' && state[2] == 'D';
}

static void read_waits(struct vt_loopback *lb, struct vt_holdfs *fs, struct file_mr *f,
		       struct vt_odp_buf *pinned)
{
	struct ibv_sge sge = { (uintptr_t)pinned->p, FILE_SIZE, pinned->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc = { .status = IBV_WC_GENERAL_ERR };
	bool held = false, done = false;
	long wrong = -1;

	memset(pinned->p, 0, FILE_SIZE);
	wr.wr.rdma.remote_addr = (uintptr_t)f->p;
	wr.wr.rdma.rkey = f->mr->rkey;
	vt_holdfs_hold(fs);
	if (!ibv_post_send(lb->qp[0], &wr, &bad)) {
		held = vt_holdfs_wait_held(fs, VT_WAIT_MS);
		vt_holdfs_release(fs);
		done = !vt_poll_one(lb->send_cq, &wc, VT_WAIT_MS);
	} else {
		vt_holdfs_release(fs);
	}
	if (done && wc.status == IBV_WC_SUCCESS)
		wrong = vt_check(pinned->p, FILE_SIZE, SEED);
	tap_ok(held && done && wc.status == IBV_WC_SUCCESS && wrong < 0,
	       "an RDMA READ from an ODP MR over a FUSE file waits for its held READ, then "
	       "completes with the file's bytes: %s%s, %s",
	       held ? "held" : "no READ reached the file system",
	       done ? "" : ", no completion", done ? ibv_wc_status_str(wc.status) : "-");
	if (wrong >= 0)
		tap_diag("byte %ld differs from the file's", wrong);
}

static void dereg_waits(struct vt_loopback *lb, struct vt_holdfs *fs, struct file_mr *f)
{
	struct ibv_sge sge = { (uintptr_t)f->p, FILE_SIZE, f->mr->lkey };
	struct dereg d = { .mr = f->mr };
	bool held = false, waiting = false, early = false;
	long long start, until;
	int err;

	sem_init(&d.go, 0, 0);
	if (pthread_create(&d.thread, NULL, dereg_fn, &d))
		tap_bail("pthread_create failed");
	while (!atomic_load(&d.tid))
		sched_yield();
	vt_holdfs_hold(fs);
	err = vt_advise_mr(lb->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1, NULL);
	if (err)
		tap_diag("ibv_advise_mr(PREFETCH): %s", strerror(err));
	else
		held = vt_holdfs_wait_held(fs, VT_WAIT_MS);
	if (held) {
		/* The fault blocks with the MR referenced: deregister it now. */
		sem_post(&d.go);
		start = vt_now_ms();
		while (!(waiting = in_kernel_wait(atomic_load(&d.tid))) &&
		       !atomic_load(&d.returned) && vt_now_ms() - start < VT_WAIT_MS)
			usleep(1000);
		until = vt_now_ms() + HOLD_S * 1000LL;
		while (waiting && !atomic_load(&d.returned) && vt_now_ms() < until)
			usleep(100000);
		early = atomic_load(&d.returned);
	} else {
		sem_post(&d.go);
	}
	vt_holdfs_release(fs);
	pthread_join(d.thread, NULL);
	sem_destroy(&d.go);
	f->mr = NULL;
	tap_ok(held && waiting && !early && !d.ret,
	       "ibv_dereg_mr waits %d s for a prefetch whose fault the file system holds, and "
	       "returns 0 once it answered: %s", HOLD_S,
	       !held ? "the prefetch never reached the file system" :
	       !waiting ? "the deregistration never waited in the kernel" :
	       early ? "it returned while the fault was still held" :
	       d.ret ? strerror(d.ret) : "waited");
}

static void prefetches_park(struct vt_loopback *lb, struct vt_holdfs *fs, struct file_mr *f,
			    struct vt_odp_buf *pinned)
{
	struct ibv_sge sge = { (uintptr_t)f->p, FILE_SIZE, f->mr->lkey };
	const size_t half = FILE_SIZE / 2;
	bool held = false, moved = false;
	int i, err = 0;

	vt_fill(pinned->p, half, SEED + 1);
	memset(pinned->p + half, 0, half);
	vt_holdfs_hold(fs);
	for (i = 0; i < PARKED && !err; i++)
		err = vt_advise_mr(lb->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1, NULL);
	if (err)
		tap_diag("ibv_advise_mr(PREFETCH) %d: %s", i, strerror(err));
	else
		held = vt_holdfs_wait_held(fs, VT_WAIT_MS);
	/* Pinned memory only: nothing here waits for the file system but the prefetches. */
	if (held)
		moved = vt_move(lb, IBV_WR_RDMA_WRITE, pinned->p, pinned->mr, pinned->p + half,
				pinned->mr, half) &&
			vt_check(pinned->p + half, half, SEED + 1) < 0;
	vt_holdfs_release(fs);
	tap_ok(held && moved,
	       "%d prefetches parked on a held READ of the file system: a QP pair still moves "
	       "data between pinned MRs meanwhile (%s)", PARKED,
	       !held ? "the prefetches never reached the file system" :
	       moved ? "moved" : "no completion while they were parked");
}

/*
 * The first half of @f's file cached, read by the test (no readahead: the file is read
 * and mapped for random access); the second half not. A prefetch of the whole file
 * faults the first half and parks on the held READ of the second; a synchronous
 * prefetch of the first half then completes. Each page counts once.
 */
static void concurrent_prefetches_count_once(struct vt_loopback *lb, struct vt_holdfs *fs,
					     struct file_mr *f)
{
	struct ibv_sge whole = { (uintptr_t)f->p, FILE_SIZE, f->mr->lkey };
	struct ibv_sge half = { (uintptr_t)f->p, FILE_SIZE / 2, f->mr->lkey };
	const long pages = FILE_SIZE / (unsigned long)sysconf(_SC_PAGESIZE);
	long b[VT_ODP_NCOUNTERS], a[VT_ODP_NCOUNTERS], d[VT_ODP_NCOUNTERS] = { 0 };
	static unsigned char cached[FILE_SIZE / 2];
	bool held = false, ok;
	long long until;
	int err;

	ok = !posix_fadvise(f->fd, 0, 0, POSIX_FADV_RANDOM) &&
	     !madvise(f->p, FILE_SIZE, MADV_RANDOM) &&
	     pread(f->fd, cached, sizeof(cached), 0) == (ssize_t)sizeof(cached) &&
	     vt_odp_snapshot(ctx, opt.port, b);
	if (!ok)
		tap_diag("caching the first half of %s: %s", vt_holdfs_path(fs, 3), strerror(errno));
	vt_holdfs_hold(fs);
	err = ok ? vt_advise_mr(lb->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &whole, 1, NULL) : 0;
	if (err)
		tap_diag("ibv_advise_mr(PREFETCH) of the file: %s", strerror(err));
	else if (ok)
		held = vt_holdfs_wait_held(fs, VT_WAIT_MS);
	if (held) {
		err = vt_advise_mr(lb->pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				   IBV_ADVISE_MR_FLAG_FLUSH, &half, 1, NULL);
		if (err)
			tap_diag("ibv_advise_mr(PREFETCH, FLUSH) of the cached half: %s",
				 strerror(err));
	}
	vt_holdfs_release(fs);
	/* Until the parked prefetch counted its pages too (or never does). */
	until = vt_now_ms() + VT_WAIT_MS;
	while (held && !err && (ok = vt_odp_snapshot(ctx, opt.port, a))) {
		vt_odp_delta(b, a, d);
		if (d[VT_ODP_PAGES_FAULTED] >= pages || vt_now_ms() > until)
			break;
		usleep(1000);
	}
	tap_ok(held && !err && ok && d[VT_ODP_PAGES_FAULTED] == pages,
	       "a prefetch parked in its fault and one of the range's cached half meanwhile: "
	       "%ld pages faulted for the %ld of the file (%s)", d[VT_ODP_PAGES_FAULTED], pages,
	       !held ? "the prefetch never reached the file system" :
	       err ? "a prefetch failed" : !ok ? "no counters" :
	       d[VT_ODP_PAGES_FAULTED] > pages ? "counted twice" :
	       d[VT_ODP_PAGES_FAULTED] < pages ? "the parked prefetch never finished" :
	       "each once");
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	struct file_mr a = { .fd = -1 }, b = { .fd = -1 }, c = { .fd = -1 }, d = { .fd = -1 };
	struct vt_odp_buf pinned;
	struct vt_loopback lb;
	struct vt_holdfs *fs;
	int i;

	ctx = vt_odp_start(argc, argv, &opt, CHECKS, VT_NEED_ODP | VT_NEED_COUNTERS,
			   "ODP faults that block", &attr);
	if (access("/dev/fuse", R_OK | W_OK)) {
		for (i = 0; i < CHECKS; i++)
			tap_skip(VT_NO_FUSE, "ODP faults that block, check %d", i + 1);
		ibv_close_device(ctx);
		return tap_done();
	}
	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");
	if (!vt_odp_buf_init(&pinned, lb.pd, FILE_SIZE, 0, VT_PINNED_ACCESS))
		tap_bail("cannot register a pinned MR");
	memset(pinned.p, 0, FILE_SIZE);
	fs = vt_holdfs_mount(FILE_SIZE, SEED);
	if (!fs)
		tap_bail("cannot mount the FUSE file system");
	if (!file_mr_open(&a, fs, 0, lb.pd) || !file_mr_open(&b, fs, 1, lb.pd) ||
	    !file_mr_open(&c, fs, 2, lb.pd) || !file_mr_open(&d, fs, 3, lb.pd))
		tap_bail("cannot register ODP MRs over the FUSE files");
	/* The prefetch path opens what it needs at its first call: before anything blocks. */
	vt_advise_mr(lb.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, IBV_ADVISE_MR_FLAG_FLUSH,
		     &(struct ibv_sge){ (uintptr_t)pinned.p, 1, pinned.mr->lkey }, 1, NULL);

	read_waits(&lb, fs, &a, &pinned);
	/* A file no READ brought into the page cache yet: its faults reach the file system. */
	prefetches_park(&lb, fs, &c, &pinned);
	dereg_waits(&lb, fs, &b);
	concurrent_prefetches_count_once(&lb, fs, &d);
	memset(pinned.p, 0, FILE_SIZE);
	tap_ok(vt_move(&lb, IBV_WR_RDMA_READ, a.p, a.mr, pinned.p, pinned.mr, FILE_SIZE) &&
	       vt_check(pinned.p, FILE_SIZE, SEED) < 0,
	       "the device still moves data: an RDMA READ from the first file's MR, bytes right "
	       "(%lu READs answered by the file system)", vt_holdfs_reads(fs));

	file_mr_close(&d);
	file_mr_close(&c);
	file_mr_close(&b);
	file_mr_close(&a);
	vt_holdfs_unmount(fs);
	vt_odp_buf_fini(&pinned);
	vt_loopback_destroy(&lb);
	ibv_close_device(ctx);
	return tap_done();
}
