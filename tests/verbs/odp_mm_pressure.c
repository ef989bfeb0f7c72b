// SPDX-License-Identifier: GPL-2.0
/*
 * ODP under the memory management of a distribution kernel: verified RDMA traffic on an
 * ODP MR while the kernel takes its pages away, one cause at a time and then all of them
 * together, each for 3 s and on until it took pages away (at most 20 s), and the round in
 * flight then (at least two). Every round moves a fresh pattern into the ODP MR and back
 * out into pinned memory, and checks both copies byte by byte: even rounds by RDMA WRITE
 * and READ (the responder faults the MR), odd ones by SEND into a receive in the MR and
 * SEND from it (the responder's receive, then the requester, fault it). How many rounds
 * got through while the cause acted is reported, not judged: a fault the kernel keeps
 * invalidating waits, as on hardware.
 *
 *   swap-out       MADV_PAGEOUT of the MR's memory to the swap device (zram)
 *   memory cgroup  the process in a memory cgroup whose memory.high is smaller than the
 *                  MR, and its memory.reclaim written: reclaim swaps its pages out while
 *                  the traffic faults them back (memory.max had the OOM killer take the
 *                  test when reclaim fell behind the faults of rxe's worker, which is
 *                  the kernel's right)
 *   compaction     /proc/sys/vm/compact_memory
 *   NUMA migration move_pages() of every page to the other node, back and forth
 *   NUMA balancing the scheduler's own scans (kernel.numa_balancing=1, off at boot in
 *                  distro-mm and debug, so that other suites' fault counts stay exact)
 *   THP churn      madvise(MADV_COLLAPSE) of the MR's memory into transparent huge pages,
 *                  then debugfs split_huge_pages, back and forth
 *   fork           the process forks and the child writes all of its copy of the MR
 *   KSM            ksmd merging the MR's pages, which the device's writes then break; the
 *                  rounds write both halves of the MR alike for it (a period of half the MR)
 *   all together   the above at once (those the kernel has; fork only outside a cgroup),
 *                  in the cgroup limited by memory.high (reclaim without the OOM killer)
 *
 * A cause must have taken pages away (the MR's invalidations counted) for its check to
 * pass; wrong bytes, failed transfers and ODP fault errors must be 0. Compaction must
 * also have moved pages of the MR to other frames (/proc/self/pagemap), since something
 * else could invalidate them meanwhile. A fault that did not settle because the cause
 * kept changing its pages (KSM does at full speed) is tried again by rxe, not an error:
 * those are reported ("tried again"). After a failed transfer the next cause gets a new
 * QP pair, so that one failure is not counted twice. A cause the machine lacks is skipped,
 * saying why: swap-out, the memory cgroup (which would OOM) and compaction need a swap
 * device for pressure (zram); the NUMA causes a second node; KSM its config. Its class,
 * mm, runs it on distro-mm and debug-mm, which have them all. About 50 s on distro-mm;
 * the debug kernel moves a 4 MiB MR, not 16.
 *
 * vmtest-class: mm
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The MR: 16 MiB, a quarter of it on a slower kernel (vt_time_factor(), main()). */
#define BUF_SIZE	(16UL << 20)
/* Each cause runs this long, and on until it took pages away (at most CAUSE_MAX_MS). */
#define CAUSE_MS	3000
#define CAUSE_MAX_MS	20000
#define MAX_ROUNDS	1000
#define CGROUP		"/sys/fs/cgroup/odp-mm-pressure"
#ifndef MPOL_MF_MOVE
#define MPOL_MF_MOVE	(1 << 1)
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif

static struct vt_options opt;
static unsigned long buf_size = BUF_SIZE;
/* The cgroup's limit: half the MR, so that its pages cannot all stay (in bytes). */
static char cgroup_max[32];
static struct ibv_context *ctx;
static long page_size;
static unsigned char *odp;
static struct ibv_mr *odp_mr;
static unsigned int nr_nodes;

struct cause {
	const char *name;
	/* NULL when the kernel can do it, else why not. */
	const char *(*unavailable)(void);
	/* One action on the MR's memory; false (said) when it failed. */
	bool (*act)(unsigned int i);
	/* When set, run before the cause alone, outside its count; false (said) on failure. */
	bool (*setup)(void);
	/* When set, run after the cause alone: undoes what setup changed. */
	void (*teardown)(void);
	/*
	 * When set, whether the cause itself took pages of the MR away when it ran alone,
	 * by its own evidence (said into @msg), besides the invalidations: something else
	 * may have taken them.
	 */
	bool (*took)(char *msg, size_t len);
	/*
	 * When more than 1, how many times setup may place the MR's pages anew when a run
	 * went well but the cause touched none of them (took() false, no invalidation):
	 * where the allocator put them decides whether the cause can reach them at all.
	 */
	unsigned int placements;
};

static const char *no_swap(void)
{
	char line[256];
	int lines = 0;
	FILE *f = fopen("/proc/swaps", "r");

	if (!f)
		return "the kernel has no swap";
	while (fgets(line, sizeof(line), f))
		lines++;
	fclose(f);
	return lines > 1 ? NULL : "no swap device: the distro-mm and debug profiles have one (zram)";
}

static bool pageout(unsigned int i)
{
	(void)i;
	if (madvise(odp, buf_size, MADV_PAGEOUT)) {
		tap_diag("madvise(MADV_PAGEOUT): %s", strerror(errno));
		return false;
	}
	return true;
}

static const char *no_memcg(void)
{
	if (no_swap())
		return no_swap();
	if (access("/sys/fs/cgroup/cgroup.subtree_control", W_OK))
		return "no cgroup v2 hierarchy at /sys/fs/cgroup";
	return NULL;
}

/*
 * Reclaim in the cgroup, as its memory.high would on its own: but over memory.high the
 * charges of rxe's worker (a kernel thread, which never returns to user space) are
 * reclaimed late or not at all, and on the debug kernel 20 s of traffic saw none.
 * memory.reclaim reclaims now, swapping the MR's pages out; EAGAIN only says it got
 * less than asked for.
 */
static bool in_cgroup(unsigned int i)
{
	(void)i;
	if (vt_write_str(CGROUP "/memory.reclaim", cgroup_max) || errno == EAGAIN)
		return true;
	tap_diag("writing %s to %s/memory.reclaim: %s", cgroup_max, CGROUP, strerror(errno));
	return false;
}

/* Without a swap device the memory is not under pressure: compaction finds little to move. */
static const char *no_compaction(void)
{
	if (no_swap())
		return no_swap();
	return access("/proc/sys/vm/compact_memory", W_OK) ?
	       "no /proc/sys/vm/compact_memory (CONFIG_COMPACTION)" : NULL;
}

static bool compact(unsigned int i)
{
	(void)i;
	if (!vt_write_str("/proc/sys/vm/compact_memory", "1")) {
		tap_diag("writing /proc/sys/vm/compact_memory: %s", strerror(errno));
		return false;
	}
	return true;
}

/*
 * What compaction's check started from: the frame of each page of the MR, and how many
 * pages compaction's migration scanner had looked at (/proc/vmstat; -1 without it).
 */
static long long compact_frames[BUF_SIZE / 4096];
static long compact_scanned;

/*
 * Compaction moves the small pages below the point where its scanners meet (from the
 * bottom of a zone up) into free pages above it: pages already high are never moved,
 * nor THPs, and the MR's may be either (distro-mm's THP mode is "always"). Compact once,
 * so that what is free lies low, and give the MR new small pages, made before its old
 * ones are freed (else the allocator hands those back): the cause's compactions then
 * have the MR's pages to move. The range stays MADV_NOHUGEPAGE until the teardown: else
 * khugepaged collapses it meanwhile and its invalidations pass for compaction's. The
 * device maps every new page before their frames are noted: a page moved before the
 * device had it needs no invalidation.
 */
static bool compact_setup(void)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)odp, .length = buf_size, .lkey = odp_mr->lkey,
	};
	unsigned char *fresh;
	unsigned long k;
	int err;

	if (!compact(0))
		return false;
	fresh = vt_map_anon(buf_size, PROT_READ | PROT_WRITE, 0);
	if (!fresh)
		return false;
	if (madvise(fresh, buf_size, MADV_NOHUGEPAGE)) {
		tap_diag("madvise(MADV_NOHUGEPAGE): %s", strerror(errno));
		munmap(fresh, buf_size);
		return false;
	}
	memset(fresh, 0, buf_size);
	if (mremap(fresh, buf_size, buf_size, MREMAP_MAYMOVE | MREMAP_FIXED, odp) == MAP_FAILED) {
		tap_diag("mremap of new pages over the MR's range: %s", strerror(errno));
		munmap(fresh, buf_size);
		return false;
	}
	/* The device maps them all now: a page compaction moves later was the device's. */
	err = vt_advise_mr(odp_mr->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1, NULL);
	if (err) {
		tap_diag("prefetch of the MR's new pages: %s", strerror(err));
		return false;
	}
	if (!vt_page_frames(odp, buf_size / page_size, compact_frames))
		return false;
	for (k = 0; k < buf_size / page_size; k++) {
		if (!compact_frames[k]) {
			tap_diag("page %lu of the MR: no frame to follow", k);
			return false;
		}
	}
	/* How much compaction scanned meanwhile is said, when the kernel counts it. */
	compact_scanned = vt_vmstat("compact_migrate_scanned");
	return true;
}

/* Huge pages for the MR's range again, as the other causes expect (THP churn). */
static void compact_teardown(void)
{
	if (madvise(odp, buf_size, MADV_HUGEPAGE))
		tap_diag("madvise(MADV_HUGEPAGE): %s", strerror(errno));
}

/*
 * Whether pages of the MR are now in other frames: with khugepaged kept away (setup),
 * KSM not started yet and NUMA balancing off, compaction moved them. Its setup leaves
 * the MR's pages where compaction moves them (it moved 205 to 3310 of the 4096 in each
 * of five runs on distro-mm), mostly: once on the debug kernel 248 compactions moved
 * none of them. So the cause gets up to three placements (.placements); none moved in
 * all three is a failure.
 */
static bool compact_took(char *msg, size_t len)
{
	static long long frames[BUF_SIZE / 4096];
	long scanned = vt_vmstat("compact_migrate_scanned");
	unsigned long k, moved = 0;

	if (!vt_page_frames(odp, buf_size / page_size, frames)) {
		snprintf(msg, len, "the MR's page frames cannot be read");
		return false;
	}
	for (k = 0; k < buf_size / page_size; k++)
		moved += frames[k] != compact_frames[k];
	if (scanned >= 0 && compact_scanned >= 0)
		snprintf(msg, len, "compaction scanned %ld pages and moved %lu of the MR's %lu",
			 scanned - compact_scanned, moved, buf_size / page_size);
	else
		snprintf(msg, len, "compaction moved %lu of the MR's %lu pages", moved,
			 buf_size / page_size);
	return moved > 0;
}

static const char *one_node(void)
{
	return nr_nodes < 2 ? "one NUMA node" : NULL;
}

/* Every page of the MR to node i % 2. */
static bool migrate(unsigned int i)
{
	static void *pages[BUF_SIZE / 4096];
	static int nodes[BUF_SIZE / 4096], status[BUF_SIZE / 4096];
	unsigned long n = buf_size / page_size, k;

	for (k = 0; k < n; k++) {
		pages[k] = odp + k * page_size;
		nodes[k] = i % 2;
	}
	if (syscall(SYS_move_pages, 0, n, pages, nodes, status, MPOL_MF_MOVE) < 0) {
		tap_diag("move_pages(%lu pages to node %u): %s", n, i % 2, strerror(errno));
		return false;
	}
	return true;
}

static const char *no_balancing(void)
{
	if (nr_nodes < 2)
		return "one NUMA node";
	return access("/proc/sys/kernel/numa_balancing", W_OK) ?
	       "no /proc/sys/kernel/numa_balancing (CONFIG_NUMA_BALANCING)" : NULL;
}

/* The scans run in this task's own context; nothing to do here. */
static bool balanced(unsigned int i)
{
	(void)i;
	sched_yield();
	return true;
}

static const char *no_thp(void)
{
	if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK))
		return "no transparent huge pages (CONFIG_TRANSPARENT_HUGEPAGE)";
	if (access(VT_SPLIT_HUGE_PAGES, W_OK))
		return "no " VT_SPLIT_HUGE_PAGES " (debugfs)";
	return NULL;
}

/* Collapse the MR's memory into huge pages, then split them again; the bytes stay. */
static bool thp_churn(unsigned int i)
{
	if (i % 2 == 0) {
		/*
		 * No huge page this time is the kernel's to decide: none free (ENOMEM), over
		 * the cgroup's limit or a page busy (EBUSY, EAGAIN), too many pages of the
		 * range swapped out (EINVAL, while other causes act).
		 */
		if (madvise(odp, buf_size, MADV_COLLAPSE) && errno != EAGAIN && errno != ENOMEM &&
		    errno != EBUSY && errno != EINVAL) {
			tap_diag("madvise(MADV_COLLAPSE): %s", strerror(errno));
			return false;
		}
		return true;
	}
	return vt_thp_split(odp, buf_size);
}

static const char *no_fork(void)
{
	return NULL;
}

/*
 * The process forks, and the child writes every byte of its copy of the MR and exits:
 * the parent's pages are shared copy-on-write meanwhile, so the device's next write
 * must break the sharing and land in the parent's own page, never in the child's.
 */
static bool fork_child_writes(unsigned int i)
{
	int status = 0;
	pid_t pid;

	pid = fork();
	if (pid < 0) {
		tap_diag("fork: %s", strerror(errno));
		return false;
	}
	if (!pid) {
		memset(odp, 0xa5 ^ (i & 0xff), buf_size);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		tap_diag("the child that wrote its copy did not exit cleanly (status %#x)", status);
		return false;
	}
	return true;
}

static const char *no_ksm(void)
{
	return access(VT_KSM "run", W_OK) ? VT_NO_KSM : NULL;
}

static bool ksm_started;

/*
 * KSM merges the MR's identical pages (the rounds write both halves of the MR alike
 * when it acts) and the device's next write breaks them apart. The first action starts
 * it, scanning without pause; ksm_stop() unmerges and stops it.
 */
static bool ksm_merge(unsigned int i)
{
	if (i) {
		sched_yield();
		return true;
	}
	if (!vt_ksm_start(odp, buf_size))
		return false;
	ksm_started = true;
	return true;
}

static void ksm_stop(void)
{
	if (!ksm_started)
		return;
	tap_diag("KSM: %ld pages shared, %ld sharing them at the end",
		 vt_read_long(VT_KSM "pages_shared"), vt_read_long(VT_KSM "pages_sharing"));
	vt_ksm_stop(odp, buf_size);
	ksm_started = false;
}

static const struct cause causes[] = {
	{ .name = "swap-out (MADV_PAGEOUT)", .unavailable = no_swap, .act = pageout },
	{ .name = "memory.high and memory.reclaim of half the MR in a cgroup",
	  .unavailable = no_memcg,
	  .act = in_cgroup },
	{ .name = "compaction", .unavailable = no_compaction, .act = compact,
	  .setup = compact_setup, .teardown = compact_teardown, .took = compact_took,
	  .placements = 3 },
	{ .name = "NUMA migration", .unavailable = one_node, .act = migrate },
	{ .name = "NUMA balancing", .unavailable = no_balancing, .act = balanced },
	{ .name = "THP collapse and split", .unavailable = no_thp, .act = thp_churn },
	{ .name = "fork, the child writing its copy", .unavailable = no_fork,
	  .act = fork_child_writes },
	{ .name = "KSM merging the MR's twin pages", .unavailable = no_ksm, .act = ksm_merge },
};
#define NR_CAUSES	(sizeof(causes) / sizeof(causes[0]))

struct actor {
	const struct cause *list[NR_CAUSES];
	unsigned int n;
	/* The invalidations counter when the actions began; -1 when it cannot be read. */
	long invalidations;
	/* Set by the traffic when it failed: no use acting on. */
	atomic_bool stop;
	/* Set by the actor when it is done: the traffic finishes its round and stops. */
	atomic_bool done;
	atomic_uint acts;
	bool failed;
	/* The rounds write both halves of the MR alike, for KSM to merge. */
	bool halves;
	/* In the memory cgroup: the actor takes the process out of it when done. */
	bool cgroup;
};

static void fill(unsigned char *p, bool halves, unsigned int seed)
{
	vt_fill(p, halves ? buf_size / 2 : buf_size, seed);
	if (halves)
		memcpy(p + buf_size / 2, p, buf_size / 2);
}

/* The first byte that differs from fill()'s, or -1. */
static long check(const unsigned char *p, bool halves, unsigned int seed)
{
	long bad;

	if (!halves)
		return vt_check(p, buf_size, seed);
	bad = vt_check(p, buf_size / 2, seed);
	if (bad < 0) {
		bad = vt_check(p + buf_size / 2, buf_size / 2, seed);
		if (bad >= 0)
			bad += buf_size / 2;
	}
	return bad;
}

static bool invalidated(long before);
static bool cgroup_out(void);

/*
 * The cause acts for CAUSE_MS and on until it took pages of the MR away, at most
 * CAUSE_MAX_MS; then the round in flight must still complete.
 */
static void *actor_thread(void *arg)
{
	struct actor *a = arg;
	long long start = vt_now_ms(), spent;
	unsigned int i;

	for (i = 0; !atomic_load(&a->stop); i++) {
		if (!a->list[i % a->n]->act(i / a->n)) {
			a->failed = true;
			break;
		}
		atomic_fetch_add(&a->acts, 1);
		spent = vt_now_ms() - start;
		if (spent >= CAUSE_MAX_MS ||
		    (spent >= CAUSE_MS && (a->invalidations < 0 || invalidated(a->invalidations))))
			break;
	}
	/* The limit is the cause: without it the round in flight gets through. */
	if (a->cgroup && !cgroup_out())
		a->failed = true;
	atomic_store(&a->done, true);
	return NULL;
}

/* Both limits of the cgroup lifted; false (errno set) if one could not be. */
static bool cgroup_unlimit(void)
{
	return vt_write_str(CGROUP "/memory.max", "max") &&
	       vt_write_str(CGROUP "/memory.high", "max");
}

/*
 * The process into the cgroup, its usage limited to cgroup_max by @knob: memory.max
 * (reclaim, and the OOM killer when reclaim cannot keep up) or memory.high (reclaim
 * and throttling only).
 */
static bool cgroup_enter(const char *knob)
{
	char pid[32], path[64];

	if (mkdir(CGROUP, 0755) && errno != EEXIST) {
		tap_diag("mkdir %s: %s", CGROUP, strerror(errno));
		return false;
	}
	snprintf(pid, sizeof(pid), "%d", getpid());
	snprintf(path, sizeof(path), CGROUP "/%s", knob);
	/* A cgroup left by a run that was killed may hold the other limit. */
	cgroup_unlimit();
	if (!vt_write_str(path, cgroup_max) || !vt_write_str(CGROUP "/cgroup.procs", pid)) {
		tap_diag("cannot set %s to %s and move into it: %s", path, cgroup_max,
			 strerror(errno));
		rmdir(CGROUP);
		return false;
	}
	/* Pages stay charged where they were faulted: fault the MR's again in here. */
	madvise(odp, buf_size, MADV_DONTNEED);
	return true;
}

/*
 * The limits lifted and the process back in the root cgroup; false (said) if it could
 * not be moved. What was charged in the cgroup stays charged there: without its
 * limits, the OOM killer cannot take the test for it later.
 */
static bool cgroup_out(void)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", getpid());
	if (!cgroup_unlimit())
		tap_diag("cannot lift the limits of %s: %s", CGROUP, strerror(errno));
	if (vt_write_str("/sys/fs/cgroup/cgroup.procs", pid))
		return true;
	tap_diag("cannot move out of %s: %s", CGROUP, strerror(errno));
	return false;
}

static void cgroup_leave(void)
{
	if (cgroup_out() && rmdir(CGROUP))
		tap_diag("cannot remove %s: %s", CGROUP, strerror(errno));
}

/* Whether the device's invalidations counter moved past @before. */
static bool invalidated(long before)
{
	return vt_hw_counter(ctx, opt.port, "odp_invalidations") > before;
}

/*
 * Rounds of traffic while @a acts, and the round in flight when it is done (a round
 * need not get through while the kernel keeps taking its pages); the check's verdict.
 * With @again, a clean run in which the cause touched none of the MR's pages gives no
 * verdict: *@again is set instead, for the caller to place the pages anew.
 */
static bool run(struct vt_loopback *lb, struct vt_odp_buf *src, struct vt_odp_buf *back,
		struct actor *a, const char *name, bool *again)
{
	long b[VT_ODP_NCOUNTERS], c[VT_ODP_NCOUNTERS], d[VT_ODP_NCOUNTERS] = { 0 };
	long retries = vt_hw_counter(ctx, opt.port, "odp_fault_retries");
	unsigned long long checked = 0;
	unsigned int round, during = 0;
	pthread_t thread;
	long bad = -1, bad_cpu = -1;
	bool moved = true, counted, clean;
	bool took = true;
	char verdict[64], note[128] = "";

	counted = vt_odp_snapshot(ctx, opt.port, b) && retries >= 0;
	a->invalidations = counted ? b[VT_ODP_INVALIDATIONS] : -1;
	atomic_store(&a->stop, false);
	atomic_store(&a->done, false);
	atomic_store(&a->acts, 0);
	if (pthread_create(&thread, NULL, actor_thread, a))
		tap_bail("pthread_create failed");
	for (round = 0; round < MAX_ROUNDS && (round < 2 || !atomic_load(&a->done)); round++) {
		unsigned int seed = 0x3300 + round;

		fill(src->p, a->halves, seed);
		memset(back->p, 0, buf_size);
		if (round % 2 == 0)
			moved = vt_move(lb, IBV_WR_RDMA_WRITE, src->p, src->mr, odp, odp_mr,
					buf_size) &&
				vt_move(lb, IBV_WR_RDMA_READ, odp, odp_mr, back->p, back->mr,
					buf_size);
		else
			moved = vt_move(lb, IBV_WR_SEND, src->p, src->mr, odp, odp_mr, buf_size) &&
				vt_move(lb, IBV_WR_SEND, odp, odp_mr, back->p, back->mr, buf_size);
		if (!moved)
			break;
		bad = check(back->p, a->halves, seed);
		bad_cpu = check(odp, a->halves, seed);
		if (bad >= 0 || bad_cpu >= 0) {
			tap_diag("round %u: byte %ld read back differs, byte %ld of the MR differs",
				 round, bad, bad_cpu);
			break;
		}
		checked += 2 * buf_size;
		if (!atomic_load(&a->done))
			during++;
	}
	atomic_store(&a->stop, true);
	pthread_join(thread, NULL);
	if (counted && vt_odp_snapshot(ctx, opt.port, c))
		vt_odp_delta(b, c, d);
	else
		counted = false;
	retries = vt_hw_counter(ctx, opt.port, "odp_fault_retries") - retries;
	if (!moved)
		snprintf(verdict, sizeof(verdict), "a transfer of round %u failed", round);
	else if (bad >= 0 || bad_cpu >= 0)
		snprintf(verdict, sizeof(verdict), "wrong bytes in round %u", round);
	else if (a->failed)
		snprintf(verdict, sizeof(verdict), "0 wrong, but an action failed");
	else
		snprintf(verdict, sizeof(verdict), "0 wrong");
	clean = moved && bad < 0 && bad_cpu < 0 && !a->failed && counted &&
		d[VT_ODP_FAULT_ERRORS] == 0;
	if (a->n == 1 && a->list[0]->took)
		took = a->list[0]->took(note, sizeof(note));
	if (again)
		*again = clean && !took && d[VT_ODP_INVALIDATIONS] == 0;
	if (again && *again) {
		tap_diag("%s: %u actions touched none of the MR's pages (%s): placing them anew",
			 name, atomic_load(&a->acts), note);
		return moved;
	}
	tap_ok(clean && d[VT_ODP_INVALIDATIONS] > 0 && took,
	       "%s: %u rounds of WRITE + READ or SEND in and out, %lu MiB (%u while it acted), "
	       "%llu bytes checked, %s; %u actions, %ld invalidations, %ld pages unlinked, "
	       "%ld faults (%ld tried again), %ld fault errors%s%s", name, round, buf_size >> 20,
	       during, checked, verdict, atomic_load(&a->acts), d[VT_ODP_INVALIDATIONS],
	       d[VT_ODP_PAGES_UNLINKED], d[VT_ODP_PAGE_FAULTS], retries, d[VT_ODP_FAULT_ERRORS],
	       *note ? "; " : "", note);
	return moved;
}

/*
 * A failed transfer leaves its QPs in the error state, and maybe a work request
 * posted: the next cause gets a new pair on the same PD.
 */
static void renew(struct vt_loopback *lb, struct ibv_pd *pd)
{
	vt_loopback_destroy(lb);
	if (vt_loopback_create_on(lb, ctx, &opt, pd))
		tap_bail("no connected QP pair after a failed transfer");
}

static unsigned int count_nodes(void)
{
	char path[64];
	unsigned int n = 0;

	for (;;) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%u", n);
		if (access(path, F_OK))
			return n;
		n++;
	}
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	struct vt_odp_buf src, back, dst;
	struct vt_loopback lb;
	struct actor all = { 0 };
	struct ibv_pd *pd;
	const char *why;
	unsigned int i, place;

	page_size = sysconf(_SC_PAGESIZE);
	nr_nodes = count_nodes();
	/*
	 * Each cause lasts at least two rounds, and under KASAN a round of 16 MiB took 47 s:
	 * a slower kernel moves a quarter, through the same paths.
	 */
	if (vt_time_factor() > 1)
		buf_size = BUF_SIZE / 4;
	snprintf(cgroup_max, sizeof(cgroup_max), "%lu", buf_size / 2);
	ctx = vt_odp_start(argc, argv, &opt, NR_CAUSES + 1, VT_NEED_ODP | VT_NEED_COUNTERS,
			   "ODP under memory pressure", &attr);
	if (page_size != 4096)
		tap_bail("page size %ld: this test counts 4 KiB pages", page_size);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		tap_bail("ibv_alloc_pd: %s", strerror(errno));
	if (vt_loopback_create_on(&lb, ctx, &opt, pd))
		tap_bail("no connected QP pair");
	if (!vt_odp_buf_init(&src, lb.pd, buf_size, 0, VT_PINNED_ACCESS) ||
	    !vt_odp_buf_init(&back, lb.pd, buf_size, 0, VT_PINNED_ACCESS) ||
	    !vt_odp_buf_init(&dst, lb.pd, buf_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register the buffers");
	odp = dst.p;
	odp_mr = dst.mr;

	for (i = 0; i < NR_CAUSES; i++) {
		bool ksm = causes[i].act == ksm_merge;
		bool cgroup = causes[i].act == in_cgroup;
		struct actor one = { .list = { &causes[i] }, .n = 1, .halves = ksm,
				     .cgroup = cgroup };
		bool balancing = causes[i].act == balanced;

		why = causes[i].unavailable();
		if (why) {
			tap_skip(why, "%s", causes[i].name);
			continue;
		}
		if (cgroup && !cgroup_enter("memory.high")) {
			tap_ok(false, "%s: cannot set up the cgroup", causes[i].name);
			continue;
		}
		if (balancing && !vt_write_str("/proc/sys/kernel/numa_balancing", "1")) {
			tap_ok(false, "%s: cannot turn it on: %s", causes[i].name, strerror(errno));
			continue;
		}
		for (place = 1;; place++) {
			bool again = false;

			if (causes[i].setup && !causes[i].setup()) {
				tap_ok(false, "%s: cannot set it up", causes[i].name);
				break;
			}
			if (!run(&lb, &src, &back, &one, causes[i].name,
				 place < causes[i].placements ? &again : NULL)) {
				renew(&lb, pd);
				break;
			}
			if (!again)
				break;
		}
		if (causes[i].teardown)
			causes[i].teardown();
		ksm_stop();
		if (cgroup) {
			cgroup_leave();
		} else if (balancing) {
			vt_write_str("/proc/sys/kernel/numa_balancing", "0");
		} else if (causes[i].act == fork_child_writes && !no_memcg()) {
			/*
			 * Not in the cgroup: the child's copy of the process's memory,
			 * charged to a cgroup smaller than the MR, had the OOM killer
			 * take the test. Fork is about copy-on-write, not pressure.
			 */
		} else {
			all.list[all.n++] = &causes[i];
			all.halves |= ksm;
		}
	}
	/*
	 * All together: every action the kernel has, in turn, under the cgroup if any. Its
	 * limit is memory.high: the pages that migration, compaction and collapse hold
	 * isolated cannot be reclaimed meanwhile, and under memory.max the OOM killer then
	 * took the test.
	 */
	if (!all.n) {
		tap_skip("the kernel has none of the causes", "all causes together");
	} else {
		bool cgroup = !no_memcg() && cgroup_enter("memory.high");

		all.cgroup = cgroup;

		if (!run(&lb, &src, &back, &all,
			 cgroup ? "all together, in the memory cgroup" : "all together", NULL))
			renew(&lb, pd);
		ksm_stop();
		if (cgroup)
			cgroup_leave();
	}

	vt_odp_buf_fini(&dst);
	vt_odp_buf_fini(&back);
	vt_odp_buf_fini(&src);
	vt_loopback_destroy(&lb);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_done();
}
