// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * odp-stress: verified RDMA traffic on ODP MRs while other threads take the memory
 * away. Each traffic thread has its own QP pair and ODP buffers and runs RDMA WRITE,
 * RDMA READ and SEND/RECV in turn, checking every byte. The disrupting threads, in
 * turn: munmap + mmap of a buffer at the same address (in one mmap(MAP_FIXED)),
 * MADV_DONTNEED, mprotect to read-only and back (each while that buffer's traffic
 * waits), and fork (while the traffic runs: copy-on-write under the device; the child
 * holds its copy across the parent's next transfers and checks it never changed). Bounded
 * by --seconds; reports the operations done and every byte that differed (there must
 * be none).
 */
#include "common.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static double seconds = 10;
static unsigned int traffic_threads = 2, disrupt_threads = 1;
static size_t size = 1UL << 20;
static struct tool tool = {
	.name = "odp-stress",
	.summary = "Verified RDMA traffic on ODP MRs against threads that munmap/mmap, madvise,\n"
		   "mprotect and fork, for a bounded time.",
	.options = (const struct tool_option[]){
		{ "seconds", "SECONDS", "how long to run (default: 10)", OPT_SECONDS, &seconds },
		{ "threads", "N", "traffic threads, each with its own QP pair (default: 2)",
		  OPT_COUNT, &traffic_threads },
		{ "disrupt", "N", "threads that take memory away (default: 1)", OPT_COUNT,
		  &disrupt_threads },
		{ "size", "BYTES", "each traffic thread's buffers (default: 1M)", OPT_SIZE, &size },
		{ 0 }
	},
	.details = "Exit status 0 when every transfer completed and every byte arrived as sent.\n",
};

enum { DIS_REMAP, DIS_DONTNEED, DIS_MPROTECT, DIS_FORK, NDIS };
static const char *const dis_names[NDIS] = { "mmap over (munmap+mmap)", "MADV_DONTNEED",
					     "mprotect", "fork" };

/* One traffic thread: its QPs, buffers and tallies; disrupters lock it. */
struct lane {
	pthread_t thread;
	pthread_rwlock_t lock;	/* traffic reads, memory changes write */
	struct vt_loopback lb;
	struct tool_buf src, dst;
	_Atomic unsigned long long ops[VT_NTRANSFERS];	/* read by the progress line */
	unsigned long long bytes, differing;
	int failed;		/* a transfer failed: the lane stopped */
	unsigned int id;
};

static struct ibodp_dev *dev;
static struct ibv_pd *pd;
static struct lane *lanes;
static atomic_bool stop;
static atomic_ullong dis_count[NDIS];
static atomic_int dis_failed;

static void *traffic(void *arg)
{
	struct lane *l = arg;
	unsigned int seed = l->id * 1000, i;
	size_t len;
	long bad;

	for (i = 0; !atomic_load(&stop); i++) {
		const struct vt_transfer *t = &vt_transfers[i % VT_NTRANSFERS];
		enum ibv_wc_status status = IBV_WC_SUCCESS;
		int ret;

		/* Sizes vary, from one byte to the whole buffer. */
		len = 1 + (size_t)rand_r(&seed) % l->src.size;
		pthread_rwlock_rdlock(&l->lock);
		vt_fill(l->src.p, len, seed + i);
		memset(l->dst.p, 0, len);
		if (t->op == IBV_WR_SEND)
			ret = vt_send_recv(&l->lb, l->src.p, l->src.mr->mr, l->dst.p,
					   l->dst.mr->mr, len);
		else
			ret = vt_rdma(&l->lb, t->op, l->src.p, l->src.mr->mr, l->dst.p,
				      l->dst.mr->mr, len, &status);
		bad = ret || status != IBV_WC_SUCCESS ? -2 : vt_check(l->dst.p, len, seed + i);
		pthread_rwlock_unlock(&l->lock);
		if (bad == -2) {
			fprintf(stderr, "\n%s: lane %u: %s of %zu bytes failed: %s\n", tool.name,
				l->id, t->name, len, ret ? "no completion" : ibv_wc_status_str(status));
			l->failed = 1;
			break;
		}
		if (bad >= 0) {
			fprintf(stderr, "\n%s: lane %u: %s of %zu bytes: byte %ld differs\n",
				tool.name, l->id, t->name, len, bad);
			l->differing++;
		}
		l->ops[i % VT_NTRANSFERS]++;
		l->bytes += len;
	}
	return NULL;
}

/* Take buffer @b of a lane away and give it back as the same mapping. Lane locked. */
static int disrupt(struct tool_buf *b, int what)
{
	void *p;

	switch (what) {
	case DIS_REMAP:
		/*
		 * New memory at the same address: MAP_FIXED unmaps the old pages and
		 * maps new ones in one step. A separate munmap() would leave a hole
		 * that a duplicate RDMA READ request, which the responder may still
		 * execute after the requester's completion, finds: a remote access
		 * error that is the test's doing (verbs/odp_invalidate covers munmap itself).
		 */
		p = mmap(b->p, b->size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		return p == b->p ? 0 : -1;
	case DIS_DONTNEED:
		return madvise(b->p, b->size, MADV_DONTNEED);
	case DIS_MPROTECT:
		if (mprotect(b->p, b->size, PROT_READ))
			return -1;
		return mprotect(b->p, b->size, PROT_READ | PROT_WRITE);
	}
	return -1;
}

static unsigned long long lane_ops(struct lane *l)
{
	unsigned long long n = 0;
	unsigned int i;

	for (i = 0; i < VT_NTRANSFERS; i++)
		n += atomic_load(&l->ops[i]);
	return n;
}

/* FNV-1a over a buffer: the child's fingerprint of its copy. */
static uint64_t fingerprint(const unsigned char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

/*
 * Fork while the lane's traffic runs (unlocked: its pages become copy-on-write under
 * the device). The child takes a fingerprint of its copy of the lane's destination,
 * then waits on a pipe while the parent's device writes at least two more transfers;
 * its copy must not have changed. 0 when it had not, -1 otherwise (said).
 */
static int fork_and_hold(struct lane *l)
{
	unsigned long long start;
	int fds[2], status;
	uint64_t h;
	pid_t pid;
	char c;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(fds[1]);
		h = fingerprint(l->dst.p, l->dst.size);
		if (read(fds[0], &c, 1) != 1)
			_exit(2);
		_exit(fingerprint(l->dst.p, l->dst.size) == h ? 0 : 1);
	}
	close(fds[0]);
	if (pid < 0) {
		close(fds[1]);
		return -1;
	}
	/* The lane's next transfers, while the child holds its copy: a real condition. */
	start = lane_ops(l);
	while (lane_ops(l) < start + 2 && !atomic_load(&stop) && !l->failed)
		sched_yield();
	if (write(fds[1], "g", 1) != 1)
		fprintf(stderr, "\n%s: cannot wake the forked child: %s\n", tool.name,
			strerror(errno));
	close(fds[1]);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	fprintf(stderr, "\n%s: lane %u: %s\n", tool.name, l->id,
		WIFEXITED(status) && WEXITSTATUS(status) == 1 ?
		"the forked child's copy of the destination changed under the parent's device" :
		"the forked child did not check its copy");
	return -1;
}

static void *disrupter(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg, what, n = 0;
	struct lane *l;

	while (!atomic_load(&stop)) {
		what = n++ % NDIS;
		l = &lanes[rand_r(&seed) % traffic_threads];
		if (what == DIS_FORK) {
			if (fork_and_hold(l))
				atomic_fetch_add(&dis_failed, 1);
		} else {
			pthread_rwlock_wrlock(&l->lock);
			if (disrupt(rand_r(&seed) & 1 ? &l->src : &l->dst, what))
				atomic_fetch_add(&dis_failed, 1);
			pthread_rwlock_unlock(&l->lock);
		}
		atomic_fetch_add(&dis_count[what], 1);
		usleep(1000 + rand_r(&seed) % 4000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long long ops[VT_NTRANSFERS] = { 0 }, bytes = 0, differing = 0;
	struct ibodp_counters before, after, d;
	pthread_t *dis;
	long long t0, end;
	bool counters;
	unsigned int i, j;
	int failed = 0;

	tool_parse(&tool, argc, argv);
	if (!traffic_threads || size < 1 || size > (1UL << 30))
		die(&tool, "--threads must be at least 1 and --size from 1 byte to 1G");
	if (ibodp_open(tool.dev.dev, &dev))
		die_lib(&tool, "opening the device");
	pd = ibv_alloc_pd(ibodp_context(dev));
	if (!pd)
		die(&tool, "ibv_alloc_pd: %s", strerror(errno));
	lanes = calloc(traffic_threads, sizeof(*lanes));
	dis = calloc(disrupt_threads ? disrupt_threads : 1, sizeof(*dis));
	if (!lanes || !dis)
		die(&tool, "out of memory");
	for (i = 0; i < traffic_threads; i++) {
		lanes[i].id = i;
		pthread_rwlock_init(&lanes[i].lock, NULL);
		if (vt_loopback_create_on(&lanes[i].lb, ibodp_context(dev), &tool.dev, pd))
			die(&tool, "no connected QP pair on %s port %u", ibodp_name(dev),
			    tool.dev.port);
		tool_buf_init(&tool, &lanes[i].src, dev, pd, size, IBODP_EXPLICIT);
		tool_buf_init(&tool, &lanes[i].dst, dev, pd, size, IBODP_EXPLICIT);
	}
	counters = !ibodp_read_counters(dev, tool.dev.port, &before);

	t0 = vt_now_ns();
	end = t0 + (long long)(seconds * 1e9);
	for (i = 0; i < traffic_threads; i++)
		pthread_create(&lanes[i].thread, NULL, traffic, &lanes[i]);
	for (i = 0; i < disrupt_threads; i++)
		pthread_create(&dis[i], NULL, disrupter, (void *)(uintptr_t)(i + 1));
	while (vt_now_ns() < end) {
		unsigned long long done = 0;

		usleep(200000);
		for (i = 0; i < traffic_threads; i++)
			done += lanes[i].ops[0] + lanes[i].ops[1] + lanes[i].ops[2];
		progress(&tool, "%.0f of %.0f s, %llu transfers, %llu memory changes",
			 (vt_now_ns() - t0) / 1e9, seconds, done,
			 atomic_load(&dis_count[0]) + atomic_load(&dis_count[1]) +
			 atomic_load(&dis_count[2]) + atomic_load(&dis_count[3]));
	}
	atomic_store(&stop, true);
	for (i = 0; i < traffic_threads; i++)
		pthread_join(lanes[i].thread, NULL);
	for (i = 0; i < disrupt_threads; i++)
		pthread_join(dis[i], NULL);
	progress_done(&tool);
	t0 = vt_now_ns() - t0;

	for (i = 0; i < traffic_threads; i++) {
		for (j = 0; j < VT_NTRANSFERS; j++)
			ops[j] += lanes[i].ops[j];
		bytes += lanes[i].bytes;
		differing += lanes[i].differing;
		failed += lanes[i].failed;
	}
	printf("ran %.1f s: %u traffic threads, %u disrupting, %zu-byte ODP buffers on %s\n",
	       t0 / 1e9, traffic_threads, disrupt_threads, size, ibodp_name(dev));
	printf("transfers:     %s %llu, %s %llu, %s %llu (%llu bytes, every one checked)\n",
	       vt_transfers[0].name, ops[0], vt_transfers[1].name, ops[1], vt_transfers[2].name,
	       ops[2], bytes);
	printf("memory taken:  %s %llu, %s %llu, %s %llu, %s %llu\n", dis_names[0],
	       atomic_load(&dis_count[0]), dis_names[1], atomic_load(&dis_count[1]),
	       dis_names[2], atomic_load(&dis_count[2]), dis_names[3],
	       atomic_load(&dis_count[3]));
	if (counters && !ibodp_read_counters(dev, tool.dev.port, &after)) {
		ibodp_counters_delta(&before, &after, &d);
		printf("ODP counters:  %llu invalidations, %llu page faults, %llu fault errors\n",
		       (unsigned long long)d.invalidations, (unsigned long long)d.page_faults,
		       (unsigned long long)d.fault_errors);
	}
	printf("result:        %llu transfers with differing bytes, %d failed transfers, %d failed memory changes\n",
	       differing, failed, atomic_load(&dis_failed));

	for (i = 0; i < traffic_threads; i++) {
		tool_buf_fini(&lanes[i].src);
		tool_buf_fini(&lanes[i].dst);
		vt_loopback_destroy(&lanes[i].lb);
		pthread_rwlock_destroy(&lanes[i].lock);
	}
	free(lanes);
	free(dis);
	ibv_dealloc_pd(pd);
	ibodp_close(dev);
	return differing || failed || atomic_load(&dis_failed) ? 1 : 0;
}
