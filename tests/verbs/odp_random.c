// SPDX-License-Identifier: GPL-2.0
/*
 * Random verbs sequences, checked against a model of what memory must hold.
 *
 * A seed picks every step: RDMA WRITE, READ, SEND/RECV and atomics between regions
 * of each MR kind (pinned, ODP, ODP over a THP, ODP over a shared memfd, implicit
 * ODP), CPU writes, changes to the memory under the ODP MRs (MADV_DONTNEED,
 * MADV_FREE, MADV_PAGEOUT, mprotect, munmap and mmap again, hole punching, fork with
 * the child writing its copy, migration between NUMA nodes, MADV_COLLAPSE),
 * prefetches, re-registrations with other access flags and bounds, and bad keys,
 * addresses, lengths and permissions. The model knows for every byte what it must
 * hold (or the two values it may hold, after MADV_FREE or a transfer that failed
 * part way) and for every step the status it must end with. The same --seed and
 * --ops replay the same steps; --trace 1 prints them.
 *
 * vmtest-class: dma
 */
#include "lib/inject.h"
#include "lib/odp.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mempolicy.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define PAGE		4096UL
#define NREGIONS	6
#define MAX_PIECES	3
#define FULL_CHECK_EVERY 500
/* From this many steps on, a seed that made no step or fault of some kind is a defect. */
#define EXPECT_ALL_AFTER 2000

static long seed = 1, max_ops = 4000, max_seconds = 240, trace, inject;
static const struct vt_extra_option extra[] = {
	{ "seed", "the seed of the sequence", 0xffffffffL, &seed, NULL },
	{ "ops", "how many steps at most", 100000000L, &max_ops, NULL },
	{ "seconds", "stop after this long even if --ops is not reached", 86400L,
	  &max_seconds, NULL },
	{ "trace", "1: print every step", 1, &trace, NULL },
	{ "inject", "percent of the calls of an ODP fault function that fail (0: none)", 100,
	  &inject, NULL },
	{ 0 }
};

static struct vt_options opt;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct vt_loopback lb;
static bool have_implicit;
static int numa_nodes;

/* splitmix64: the only source of choices, so that a seed replays. */
static uint64_t rng;

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static size_t below(size_t n)
{
	return n ? rnd() % n : 0;
}

static bool chance(unsigned int percent)
{
	return below(100) < percent;
}

/* Memory and MRs -------------------------------------------------------------- */

enum kind { K_PINNED, K_ODP, K_THP, K_SHARED, K_IMPLICIT, K_NKINDS };
static const char *const kind_names[K_NKINDS] = {
	"pinned", "ODP", "ODP on a THP", "ODP on a shared memfd", "implicit ODP",
};

enum page_state { PG_RW, PG_RO, PG_HOLE };
enum byte_state { B_EXACT, B_EITHER, B_UNKNOWN };

struct region {
	int id;
	enum kind kind;
	unsigned char *p, *raw;	/* raw: the whole mapping (larger for a THP) */
	size_t size, raw_size;
	int memfd;
	struct ibv_mr *mr;	/* not for K_IMPLICIT: the implicit MR */
	size_t mr_lo, mr_hi;	/* the MR covers p + [mr_lo, mr_hi) */
	int access;
	uint32_t stale_key;	/* a key of an earlier registration, 0 when none */
	/* The model: each byte is want, or want or alt (B_EITHER), or anything. */
	unsigned char *want, *alt, *state;
	unsigned char *page;	/* enum page_state of each page */
};

static struct region regions[NREGIONS];
static struct ibv_mr *imr;	/* the implicit MR, when the device has them */
static int imr_access;
static unsigned char *noaccess;	/* PROT_NONE pages: implicit ODP must refuse them */
#define NOACCESS_SIZE (64 * PAGE)

static bool is_odp(const struct region *r)
{
	return r->kind != K_PINNED;
}

static struct ibv_mr *mr_of(const struct region *r)
{
	return r->kind == K_IMPLICIT ? imr : r->mr;
}

static int access_of(const struct region *r)
{
	return r->kind == K_IMPLICIT ? imr_access : r->access;
}

static bool in_mr(const struct region *r, size_t off, size_t len)
{
	return r->kind == K_IMPLICIT || (off >= r->mr_lo && off + len <= r->mr_hi);
}

/* Whether a page of [off, off + len) is in one of the states of mask (1 << state). */
static bool any_page(const struct region *r, size_t off, size_t len, unsigned int mask)
{
	size_t pg;

	if (!len)
		return false;
	for (pg = off / PAGE; pg <= (off + len - 1) / PAGE && pg < r->size / PAGE; pg++)
		if (mask & (1u << r->page[pg]))
			return true;
	return false;
}

static int random_access(enum kind kind)
{
	int access = 0;

	if (chance(80))
		access |= IBV_ACCESS_LOCAL_WRITE;
	if (chance(80))
		access |= IBV_ACCESS_REMOTE_READ;
	if ((access & IBV_ACCESS_LOCAL_WRITE) && chance(80))
		access |= IBV_ACCESS_REMOTE_WRITE;
	if ((access & IBV_ACCESS_LOCAL_WRITE) && chance(70))
		access |= IBV_ACCESS_REMOTE_ATOMIC;
	return access | (kind == K_PINNED ? 0 : IBV_ACCESS_ON_DEMAND);
}

static const int full_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;

/* Register r's MR over [lo, hi) with access; false (said) when that fails. */
static bool region_register(struct region *r, size_t lo, size_t hi, int access)
{
	r->mr = ibv_reg_mr(pd, r->p + lo, hi - lo, access);
	if (!r->mr) {
		tap_diag("ibv_reg_mr(region %d, %s, [%#zx, %#zx), access %#x): %s", r->id,
			 kind_names[r->kind], lo, hi, access, strerror(errno));
		return false;
	}
	r->mr_lo = lo;
	r->mr_hi = hi;
	r->access = access;
	return true;
}

static bool implicit_register(int access)
{
	imr = ibv_reg_mr(pd, NULL, SIZE_MAX, access | IBV_ACCESS_ON_DEMAND);
	if (!imr) {
		tap_diag("ibv_reg_mr(implicit ODP, access %#x): %s", access, strerror(errno));
		return false;
	}
	imr_access = access | IBV_ACCESS_ON_DEMAND;
	return true;
}

static bool region_map(struct region *r, enum kind kind, size_t pages)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;

	r->kind = kind;
	r->memfd = -1;
	r->size = kind == K_THP ? VT_THP_SIZE : pages * PAGE;
	r->raw_size = kind == K_THP ? 2 * VT_THP_SIZE : r->size;
	if (kind == K_SHARED) {
		r->memfd = memfd_create("odp_random", MFD_CLOEXEC);
		if (r->memfd < 0 || ftruncate(r->memfd, r->size)) {
			tap_diag("memfd_create + ftruncate(%zu): %s", r->size, strerror(errno));
			return false;
		}
		flags = MAP_SHARED;
	}
	r->raw = mmap(NULL, r->raw_size, PROT_READ | PROT_WRITE, flags, r->memfd, 0);
	if (r->raw == MAP_FAILED) {
		tap_diag("mmap(%zu bytes, %s): %s", r->raw_size, kind_names[kind], strerror(errno));
		return false;
	}
	r->p = r->raw;
	if (kind == K_THP) {
		r->p = (unsigned char *)(((uintptr_t)r->raw + VT_THP_SIZE - 1) &
					 ~(VT_THP_SIZE - 1));
		if (madvise(r->p, r->size, MADV_HUGEPAGE))
			tap_diag("madvise(MADV_HUGEPAGE): %s (the region stays in small pages)",
				 strerror(errno));
	}
	r->want = calloc(r->size, 1);
	r->alt = calloc(r->size, 1);
	r->state = calloc(r->size, 1);
	r->page = calloc(r->size / PAGE, 1);
	if (!r->want || !r->alt || !r->state || !r->page) {
		tap_diag("out of memory for the model of %zu bytes", r->size);
		return false;
	}
	return true;
}

static void region_unmap(struct region *r)
{
	if (r->mr && ibv_dereg_mr(r->mr))
		tap_diag("ibv_dereg_mr(region %d): %s", r->id, strerror(errno));
	if (r->raw && r->raw != MAP_FAILED)
		munmap(r->raw, r->raw_size);
	if (r->memfd >= 0)
		close(r->memfd);
	free(r->want);
	free(r->alt);
	free(r->state);
	free(r->page);
	memset(r, 0, sizeof(*r));
}

/* The CPU writes a pattern of its own into [off, off + len); the model follows. */
static void cpu_fill(struct region *r, size_t off, size_t len, unsigned int pattern)
{
	vt_fill(r->want + off, len, pattern);
	memcpy(r->p + off, r->want + off, len);
	memset(r->state + off, B_EXACT, len);
}

static bool regions_create(void)
{
	static const enum kind first[NREGIONS] = {
		K_PINNED, K_ODP, K_THP, K_SHARED, K_IMPLICIT, K_ODP,
	};
	static const size_t max_pages[K_NKINDS] = {
		[K_PINNED] = 32, [K_ODP] = 128, [K_SHARED] = 64, [K_IMPLICIT] = 128,
	};
	int i;

	noaccess = mmap(NULL, NOACCESS_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (noaccess == MAP_FAILED) {
		tap_diag("mmap(PROT_NONE): %s", strerror(errno));
		return false;
	}
	if (have_implicit && !implicit_register(full_access))
		return false;
	for (i = 0; i < NREGIONS; i++) {
		struct region *r = &regions[i];
		enum kind kind = first[i];

		if (kind == K_IMPLICIT && !have_implicit)
			kind = K_ODP;
		r->id = i;
		if (!region_map(r, kind, 1 + below(max_pages[kind])))
			return false;
		/* Half of them start untouched: the first faults find no page at all. */
		if (chance(50))
			cpu_fill(r, 0, r->size, (unsigned int)(seed * 1000 + i));
		if (kind != K_IMPLICIT &&
		    !region_register(r, 0, r->size, full_access |
				     (kind == K_PINNED ? 0 : IBV_ACCESS_ON_DEMAND)))
			return false;
	}
	return true;
}

/* The model ------------------------------------------------------------------- */

/* One stretch of a region that a work request names. */
struct piece {
	struct region *r;
	size_t off;
	uint32_t len;
	uint32_t key;		/* lkey, or rkey for the remote side */
	bool away;		/* at the PROT_NONE pages instead, under the implicit MR */
};

/* A copy of the model of some bytes: what a transfer carries. */
struct carried {
	unsigned char *want, *alt, *state;
	size_t len;
};

static bool carried_alloc(struct carried *c, size_t len)
{
	c->len = len;
	c->want = malloc(len ? len : 1);
	c->alt = malloc(len ? len : 1);
	c->state = malloc(len ? len : 1);
	return c->want && c->alt && c->state;
}

static void carried_free(struct carried *c)
{
	free(c->want);
	free(c->alt);
	free(c->state);
}

static void gather(struct carried *c, const struct piece *pc, int n)
{
	size_t at = 0;
	int i;

	for (i = 0; i < n; i++) {
		/* What a spoiled piece would carry is not known: the transfer fails. */
		if (pc[i].away || pc[i].off + pc[i].len > pc[i].r->size) {
			memset(c->state + at, B_UNKNOWN, pc[i].len);
		} else {
			memcpy(c->want + at, pc[i].r->want + pc[i].off, pc[i].len);
			memcpy(c->alt + at, pc[i].r->alt + pc[i].off, pc[i].len);
			memcpy(c->state + at, pc[i].r->state + pc[i].off, pc[i].len);
		}
		at += pc[i].len;
	}
}

/*
 * The model of the destination after a transfer of c into it: the bytes carried
 * when it succeeded; when it failed, any prefix may have been written, so each byte
 * is its old value or the one carried (a hole keeps its model: nothing wrote it).
 */
static void scatter(const struct carried *c, const struct piece *pc, int n, bool done)
{
	size_t at = 0, k;
	int i;

	for (i = 0; i < n; i++) {
		struct region *r = pc[i].r;

		for (k = 0; k < pc[i].len && at < c->len; k++, at++) {
			size_t o = pc[i].off + k;

			if (pc[i].away || o >= r->size)
				continue;
			if (done) {
				r->want[o] = c->want[at];
				r->alt[o] = c->alt[at];
				r->state[o] = c->state[at];
			} else if (r->page[o / PAGE] == PG_HOLE) {
				continue;
			} else if (r->state[o] == B_EXACT && c->state[at] == B_EXACT) {
				if (r->want[o] != c->want[at]) {
					r->alt[o] = c->want[at];
					r->state[o] = B_EITHER;
				}
			} else {
				r->state[o] = B_UNKNOWN;
			}
		}
	}
}

static long bytes_checked;

/* Compare memory with the model over [off, off + len), holes left out. */
static bool region_matches(struct region *r, size_t off, size_t len, const char *when)
{
	size_t o;

	if (off + len > r->size) {
		tap_diag("%s: [%#zx, %#zx) is not inside region %d of %#zx bytes (a defect of "
			 "this program)", when, off, off + len, r->id, r->size);
		return false;
	}
	for (o = off; o < off + len; o++) {
		unsigned char b;

		if (r->page[o / PAGE] == PG_HOLE) {
			/* Still nothing there: a mapping that took it would take the device's writes. */
			if (!msync(r->p + o / PAGE * PAGE, PAGE, MS_ASYNC) || errno != ENOMEM) {
				tap_diag("%s: region %d page %zu should be unmapped, but something "
					 "is mapped there now", when, r->id, o / PAGE);
				return false;
			}
			o = (o / PAGE + 1) * PAGE - 1;
			continue;
		}
		b = r->p[o];
		if (b == r->want[o] || r->state[o] == B_UNKNOWN ||
		    (r->state[o] == B_EITHER && b == r->alt[o]))
			continue;
		tap_diag("%s: region %d (%s) byte %#zx is %#04x, the model says %#04x%s", when,
			 r->id, kind_names[r->kind], o, b, r->want[o],
			 r->state[o] == B_EITHER ? " or its other value" : "");
		tap_diag("the model's page state %d, the MR covers [%#zx, %#zx), access %#x",
			 r->page[o / PAGE], r->mr_lo, r->mr_hi, access_of(r));
		return false;
	}
	bytes_checked += len;
	return true;
}

/* The keys of live MRs: a bad key must be none of them. */
static bool key_live(uint32_t key)
{
	int i;

	if (imr && (imr->lkey == key || imr->rkey == key))
		return true;
	for (i = 0; i < NREGIONS; i++)
		if (regions[i].mr && (regions[i].mr->lkey == key || regions[i].mr->rkey == key))
			return true;
	return false;
}

/*
 * A key no live MR has: a deregistered MR's key, or a live one with another key byte.
 * Worked out without the random source, so that the kernel's keys do not change
 * which steps a seed makes.
 */
static uint32_t bad_key(const struct region *r)
{
	uint32_t key = r->stale_key ? r->stale_key : mr_of(r)->lkey ^ 0x5a;
	int i;

	for (i = 0; i < 256 && key_live(key); i++)
		key = (key & ~0xffu) | ((key + 1) & 0xff);
	return key;
}

/* Steps ----------------------------------------------------------------------- */

enum step {
	S_WRITE, S_READ, S_SEND, S_ATOMIC, S_CPU_WRITE, S_CHECK, S_DONTNEED, S_FREE,
	S_PAGEOUT, S_PROTECT, S_UNMAP, S_REMAP, S_PUNCH, S_FORK, S_MIGRATE, S_COLLAPSE,
	S_PREFETCH, S_REREG, S_NSTEPS
};

static const struct {
	const char *name;
	unsigned int weight;
} steps[S_NSTEPS] = {
	[S_WRITE] = { "RDMA WRITE", 20 },
	[S_READ] = { "RDMA READ", 16 },
	[S_SEND] = { "SEND/RECV", 12 },
	[S_ATOMIC] = { "atomic", 8 },
	[S_CPU_WRITE] = { "CPU write", 8 },
	[S_CHECK] = { "check of a region", 3 },
	[S_DONTNEED] = { "MADV_DONTNEED", 4 },
	[S_FREE] = { "MADV_FREE", 3 },
	[S_PAGEOUT] = { "MADV_PAGEOUT", 3 },
	[S_PROTECT] = { "mprotect", 4 },
	[S_UNMAP] = { "munmap", 2 },
	[S_REMAP] = { "mmap again", 2 },
	[S_PUNCH] = { "hole punch", 2 },
	[S_FORK] = { "fork, the child writes", 2 },
	[S_MIGRATE] = { "move_pages", 2 },
	[S_COLLAPSE] = { "MADV_COLLAPSE", 1 },
	[S_PREFETCH] = { "prefetch", 5 },
	[S_REREG] = { "re-registration", 2 },
};

/* What is wrong with a work request on purpose: at most one thing at a time. */
enum fault {
	F_NONE, F_BAD_LKEY, F_LOCAL_OOB, F_LOCAL_HOLE, F_LOCAL_RO, F_LOCAL_NO_WRITE,
	F_BAD_RKEY, F_REMOTE_OOB, F_REMOTE_HOLE, F_REMOTE_RO, F_REMOTE_NO_ACCESS,
	F_RECV_SHORT, F_NFAULTS
};

static const char *const fault_names[F_NFAULTS] = {
	[F_NONE] = "none",
	[F_BAD_LKEY] = "a bad lkey",
	[F_LOCAL_OOB] = "a local SGE out of its MR",
	[F_LOCAL_HOLE] = "a local SGE over unmapped memory",
	[F_LOCAL_RO] = "a local SGE the device writes over read-only memory",
	[F_LOCAL_NO_WRITE] = "a local SGE the device writes in an MR without LOCAL_WRITE",
	[F_BAD_RKEY] = "a bad rkey",
	[F_REMOTE_OOB] = "a remote range out of its MR",
	[F_REMOTE_HOLE] = "a remote range over unmapped memory",
	[F_REMOTE_RO] = "a remote range written over read-only memory",
	[F_REMOTE_NO_ACCESS] = "a remote MR without the access",
	[F_RECV_SHORT] = "a receive shorter than the message",
};

static struct {
	long steps[S_NSTEPS];
	long faults[F_NFAULTS];
	long errors_expected;
	long injected;
	long moved;
	long rebuilt;
} stats;

static long step_no;
static bool status_ok = true, bytes_ok = true, memory_ok = true;

/* Report the step that went wrong, with how to replay it, and stop the run. */
static void diverged(const char *what)
{
	tap_diag("step %ld of seed %ld: %s", step_no, seed, what);
	tap_diag("replay: odp_random --dev %s --seed %ld --ops %ld%s%.0ld --trace 1",
		 ibv_get_device_name(ctx->device), seed, step_no + 1, inject ? " --inject " : "",
		 inject);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!trace)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	tap_diag("%ld: %s", step_no, line);
}

static size_t random_len(size_t max)
{
	static const size_t limits[] = { 256, 2 * PAGE, 64 << 10, 256 << 10 };
	size_t lim = limits[below(100) < 40 ? 0 : below(100) < 55 ? 1 : below(100) < 80 ? 2 : 3];

	if (lim > max)
		lim = max;
	return 1 + below(lim);
}

static struct region *random_region(void)
{
	return &regions[below(NREGIONS)];
}

static bool overlaps(const struct piece *a, const struct piece *b)
{
	return a->r == b->r && a->off < b->off + b->len && b->off < a->off + a->len;
}

/*
 * A stretch the device may use as it should: inside its MR, no hole, not read-only
 * where the device writes, and the access it needs.
 */
static bool piece_clean(const struct piece *pc, bool device_writes, int need)
{
	const struct region *r = pc->r;

	return in_mr(r, pc->off, pc->len) && (access_of(r) & need) == need &&
	       !any_page(r, pc->off, pc->len, 1u << PG_HOLE) &&
	       !(device_writes && any_page(r, pc->off, pc->len, 1u << PG_RO));
}

/* A clean piece of about len bytes (shorter when no region is that long). */
static bool draw_piece(struct piece *pc, size_t len, bool device_writes, int need, bool remote,
		       const struct piece *avoid, int navoid)
{
	int tries, i;

	for (tries = 0; tries < 64; tries++) {
		struct region *r = random_region();
		size_t lo = r->kind == K_IMPLICIT ? 0 : r->mr_lo;
		size_t hi = r->kind == K_IMPLICIT ? r->size : r->mr_hi;
		size_t l = len < hi - lo ? len : hi - lo;

		if (!l)
			continue;
		pc->r = r;
		pc->away = false;
		pc->len = l;
		pc->off = lo + below(hi - lo - l + 1);
		pc->key = remote ? mr_of(r)->rkey : mr_of(r)->lkey;
		if (!piece_clean(pc, device_writes, need))
			continue;
		for (i = 0; i < navoid && !overlaps(pc, &avoid[i]); i++)
			;
		if (i == navoid)
			return true;
	}
	return false;
}

/*
 * Make piece pc wrong in the way f says, keeping its length; false when no region
 * offers that fault now (then the step goes without).
 */
static bool spoil(struct piece *pc, enum fault f, int need, const struct piece *avoid,
		  int navoid)
{
	int tries, i;

	switch (f) {
	case F_BAD_LKEY:
	case F_BAD_RKEY:
		pc->key = bad_key(pc->r);
		return true;
	case F_LOCAL_OOB:
	case F_REMOTE_OOB:
		for (tries = 0; tries < 16; tries++) {
			struct region *r = random_region();

			if (r->kind == K_IMPLICIT)
				continue;
			pc->r = r;
			pc->key = f == F_LOCAL_OOB ? r->mr->lkey : r->mr->rkey;
			/* Across the end of the MR, or across its start when it has one. */
			if (r->mr_lo && chance(50))
				pc->off = r->mr_lo - 1 - below(pc->len < r->mr_lo ? pc->len : r->mr_lo);
			else
				pc->off = r->mr_hi - below(pc->len < r->mr_hi ? pc->len : r->mr_hi);
			return true;
		}
		return false;
	case F_LOCAL_HOLE:
	case F_REMOTE_HOLE:
	case F_LOCAL_RO:
	case F_REMOTE_RO: {
		unsigned int st = (f == F_LOCAL_HOLE || f == F_REMOTE_HOLE) ? PG_HOLE : PG_RO;
		bool local = f == F_LOCAL_HOLE || f == F_LOCAL_RO;

		for (tries = 0; tries < 32; tries++) {
			struct region *r = random_region();
			size_t pg = below(r->size / PAGE), lo, hi;

			if (!is_odp(r) || r->page[pg] != st || r->size < pc->len)
				continue;
			/* Any start from which the piece touches page pg. */
			lo = pg * PAGE + 1 > pc->len ? pg * PAGE + 1 - pc->len : 0;
			hi = pg * PAGE + PAGE - 1;
			if (hi > r->size - pc->len)
				hi = r->size - pc->len;
			if (lo > hi)
				continue;
			pc->r = r;
			pc->key = local ? mr_of(r)->lkey : mr_of(r)->rkey;
			pc->off = lo + below(hi - lo + 1);
			if (!in_mr(r, pc->off, pc->len) ||
			    (access_of(r) & need) != need ||
			    (st == PG_RO && any_page(r, pc->off, pc->len, 1u << PG_HOLE)))
				continue;
			for (i = 0; i < navoid && !overlaps(pc, &avoid[i]); i++)
				;
			if (i == navoid)
				return true;
		}
		/* Under the implicit MR, memory nobody may access is as good as a hole. */
		if (st == PG_HOLE && imr && (imr_access & need) == need &&
		    pc->len <= NOACCESS_SIZE) {
			for (i = 0; i < NREGIONS && regions[i].kind != K_IMPLICIT; i++)
				;
			if (i == NREGIONS)
				return false;
			pc->r = &regions[i];
			pc->key = local ? imr->lkey : imr->rkey;
			pc->away = true;
			return true;
		}
		return false;
	}
	case F_LOCAL_NO_WRITE:
	case F_REMOTE_NO_ACCESS:
		for (tries = 0; tries < 16; tries++) {
			struct region *r = random_region();
			size_t lo = r->kind == K_IMPLICIT ? 0 : r->mr_lo;
			size_t hi = r->kind == K_IMPLICIT ? r->size : r->mr_hi;

			if ((access_of(r) & need) == need || hi - lo < pc->len)
				continue;
			pc->r = r;
			pc->off = lo + below(hi - lo - pc->len + 1);
			pc->key = f == F_LOCAL_NO_WRITE ? mr_of(r)->lkey : mr_of(r)->rkey;
			if (any_page(r, pc->off, pc->len, 1u << PG_HOLE))
				continue;
			for (i = 0; i < navoid && !overlaps(pc, &avoid[i]); i++)
				;
			if (i == navoid)
				return true;
		}
		return false;
	default:
		return false;
	}
}

/* The address the device is given for a piece. */
static uintptr_t piece_addr(const struct piece *pc)
{
	return pc->away ? (uintptr_t)noaccess + (NOACCESS_SIZE - pc->len) / 2 :
			  (uintptr_t)pc->r->p + pc->off;
}

/* Which faults each transfer can have, and the status each must end with. */
static bool local_fault(enum fault f)
{
	return f >= F_BAD_LKEY && f <= F_LOCAL_NO_WRITE;
}

/* Whether a step of kind @s can have fault @f. */
static bool fault_fits(enum fault f, enum step s)
{
	if (f == F_RECV_SHORT && s != S_SEND)
		return false;
	/* WRITE and SEND only read their local memory. */
	if ((f == F_LOCAL_RO || f == F_LOCAL_NO_WRITE) && (s == S_WRITE || s == S_SEND))
		return false;
	/* READ does not write the remote memory. */
	return !(f == F_REMOTE_RO && s == S_READ);
}

static enum fault random_fault(enum step s)
{
	enum fault f;

	if (!chance(15))
		return F_NONE;
	/*
	 * From half the steps after which every kind of fault must have happened on, one
	 * that has not comes first: the rarest (a receive shorter than the message, which
	 * only some SENDs can have) once did not happen in 3000 steps, and the check that
	 * every kind happened is about the generator, not a gamble.
	 */
	if (step_no >= EXPECT_ALL_AFTER / 2)
		for (f = 1; f < F_NFAULTS; f++)
			if (!stats.faults[f] && fault_fits(f, s))
				return f;
	do
		f = 1 + below(F_NFAULTS - 1);
	while (!fault_fits(f, s));
	return f;
}

/* Posting, waiting and rebuilding --------------------------------------------- */

static bool remap(struct region *r, size_t pg, size_t npg);

/*
 * A new QP pair, after a step that failed on purpose. Its queues are mappings of
 * the device that the kernel may place in a hole of a region, where the next step
 * meant to reach nothing would write into them: the holes are mapped again first
 * (the model knows what they then hold).
 */
static bool pair_rebuild(void)
{
	int i;

	for (i = 0; i < NREGIONS; i++)
		if (!remap(&regions[i], 0, regions[i].size / PAGE))
			return false;
	vt_loopback_destroy(&lb);
	stats.rebuilt++;
	if (vt_loopback_create_on(&lb, ctx, &opt, pd)) {
		tap_diag("cannot make a new QP pair after step %ld", step_no);
		return false;
	}
	return true;
}

/* Wait for one completion on cq; false (said) when none comes or it is not wr_id's. */
static bool wait_wc(struct ibv_cq *cq, uint64_t wr_id, struct ibv_wc *wc)
{
	if (vt_poll_one(cq, wc, VT_WAIT_MS)) {
		diverged("a completion did not come");
		return false;
	}
	if (wc->wr_id != wr_id) {
		tap_diag("completion of wr_id %llu, expected %llu",
			 (unsigned long long)wc->wr_id, (unsigned long long)wr_id);
		diverged("a completion of another work request");
		return false;
	}
	return true;
}

/*
 * With --inject, each step arms one function of the ODP fault path, which then fails on
 * that percent of its calls (function error injection, lib/inject.h).
 */
static const struct {
	const char *func;
	int err;
	bool hard;	/* a failure for good: a step that faults may then end in an error */
} arms[] = {
	{ NULL, 0, false },			/* nothing: the step is the model's */
	{ "hmm_range_fault", EBUSY, false },	/* does not settle: tried again, completes */
	{ "hmm_range_fault", EFAULT, true },
	{ "hmm_range_fault", ENOMEM, true },
	{ "hmm_dma_map_pfns", EIO, true },
	{ "hmm_dma_map_pfns", ENOMEM, true },
};
static unsigned int armed;	/* arms[] of the step under way */
#define NARMS (sizeof(arms) / sizeof(arms[0]))
static long injected_by[NARMS];	/* failures survived, per arms[] */

static bool any_odp(const struct piece *pc, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (is_odp(pc[i].r))
			return true;
	return false;
}

enum outcome { AS_MODEL, INJECTED, DIVERGED };

/*
 * A completion against the model. A step that may fault ODP memory while a failure for
 * good is armed may instead end in an error of a failed fault: counted, not a
 * divergence. Success where the model says error never is.
 */
static enum outcome judge(const char *what, enum ibv_wc_status got, enum ibv_wc_status want,
			  bool odp)
{
	char line[256];

	if (got == want)
		return AS_MODEL;
	if (odp && arms[armed].hard &&
	    (got == IBV_WC_LOC_PROT_ERR || got == IBV_WC_LOC_QP_OP_ERR ||
	     got == IBV_WC_REM_ACCESS_ERR || got == IBV_WC_REM_OP_ERR)) {
		say("  %s ended in %s: %s injected into %s", what, ibv_wc_status_str(got),
		    strerrorname_np(arms[armed].err), arms[armed].func);
		stats.injected++;
		injected_by[armed]++;
		return INJECTED;
	}
	snprintf(line, sizeof(line), "%s completed with %s, the model says %s%s%s", what,
		 ibv_wc_status_str(got), ibv_wc_status_str(want),
		 arms[armed].func ? " (injected: " : "",
		 arms[armed].func ? arms[armed].func : "");
	if (arms[armed].func)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " %s)",
			 strerrorname_np(arms[armed].err));
	diverged(line);
	status_ok = false;
	return DIVERGED;
}

/* A completion of a step no injection can fail, against the model. */
static bool status_is(const char *what, enum ibv_wc_status got, enum ibv_wc_status want)
{
	return judge(what, got, want, false) == AS_MODEL;
}

static void to_sges(struct ibv_sge *sge, const struct piece *pc, int n)
{
	int i;

	for (i = 0; i < n; i++)
		sge[i] = (struct ibv_sge){ piece_addr(&pc[i]), pc[i].len, pc[i].key };
}

static bool check_pieces(const struct piece *pc, int n, const char *what)
{
	int i;

	for (i = 0; i < n; i++)
		if (!region_matches(pc[i].r, pc[i].off, pc[i].len, what)) {
			diverged(what);
			bytes_ok = false;
			return false;
		}
	return true;
}

static size_t total(const struct piece *pc, int n)
{
	size_t len = 0;
	int i;

	for (i = 0; i < n; i++)
		len += pc[i].len;
	return len;
}

static void say_pieces(const char *what, const struct piece *pc, int n, enum fault f)
{
	char line[400];
	int at = 0, i;

	for (i = 0; i < n && at < (int)sizeof(line) - 64; i++)
		at += snprintf(line + at, sizeof(line) - at, " [r%d+%#zx len %u key %#x%s]",
			       pc[i].r->id, pc[i].off, pc[i].len, pc[i].key,
			       pc[i].away ? " at the PROT_NONE pages" : "");
	say("%s%s, fault: %s", what, line, fault_names[f]);
}

/* Post wr on qp; false (said) when the provider refuses it. */
static bool post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int ret = ibv_post_send(qp, wr, &bad);

	if (ret) {
		tap_diag("ibv_post_send(opcode %d): %s", wr->opcode, strerror(ret));
		diverged("a work request the model takes was refused");
	}
	return !ret;
}

/* Make one piece of pc[n] (or the remote one) wrong as f says; F_NONE when it cannot. */
static enum fault spoil_one(enum fault f, struct piece *pc, int n, int need,
			    const struct piece *avoid, int navoid)
{
	struct piece *victim = &pc[below(n)];
	struct piece saved = *victim;

	if (f == F_NONE || spoil(victim, f, need, avoid, navoid))
		return f;
	*victim = saved;
	return F_NONE;
}

/* After a step that failed (on purpose, or injected): a new QP pair. */
static bool failed_as_planned(enum fault f)
{
	if (f != F_NONE)
		stats.errors_expected++;
	return pair_rebuild();
}

/*
 * RDMA WRITE (local pieces to one remote piece) or READ (one remote piece into local
 * pieces), with at most one fault; the status and the bytes must be the model's.
 */
static bool step_rdma(bool write)
{
	enum fault f = random_fault(write ? S_WRITE : S_READ);
	int n = 1 + below(MAX_PIECES), i;
	int lneed = write ? 0 : IBV_ACCESS_LOCAL_WRITE;
	int rneed = write ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ;
	struct piece loc[MAX_PIECES], rem;
	struct ibv_sge sge[MAX_PIECES];
	struct ibv_send_wr wr = { .wr_id = step_no, .sg_list = sge,
				  .opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED };
	enum outcome o = DIVERGED;
	struct carried c;
	struct ibv_wc wc;
	size_t len;
	bool ok;

	for (i = 0; i < n; i++)
		if (!draw_piece(&loc[i], random_len(64 << 10), !write, lneed, false, loc,
				write ? 0 : i))
			return true;
	len = total(loc, n);
	if (!draw_piece(&rem, len, write, rneed, true, loc, n))
		return true;
	/* No region that long: the local side shrinks to the remote piece. */
	for (i = 0, len = rem.len; i < n && len; i++) {
		loc[i].len = len < loc[i].len ? len : loc[i].len;
		len -= loc[i].len;
	}
	n = i;
	len = rem.len;
	if (local_fault(f))
		f = spoil_one(f, loc, n, lneed, &rem, 1);
	else
		f = spoil_one(f, &rem, 1, rneed, loc, n);
	stats.faults[f]++;
	say_pieces(write ? "RDMA WRITE from" : "RDMA READ into", loc, n, f);
	say_pieces(write ? "  to" : "  from", &rem, 1, F_NONE);
	to_sges(sge, loc, n);
	wr.num_sge = n;
	wr.wr.rdma.remote_addr = piece_addr(&rem);
	wr.wr.rdma.rkey = rem.key;
	if (!carried_alloc(&c, len)) {
		tap_diag("out of memory");
		return false;
	}
	gather(&c, write ? loc : &rem, write ? n : 1);
	ok = post(lb.qp[below(2)], &wr) && wait_wc(lb.send_cq, wr.wr_id, &wc);
	if (ok)
		o = judge(write ? "RDMA WRITE" : "RDMA READ", wc.status,
			  f == F_NONE ? IBV_WC_SUCCESS :
			  local_fault(f) ? IBV_WC_LOC_PROT_ERR : IBV_WC_REM_ACCESS_ERR, any_odp(loc, n) || any_odp(&rem, 1));
	ok = ok && o != DIVERGED;
	if (ok)
		scatter(&c, write ? &rem : loc, write ? 1 : n, f == F_NONE && o == AS_MODEL);
	carried_free(&c);
	if (!ok)
		return false;
	if (f != F_NONE || o == INJECTED)
		return failed_as_planned(f);
	stats.moved += (long)len;
	return write ? check_pieces(&rem, 1, "after an RDMA WRITE") :
		       check_pieces(loc, n, "after an RDMA READ");
}

/* The receive side's faults are the responder's local ones. */
static bool recv_fault(enum fault f)
{
	return f == F_BAD_RKEY || f == F_REMOTE_OOB || f == F_REMOTE_HOLE || f == F_REMOTE_RO ||
	       f == F_REMOTE_NO_ACCESS;
}

/*
 * Whether the bytes a message of len bytes reaches in a receive are all fine: the
 * device looks at a receive piece only as far as the message fills it.
 */
static bool receive_reached_clean(const struct piece *rcv, int m, size_t len)
{
	int i;

	for (i = 0; i < m && len; i++) {
		struct piece used = rcv[i];

		used.len = len < rcv[i].len ? len : rcv[i].len;
		len -= used.len;
		if (used.away || used.key != mr_of(used.r)->lkey ||
		    !piece_clean(&used, true, IBV_ACCESS_LOCAL_WRITE))
			return false;
	}
	return true;
}

/* SEND from local pieces into a receive of other pieces, through the other QP. */
static bool step_send(void)
{
	static const enum fault as_local[F_NFAULTS] = {
		[F_BAD_RKEY] = F_BAD_LKEY, [F_REMOTE_OOB] = F_LOCAL_OOB,
		[F_REMOTE_HOLE] = F_LOCAL_HOLE, [F_REMOTE_RO] = F_LOCAL_RO,
		[F_REMOTE_NO_ACCESS] = F_LOCAL_NO_WRITE,
	};
	enum fault f = random_fault(S_SEND);
	int n = 1 + below(MAX_PIECES), m = 1 + below(MAX_PIECES), i, q = below(2);
	enum ibv_wc_status want_send = IBV_WC_SUCCESS, want_recv = IBV_WC_SUCCESS;
	struct piece snd[MAX_PIECES + 1], rcv[MAX_PIECES];
	struct ibv_sge ssge[MAX_PIECES + 1], rsge[MAX_PIECES];
	struct ibv_send_wr wr = { .wr_id = step_no, .sg_list = ssge, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_recv_wr rwr = { .wr_id = step_no, .sg_list = rsge, .num_sge = m }, *rbad;
	enum outcome o = DIVERGED;
	size_t len, rlen;
	struct carried c;
	struct ibv_wc wc;
	bool ok;
	int ret;

	for (i = 0; i < m; i++)
		if (!draw_piece(&rcv[i], random_len(32 << 10), true, IBV_ACCESS_LOCAL_WRITE,
				false, rcv, i))
			return true;
	rlen = total(rcv, m);
	for (i = 0; i < n; i++)
		if (!draw_piece(&snd[i], random_len(rlen), false, 0, false, rcv, m))
			return true;
	while (n && total(snd, n) > rlen)	/* the message fits, unless that is the fault */
		n--;
	if (!n)
		return true;
	if (f == F_RECV_SHORT) {
		/* One more piece makes the message one byte longer than the receive. */
		len = total(snd, n);
		if (draw_piece(&snd[n], rlen + 1 - len, false, 0, false, rcv, m) &&
		    snd[n].len == rlen + 1 - len)
			n++;
		else
			f = F_NONE;
	} else if (recv_fault(f)) {
		struct piece drawn[MAX_PIECES];

		/* A fault the message does not reach is none: the receive goes back as drawn. */
		memcpy(drawn, rcv, sizeof(drawn));
		if (spoil_one(as_local[f], rcv, m, IBV_ACCESS_LOCAL_WRITE, snd, n) == F_NONE ||
		    receive_reached_clean(rcv, m, total(snd, n))) {
			memcpy(rcv, drawn, sizeof(drawn));
			f = F_NONE;
		}
	} else {
		f = spoil_one(f, snd, n, 0, rcv, m);
	}
	len = total(snd, n);
	/*
	 * A receive too short for the message: an invalid request for the requester, a
	 * length error for the receive. A receive over memory it may not use: a remote
	 * operation error, and rxe ends the receive with a local QP operation error. A
	 * send SGE naming memory it may not use: a local protection error.
	 */
	if (f == F_RECV_SHORT) {
		want_send = IBV_WC_REM_INV_REQ_ERR;
		want_recv = IBV_WC_LOC_LEN_ERR;
	} else if (recv_fault(f)) {
		want_send = IBV_WC_REM_OP_ERR;
		want_recv = IBV_WC_LOC_QP_OP_ERR;
	} else if (f != F_NONE) {
		want_send = IBV_WC_LOC_PROT_ERR;
	}
	stats.faults[f]++;
	say_pieces("SEND from", snd, n, f);
	say_pieces("  into", rcv, m, F_NONE);
	to_sges(ssge, snd, n);
	to_sges(rsge, rcv, m);
	wr.num_sge = n;
	if (!carried_alloc(&c, len)) {
		tap_diag("out of memory");
		return false;
	}
	gather(&c, snd, n);
	ret = ibv_post_recv(lb.qp[!q], &rwr, &rbad);
	if (ret) {
		tap_diag("ibv_post_recv: %s", strerror(ret));
		diverged("a receive the model takes was refused");
	}
	ok = !ret && post(lb.qp[q], &wr) && wait_wc(lb.send_cq, wr.wr_id, &wc);
	if (ok)
		o = judge("SEND", wc.status, want_send, any_odp(snd, n) || any_odp(rcv, m));
	ok = ok && o != DIVERGED;
	/*
	 * A send that failed on its own side never reached the receive; after an injected
	 * failure, which side failed is not known.
	 */
	if (ok && o == AS_MODEL && (f == F_NONE || f == F_RECV_SHORT || recv_fault(f))) {
		ok = wait_wc(lb.recv_cq, rwr.wr_id, &wc) &&
		     status_is("RECV", wc.status, want_recv);
		if (ok && f == F_NONE && wc.byte_len != len) {
			tap_diag("the receive says %u bytes, %zu were sent", wc.byte_len, len);
			diverged("a receive of the wrong length");
			status_ok = ok = false;
		}
	}
	/* The message reaches the receive's first len bytes, no more. */
	for (i = 0, rlen = len; i < m; i++) {
		rcv[i].len = rlen < rcv[i].len ? rlen : rcv[i].len;
		rlen -= rcv[i].len;
	}
	if (ok)
		scatter(&c, rcv, m, f == F_NONE && o == AS_MODEL);
	carried_free(&c);
	if (!ok)
		return false;
	if (f != F_NONE || o == INJECTED)
		return failed_as_planned(f);
	stats.moved += (long)len;
	return check_pieces(rcv, m, "after a SEND/RECV");
}

/* Fetch-and-add or compare-and-swap on 8 remote bytes, the old value into local ones. */
static bool step_atomic(void)
{
	enum fault f = random_fault(S_ATOMIC);
	bool cmp = chance(50), ok, exact;
	struct piece loc, rem;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = step_no, .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED };
	uint64_t old, operand = rnd(), result;
	enum outcome o = DIVERGED;
	struct carried c;
	struct ibv_wc wc;
	int tries;

	if (!draw_piece(&loc, 8, true, IBV_ACCESS_LOCAL_WRITE, false, NULL, 0) || loc.len != 8)
		return true;
	for (tries = 0; tries < 16; tries++) {
		if (!draw_piece(&rem, 8, true, IBV_ACCESS_REMOTE_ATOMIC, true, &loc, 1))
			return true;
		rem.off &= ~7UL;
		if (rem.len == 8 && piece_clean(&rem, true, IBV_ACCESS_REMOTE_ATOMIC) &&
		    !overlaps(&rem, &loc))
			break;
	}
	if (tries == 16)
		return true;
	if (local_fault(f)) {
		f = spoil_one(f, &loc, 1, IBV_ACCESS_LOCAL_WRITE, &rem, 1);
	} else if (f != F_NONE) {
		struct piece saved = rem;

		f = spoil_one(f, &rem, 1, IBV_ACCESS_REMOTE_ATOMIC, &loc, 1);
		rem.off &= ~7UL;
		/* Aligning the address may have made it right again. */
		if (f != F_NONE && f != F_BAD_RKEY && f != F_REMOTE_NO_ACCESS && !rem.away &&
		    piece_clean(&rem, true, IBV_ACCESS_REMOTE_ATOMIC)) {
			rem = saved;
			f = F_NONE;
		}
	}
	/* The value the responder finds: unknown when the remote piece is the fault. */
	old = 0;
	exact = f == F_NONE || local_fault(f);
	if (exact) {
		memcpy(&old, rem.r->want + rem.off, 8);
		exact = !memchr(rem.r->state + rem.off, B_EITHER, 8) &&
			!memchr(rem.r->state + rem.off, B_UNKNOWN, 8);
	}
	if (cmp) {
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = chance(50) ? old : rnd();
		wr.wr.atomic.swap = operand;
		result = old == wr.wr.atomic.compare_add ? operand : old;
	} else {
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.compare_add = operand;
		result = old + operand;
	}
	stats.faults[f]++;
	say_pieces(cmp ? "compare-and-swap on" : "fetch-and-add on", &rem, 1, f);
	say_pieces("  the old value into", &loc, 1, F_NONE);
	sge = (struct ibv_sge){ piece_addr(&loc), 8, loc.key };
	wr.wr.atomic.remote_addr = rem.away ? (uintptr_t)noaccess : piece_addr(&rem);
	wr.wr.atomic.rkey = rem.key;
	ok = post(lb.qp[below(2)], &wr) && wait_wc(lb.send_cq, wr.wr_id, &wc);
	if (ok)
		o = judge("atomic", wc.status, f == F_NONE ? IBV_WC_SUCCESS :
			  local_fault(f) ? IBV_WC_LOC_PROT_ERR : IBV_WC_REM_ACCESS_ERR,
			  any_odp(&loc, 1) || any_odp(&rem, 1));
	if (!ok || o == DIVERGED)
		return false;
	if (o == INJECTED && f == F_NONE)
		f = F_LOCAL_HOLE;	/* either side may have failed: the model as for a local one */
	if (!carried_alloc(&c, 8)) {
		tap_diag("out of memory");
		return false;
	}
	/* The remote bytes become the result, the local ones the old value. */
	memset(c.state, exact ? B_EXACT : B_UNKNOWN, 8);
	if (f == F_NONE || local_fault(f)) {
		/* A local fault is found when the result comes back: the swap is done. */
		memcpy(c.want, &result, 8);
		scatter(&c, &rem, 1, f == F_NONE);
	}
	if (f == F_NONE) {
		memcpy(c.want, &old, 8);
		scatter(&c, &loc, 1, true);
	}
	carried_free(&c);
	if (f != F_NONE)
		return failed_as_planned(o == INJECTED ? F_NONE : f);
	stats.moved += 8;
	return check_pieces(&rem, 1, "after an atomic (remote)") &&
	       check_pieces(&loc, 1, "after an atomic (old value)");
}

/* Changes to memory ----------------------------------------------------------- */

/* A page-aligned range of an ODP region (pages [*pg, *pg + *npg)), or NULL. */
static struct region *odp_pages(size_t *pg, size_t *npg, unsigned int kinds)
{
	int tries;

	for (tries = 0; tries < 16; tries++) {
		struct region *r = random_region();
		size_t pages = r->size / PAGE;

		if (!is_odp(r) || !(kinds & (1u << r->kind)))
			continue;
		*npg = 1 + below(chance(70) ? (pages < 8 ? pages : 8) : pages);
		*pg = below(pages - *npg + 1);
		return r;
	}
	return NULL;
}

#define ALL_ODP ((1u << K_ODP) | (1u << K_THP) | (1u << K_SHARED) | (1u << K_IMPLICIT))
#define PRIVATE_ODP ((1u << K_ODP) | (1u << K_THP) | (1u << K_IMPLICIT))

/* Call fn on each run of pages of [pg, pg + npg) that is mapped; false when one fails. */
static bool each_mapped_run(struct region *r, size_t pg, size_t npg,
			    int (*fn)(struct region *r, size_t pg, size_t n, long arg), long arg)
{
	size_t i = pg, j;

	while (i < pg + npg) {
		if (r->page[i] == PG_HOLE) {
			i++;
			continue;
		}
		for (j = i; j < pg + npg && r->page[j] != PG_HOLE; j++)
			;
		if (fn(r, i, j - i, arg))
			return false;
		i = j;
	}
	return true;
}

static int do_madvise(struct region *r, size_t pg, size_t n, long advice)
{
	if (!madvise(r->p + pg * PAGE, n * PAGE, (int)advice))
		return 0;
	/* Without swap or with the page busy, MADV_PAGEOUT and MADV_COLLAPSE may not act. */
	if (advice == MADV_COLLAPSE || advice == MADV_PAGEOUT)
		return 0;
	tap_diag("madvise(region %d pages %zu+%zu, %ld): %s", r->id, pg, n, advice,
		 strerror(errno));
	return -1;
}

static int do_mprotect(struct region *r, size_t pg, size_t n, long prot)
{
	if (mprotect(r->p + pg * PAGE, n * PAGE, (int)prot)) {
		tap_diag("mprotect(region %d pages %zu+%zu): %s", r->id, pg, n, strerror(errno));
		return -1;
	}
	memset(r->page + pg, prot & PROT_WRITE ? PG_RW : PG_RO, n);
	return 0;
}

/* Map pages of r again where they are holes: zeros, or the memfd's pages. */
static bool remap(struct region *r, size_t pg, size_t npg)
{
	size_t i;

	for (i = pg; i < pg + npg; i++) {
		void *p;

		if (r->page[i] != PG_HOLE)
			continue;
		p = mmap(r->p + i * PAGE, PAGE, PROT_READ | PROT_WRITE,
			 MAP_FIXED | (r->kind == K_SHARED ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS),
			 r->kind == K_SHARED ? r->memfd : -1,
			 r->kind == K_SHARED ? (off_t)(i * PAGE) : 0);
		if (p == MAP_FAILED) {
			tap_diag("mmap(MAP_FIXED, region %d page %zu): %s", r->id, i,
				 strerror(errno));
			return false;
		}
		r->page[i] = PG_RW;
	}
	return true;
}

/* Make [off, off + len) mapped and writable for the CPU. */
static bool writable(struct region *r, size_t off, size_t len)
{
	size_t pg = off / PAGE, npg = (off + len - 1) / PAGE - pg + 1, i;

	if (!remap(r, pg, npg))
		return false;
	for (i = pg; i < pg + npg; i++)
		if (r->page[i] == PG_RO && do_mprotect(r, i, 1, PROT_READ | PROT_WRITE))
			return false;
	return true;
}

static bool step_cpu_write(void)
{
	struct region *r = random_region();
	size_t len = random_len(r->size), off = below(r->size - len + 1);

	say("CPU write r%d+%#zx len %zu", r->id, off, len);
	if (!writable(r, off, len))
		return false;
	cpu_fill(r, off, len, (unsigned int)(seed * 1000003 + step_no));
	return true;
}

/* The model of pages [pg, pg + npg) of r after they were dropped: zeros, holes left out. */
static void model_zero(struct region *r, size_t pg, size_t npg)
{
	size_t i;

	for (i = pg; i < pg + npg; i++)
		if (r->page[i] != PG_HOLE) {
			memset(r->want + i * PAGE, 0, PAGE);
			memset(r->state + i * PAGE, B_EXACT, PAGE);
		}
}

/* The regions each change to memory applies to. */
static const unsigned int step_kinds[S_NSTEPS] = {
	[S_DONTNEED] = ALL_ODP, [S_FREE] = PRIVATE_ODP, [S_PAGEOUT] = ALL_ODP,
	[S_PROTECT] = ALL_ODP, [S_UNMAP] = ALL_ODP, [S_REMAP] = ALL_ODP,
	[S_PUNCH] = 1u << K_SHARED, [S_COLLAPSE] = 1u << K_THP,
};

static bool step_memory(enum step s)
{
	struct region *r;
	size_t pg, npg, o;
	bool ro;

	r = odp_pages(&pg, &npg, step_kinds[s]);
	if (!r)
		return true;
	say("%s r%d pages %zu+%zu", steps[s].name, r->id, pg, npg);
	switch (s) {
	case S_DONTNEED:
		if (!each_mapped_run(r, pg, npg, do_madvise, MADV_DONTNEED))
			return false;
		/* Private pages start again from zero; a memfd keeps its pages. */
		if (r->kind != K_SHARED)
			model_zero(r, pg, npg);
		return true;
	case S_FREE:
		if (!each_mapped_run(r, pg, npg, do_madvise, MADV_FREE))
			return false;
		/* Until written again, each page is its bytes or zeros. */
		for (o = pg * PAGE; o < (pg + npg) * PAGE; o++) {
			if (r->page[o / PAGE] == PG_HOLE || !r->want[o])
				continue;
			if (r->state[o] == B_EXACT) {
				r->alt[o] = 0;
				r->state[o] = B_EITHER;
			} else if (r->state[o] == B_EITHER && r->alt[o]) {
				r->state[o] = B_UNKNOWN;
			}
		}
		return true;
	case S_PAGEOUT:
		return each_mapped_run(r, pg, npg, do_madvise, MADV_PAGEOUT);
	case S_COLLAPSE:
		return each_mapped_run(r, 0, r->size / PAGE, do_madvise, MADV_COLLAPSE);
	case S_PROTECT:
		ro = chance(60);
		say("  %s", ro ? "read-only" : "read-write");
		return each_mapped_run(r, pg, npg, do_mprotect,
				       ro ? PROT_READ : PROT_READ | PROT_WRITE);
	case S_UNMAP:
		/* Private memory mapped again is zeros; a memfd's pages stay in the file. */
		if (r->kind != K_SHARED)
			model_zero(r, pg, npg);
		if (munmap(r->p + pg * PAGE, npg * PAGE)) {
			tap_diag("munmap: %s", strerror(errno));
			return false;
		}
		memset(r->page + pg, PG_HOLE, npg);
		return true;
	case S_REMAP:
		return remap(r, pg, npg);
	case S_PUNCH:
		if (fallocate(r->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)(pg * PAGE), (off_t)(npg * PAGE))) {
			tap_diag("fallocate(PUNCH_HOLE): %s", strerror(errno));
			return false;
		}
		/* The file's pages are zeros, mapped or not. */
		memset(r->want + pg * PAGE, 0, npg * PAGE);
		memset(r->state + pg * PAGE, B_EXACT, npg * PAGE);
		return true;
	default:
		return false;
	}
}

/* fork(); the child writes its copy of a private region and exits. */
static bool step_fork(void)
{
	struct region *r;
	size_t off, len;
	int status, tries;
	pid_t pid;

	for (tries = 0; tries < 16; tries++) {
		r = random_region();
		len = random_len(r->size);
		off = below(r->size - len + 1);
		if (r->kind != K_SHARED && !any_page(r, off, len, (1u << PG_HOLE) | (1u << PG_RO)))
			break;
	}
	if (tries == 16)
		return true;
	say("fork, the child writes r%d+%#zx len %zu", r->id, off, len);
	pid = fork();
	if (pid < 0) {
		tap_diag("fork: %s", strerror(errno));
		return false;
	}
	if (!pid) {
		vt_fill(r->p + off, len, (unsigned int)~step_no);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		tap_diag("the child of fork() did not exit cleanly (status %#x)", status);
		return false;
	}
	return true;
}

static bool step_migrate(void)
{
	void *pages[64];
	int nodes[64], status[64];
	size_t pg, npg, i, n = 0;
	struct region *r;
	long ret;

	if (numa_nodes < 2)
		return true;
	r = odp_pages(&pg, &npg, ALL_ODP);
	if (!r)
		return true;
	for (i = pg; i < pg + npg && n < 64; i++) {
		if (r->page[i] == PG_HOLE)
			continue;
		pages[n] = r->p + i * PAGE;
		nodes[n++] = (int)below((size_t)numa_nodes);
	}
	say("move_pages r%d pages %zu+%zu", r->id, pg, npg);
	ret = syscall(SYS_move_pages, 0, n, pages, nodes, status, MPOL_MF_MOVE);
	/* A page the kernel could not move (busy, or never faulted) is not an error here. */
	if (ret < 0 && errno != ENOENT && errno != EBUSY) {
		tap_diag("move_pages(%zu pages): %s", n, strerror(errno));
		return false;
	}
	return true;
}

/*
 * What a prefetch that faults finds first, page by page: nothing mapped (EFAULT),
 * or read-only memory it must write (EPERM, as hmm_range_fault() says).
 */
static int prefetch_fault(const struct region *r, size_t off, size_t len, bool write)
{
	size_t pg;

	for (pg = off / PAGE; pg <= (off + len - 1) / PAGE; pg++) {
		if (r->page[pg] == PG_HOLE)
			return EFAULT;
		if (write && r->page[pg] == PG_RO)
			return EPERM;
	}
	return 0;
}

/* ibv_advise_mr() on a random stretch: the return value the rules of rxe say. */
static bool step_prefetch(void)
{
	static const enum ibv_advise_mr_advice advices[] = {
		IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
		IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
	};
	enum ibv_advise_mr_advice advice = advices[below(3)];
	bool sync = chance(70), write = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	bool fault = advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, bad = chance(10);
	struct region *r = random_region();
	size_t len = random_len(r->size), off = below(r->size - len + 1);
	struct ibv_sge sge = { (uintptr_t)r->p + off, (uint32_t)len, mr_of(r)->lkey };
	int want = 0, ret;
	char line[160];

	if (bad)
		sge.lkey = bad_key(r);
	if (bad)
		want = ENOENT;
	else if (!is_odp(r) || !in_mr(r, off, len))
		want = EINVAL;
	else if (write && !(access_of(r) & IBV_ACCESS_LOCAL_WRITE))
		want = EPERM;
	else if (sync && fault)
		want = prefetch_fault(r, off, len, write);
	say("prefetch%s%s r%d+%#zx len %zu key %#x: must return %s",
	    write ? " for writing" : fault ? "" : " without faults", sync ? ", waited for" : "",
	    r->id, off, len, sge.lkey, want ? strerrorname_np(want) : "0");
	ret = vt_advise_mr(pd, advice, sync ? IBV_ADVISE_MR_FLAG_FLUSH : 0, &sge, 1, NULL);
	if (ret == want)
		return true;
	/* A prefetch the checks let through may fail as injected (NO_FAULT links too). */
	if (sync && arms[armed].hard && ret == arms[armed].err &&
	    (!want || want == EFAULT || want == EPERM)) {
		say("  the prefetch returned %s, injected into %s", strerrorname_np(ret),
		    arms[armed].func);
		stats.injected++;
		injected_by[armed]++;
		return true;
	}
	snprintf(line, sizeof(line), "a prefetch of r%d+%#zx len %zu (%s) returned %s, the model "
		 "says %s", r->id, off, len, kind_names[r->kind],
		 ret ? strerrorname_np(ret) : "0", want ? strerrorname_np(want) : "0");
	diverged(line);
	status_ok = false;
	return false;
}

/* Deregister an MR and register it again with other access flags and bounds. */
static bool step_rereg(void)
{
	struct region *r = random_region();
	int access = random_access(r->kind);
	size_t lo = 0, hi = r->size;
	uint32_t stale;

	if (r->kind == K_IMPLICIT) {
		say("re-register the implicit MR, access %#x", access);
		stale = imr->lkey;
		if (ibv_dereg_mr(imr)) {
			tap_diag("ibv_dereg_mr(implicit): %s", strerror(errno));
			return false;
		}
		imr = NULL;
		if (!implicit_register(access & ~IBV_ACCESS_ON_DEMAND))
			return false;
		for (int i = 0; i < NREGIONS; i++)
			if (regions[i].kind == K_IMPLICIT)
				regions[i].stale_key = stale;
		return true;
	}
	/* A pinned MR must cover mapped memory; ODP MRs may cover holes. */
	if (r->kind == K_PINNED || chance(30)) {
		if (chance(40))
			lo = below(r->size / 2);
		if (chance(40))
			hi = r->size - below(r->size / 2);
	}
	say("re-register r%d over [%#zx, %#zx), access %#x", r->id, lo, hi, access);
	r->stale_key = r->mr->lkey;
	if (ibv_dereg_mr(r->mr)) {
		tap_diag("ibv_dereg_mr(region %d): %s", r->id, strerror(errno));
		return false;
	}
	r->mr = NULL;
	return region_register(r, lo, hi, access);
}

static enum step random_step(void)
{
	unsigned int sum = 0, pick;
	int s;

	for (s = 0; s < S_NSTEPS; s++)
		sum += steps[s].weight;
	pick = below(sum);
	for (s = 0; pick >= steps[s].weight; s++)
		pick -= steps[s].weight;
	return s;
}

static const char *inject_pct_str(void)
{
	static char buf[16];

	snprintf(buf, sizeof(buf), "%ld%%", inject);
	return buf;
}

static bool all_regions_match(const char *when)
{
	int i;

	for (i = 0; i < NREGIONS; i++)
		if (!region_matches(&regions[i], 0, regions[i].size, when)) {
			diverged(when);
			memory_ok = false;
			return false;
		}
	return true;
}

static bool step(enum step s)
{
	struct region *r;

	stats.steps[s]++;
	if (arms[armed].func)
		say("armed: %s of the calls of %s fail with %s", inject_pct_str(),
		    arms[armed].func, strerrorname_np(arms[armed].err));
	switch (s) {
	case S_WRITE:
		return step_rdma(true);
	case S_READ:
		return step_rdma(false);
	case S_SEND:
		return step_send();
	case S_ATOMIC:
		return step_atomic();
	case S_CPU_WRITE:
		return step_cpu_write();
	case S_CHECK:
		r = random_region();
		say("check r%d", r->id);
		if (region_matches(r, 0, r->size, "a check of one region"))
			return true;
		diverged("a region differs from the model");
		memory_ok = false;
		return false;
	case S_FORK:
		return step_fork();
	case S_MIGRATE:
		return step_migrate();
	case S_PREFETCH:
		return step_prefetch();
	case S_REREG:
		return step_rereg();
	default:
		return step_memory(s);
	}
}

/* Whether a step and a fault could happen at all on this device and machine. */
static bool step_possible(enum step s)
{
	return s != S_MIGRATE || numa_nodes >= 2;
}

static int count_nodes(void)
{
	FILE *f = fopen("/sys/devices/system/node/online", "r");
	int a = 0, b = 0, n = 1;

	if (f) {
		if (fscanf(f, "%d-%d", &a, &b) == 2)
			n = b - a + 1;
		fclose(f);
	}
	return n;
}

/* After everything, a new QP pair between fresh memory moves the right bytes. */
static bool device_still_works(void)
{
	struct vt_odp_buf a = { 0 }, b = { 0 };
	bool ok;

	if (!pair_rebuild())
		return false;
	ok = vt_odp_buf_init(&a, pd, 1 << 20, 0, VT_PINNED_ACCESS) &&
	     vt_odp_buf_init(&b, pd, 1 << 20, 0, VT_ODP_ACCESS);
	if (ok) {
		vt_fill(a.p, a.size, 0x0d0);
		ok = vt_move(&lb, IBV_WR_RDMA_WRITE, a.p, a.mr, b.p, b.mr, b.size) &&
		     vt_check(b.p, b.size, 0x0d0) < 0;
		memset(a.p, 0, a.size);
		ok = ok && vt_move(&lb, IBV_WR_RDMA_READ, b.p, b.mr, a.p, a.mr, a.size) &&
		     vt_check(a.p, a.size, 0x0d0) < 0;
	}
	vt_odp_buf_fini(&a);
	vt_odp_buf_fini(&b);
	return ok;
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	long long start, stop;
	bool went_on = true, check_links;
	char missing[512];
	long ops;
	int i, at;

	vt_extra_options(extra);
	ctx = vt_odp_start(argc, argv, &opt, 5, VT_NEED_ODP, "random verbs", &attr);
	if (inject && !vt_inject_available()) {
		for (i = 0; i < 5; i++)
			tap_skip(VT_NO_FAIL_FUNCTION, "random verbs with faults injected, check %d",
				 i + 1);
		ibv_close_device(ctx);
		return tap_done();
	}
	if (inject)
		vt_inject_stop();	/* nothing left over from a run that died */
	rng = (uint64_t)seed;
	have_implicit = attr.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT;
	numa_nodes = count_nodes();
	signal(SIGPIPE, SIG_IGN);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		tap_bail("ibv_alloc_pd: %s", strerror(errno));
	/*
	 * Nothing may be mapped into a hole a step made: the model's copies come from
	 * the heap, not from mmap(), and the prefetch path opens its device now.
	 */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	if (!regions_create() || vt_loopback_create_on(&lb, ctx, &opt, pd))
		tap_bail("cannot set up the regions and the QP pair");
	{
		struct ibv_sge sge = { (uintptr_t)regions[1].p, 1, regions[1].mr->lkey };

		if (vt_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
				 IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1, NULL))
			tap_bail("a prefetch of one byte of an ODP MR failed");
	}
	/* rxe reads back each page it unlinks in the IOMMU: a stale link is a kernel WARN. */
	check_links = vt_read_long(VT_RXE_PARAMS "odp_check_links") == 0 &&
		      vt_write_str(VT_RXE_PARAMS "odp_check_links", "1");
	tap_diag("seed %ld, up to %ld steps in %ld s%s; regions:", seed, max_ops, max_seconds,
		 check_links ? ", unlinked pages read back in the IOMMU" : "");
	for (i = 0; i < NREGIONS; i++)
		tap_diag("  r%d: %s, %zu bytes", i, kind_names[regions[i].kind], regions[i].size);

	start = vt_now_ms();
	stop = start + max_seconds * 1000;
	for (ops = 0; ops < max_ops && vt_now_ms() < stop; ops++) {
		enum step s = random_step();

		step_no = ops;
		armed = inject ? below(NARMS) : 0;
		if (arms[armed].func && !vt_inject_start(arms[armed].func, arms[armed].err, inject)) {
			went_on = false;
			break;
		}
		went_on = step(s);
		if (arms[armed].func && !vt_inject_stop())
			went_on = false;
		armed = 0;
		if (!went_on)
			break;
		if (ops % FULL_CHECK_EVERY == FULL_CHECK_EVERY - 1 &&
		    !all_regions_match("a check of every region"))
			break;
	}
	if (went_on && memory_ok)
		all_regions_match("the check of every region at the end");
	if (went_on && ops < max_ops)
		tap_diag("stopped after %ld of %ld steps: --seconds %ld was reached", ops, max_ops,
			 max_seconds);
	for (i = 0; i < S_NSTEPS; i++)
		tap_diag("  %-24s %ld", steps[i].name, stats.steps[i]);
	for (i = 1; i < F_NFAULTS; i++)
		tap_diag("  fault: %-52s %ld", fault_names[i], stats.faults[i]);
	for (i = 1; inject && i < (int)NARMS; i++)
		if (arms[i].hard)
			tap_diag("  failures survived, %s from %s: %ld",
				 strerrorname_np(arms[i].err), arms[i].func, injected_by[i]);

	tap_ok(went_on && status_ok, "%ld steps of seed %ld in %lld ms: each ended with the status "
	       "the model says (%ld errors made on purpose, %ld injected failures survived, %ld "
	       "QP pairs rebuilt)", ops, seed, vt_now_ms() - start, stats.errors_expected,
	       stats.injected, stats.rebuilt);
	tap_ok(bytes_ok, "every transfer left the bytes the model says (%ld moved)",
	       stats.moved);
	tap_ok(memory_ok, "the regions' memory is the model's at every "
	       "check and at the end (%ld bytes compared)", bytes_checked);
	/* A generator that stopped making some step or fault would test nothing there. */
	missing[0] = 0;
	at = 0;
	for (i = 0; i < S_NSTEPS; i++)
		if (step_possible(i) && !stats.steps[i])
			at += snprintf(missing + at, sizeof(missing) - at, " %s;", steps[i].name);
	for (i = 1; i < F_NFAULTS && at < (int)sizeof(missing); i++)
		if (!stats.faults[i])
			at += snprintf(missing + at, sizeof(missing) - at, " %s;", fault_names[i]);
	if (inject && !stats.injected && at < (int)sizeof(missing))
		at += snprintf(missing + at, sizeof(missing) - at, " an injected failure;");
	if (ops < EXPECT_ALL_AFTER)
		tap_skip("too few steps to expect every kind", "every kind of step and of fault "
			 "happened (%ld steps, fewer than %d)", ops, EXPECT_ALL_AFTER);
	else
		tap_ok(!at, "every kind of step and of fault happened%s%s", at ? ": none of" : "",
		       missing);
	tap_ok(device_still_works(), "a new QP pair then moves 1 MiB to an ODP MR and back");

	if (check_links)
		vt_write_str(VT_RXE_PARAMS "odp_check_links", "0");
	vt_loopback_destroy(&lb);
	for (i = 0; i < NREGIONS; i++)
		region_unmap(&regions[i]);
	if (imr)
		ibv_dereg_mr(imr);
	munmap(noaccess, NOACCESS_SIZE);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_done();
}
