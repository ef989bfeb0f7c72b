// SPDX-License-Identifier: GPL-2.0
/*
 * mpi_check: Open MPI traffic with every byte checked, for the two-host suite
 * (tests/cluster/). Point-to-point from 1 byte to 64 MiB at odd offsets, allreduce,
 * alltoall, bcast, one-sided put, get and accumulate. Every buffer is mapped for its
 * phase and unmapped after it, and the next round maps its buffers at the same
 * addresses with other data: a registration cache that missed the unmap (or ODP pages
 * not invalidated) hands the NIC the old pages and the bytes come out wrong.
 *
 * Each rank checks what it received; rank 0 prints TAP, one result per phase and size,
 * with how many bytes were wrong and where the first was. Exit status 1 when any failed.
 *
 *   mpi_check [--max-size BYTES] [--rounds N]
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "pattern.h"
#include "tap.h"

static int rank, nranks;
/* When the current check began (rank 0): each result says how long it took. */
static double started;

/* Point-to-point sizes; the offsets into their buffers are odd, so nothing is aligned. */
static const size_t p2p_sizes[] = {
	1, 3, 4095, 4097, 65537, (1 << 20) + 1, (4 << 20) + 3, (16 << 20) + 5, 64 << 20,
};
#define NP2P (sizeof(p2p_sizes) / sizeof(p2p_sizes[0]))
/* The other phases: p2p sizes, allreduce (bytes and words), alltoall, bcast, put, get, accumulate. */
#define CHECKS_PER_ROUND (NP2P + 7)

/* A buffer mapped for one phase: at @addr again in a later round when that is free. */
struct buf {
	unsigned char *map;
	size_t len;
};

/* Where each round's buffers go: the first round's addresses, handed to the next. */
static void *hints[64];
static unsigned int nhint;

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mpi_check: rank %d: ", rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	MPI_Abort(MPI_COMM_WORLD, 2);
	exit(2);
}

static unsigned char *buf_map(struct buf *b, size_t len)
{
	void *hint = nhint < 64 ? hints[nhint] : NULL;

	b->len = len;
	b->map = mmap(hint, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->map == MAP_FAILED)
		die("mmap of %zu bytes: %s", len, strerror(errno));
	if (nhint < 64)
		hints[nhint++] = b->map;
	return b->map;
}

static void buf_unmap(struct buf *b)
{
	if (munmap(b->map, b->len))
		die("munmap: %s", strerror(errno));
}

/* Errors seen by this rank in the current check: how many, and the first offset. */
struct tally {
	long wrong;
	long first;
};

static void tally_check(struct tally *t, const unsigned char *got, size_t len, unsigned int seed)
{
	long off = vt_check(got, len, seed);
	size_t i;

	if (off < 0)
		return;
	if (!t->wrong)
		t->first = off;
	for (i = off; i < len; i++) {
		unsigned char want;

		/* Count every wrong byte: the pattern byte of offset i. */
		want = (unsigned char)(vt_pattern_word(vt_pattern_key(seed), i / 8) >> (8 * (i % 8)));
		t->wrong += got[i] != want;
	}
}

/* Guard bytes after a receive buffer's end must stay as they were. */
#define GUARD 64
#define GUARD_BYTE 0xa5

static void tally_guard(struct tally *t, const unsigned char *end, size_t at)
{
	int i;

	for (i = 0; i < GUARD; i++)
		if (end[i] != GUARD_BYTE) {
			if (!t->wrong)
				t->first = at + i;
			t->wrong++;
		}
}

/* One TAP result from every rank's tally: rank 0 reports the total and the first. */
static void report(const struct tally *t, const char *fmt, ...)
{
	long mine[2] = { t->wrong, t->first }, *all = NULL;
	char name[200];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	if (!rank) {
		all = calloc(2 * nranks, sizeof(*all));
		if (!all)
			die("out of memory");
	}
	MPI_Gather(mine, 2, MPI_LONG, all, 2, MPI_LONG, 0, MPI_COMM_WORLD);
	if (rank)
		return;
	long total = 0;
	int first = -1;

	for (r = 0; r < nranks; r++) {
		total += all[2 * r];
		if (all[2 * r] && first < 0)
			first = r;
	}
	tap_diag("%.2f s", MPI_Wtime() - started);
	started = MPI_Wtime();
	if (!tap_ok(!total, "%s", name))
		tap_diag("%ld wrong bytes, the first on rank %d at byte %ld", total, first,
			 all[2 * first + 1]);
	free(all);
}

/* The seed of what rank @from sends to rank @to in check @check of round @round. */
static unsigned int seed_of(int round, int check, int from, int to)
{
	return (unsigned int)(((round * 64 + check) * 64 + from) * 64 + to);
}

static void p2p(int round, int check, size_t len, size_t off)
{
	int to = (rank + 1) % nranks, from = (rank + nranks - 1) % nranks;
	struct buf sb, rb;
	unsigned char *s = buf_map(&sb, len + off) + off;
	unsigned char *r = buf_map(&rb, len + off + GUARD) + off;
	struct tally t = { 0, 0 };

	vt_fill(s, len, seed_of(round, check, rank, to));
	memset(r, GUARD_BYTE, len + GUARD);
	/* Counts above INT_MAX never occur: 64 MiB at most. */
	MPI_Sendrecv(s, (int)len, MPI_BYTE, to, check, r, (int)len, MPI_BYTE, from, check,
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	tally_check(&t, r, len, seed_of(round, check, from, rank));
	tally_guard(&t, r + len, len);
	buf_unmap(&sb);
	buf_unmap(&rb);
	report(&t, "round %d: point-to-point %zu B at offset %zu, to the next rank", round, len, off);
}

/* Allreduce, bitwise XOR of bytes at an odd offset: every byte of every rank counts. */
static void allreduce_bytes(int round, int check, size_t len)
{
	struct buf sb, rb, wb;
	unsigned char *s = buf_map(&sb, len + 1) + 1, *r = buf_map(&rb, len + 1) + 1;
	unsigned char *want = buf_map(&wb, len), *tmp;
	struct tally t = { 0, 0 };
	size_t i;
	int p;

	tmp = malloc(len);
	if (!tmp)
		die("out of memory");
	vt_fill(s, len, seed_of(round, check, rank, 0));
	memset(want, 0, len);
	for (p = 0; p < nranks; p++) {
		vt_fill(tmp, len, seed_of(round, check, p, 0));
		for (i = 0; i < len; i++)
			want[i] ^= tmp[i];
	}
	free(tmp);
	MPI_Allreduce(s, r, (int)len, MPI_BYTE, MPI_BXOR, MPI_COMM_WORLD);
	for (i = 0; i < len; i++)
		if (r[i] != want[i]) {
			if (!t.wrong)
				t.first = i;
			t.wrong++;
		}
	buf_unmap(&sb);
	buf_unmap(&rb);
	buf_unmap(&wb);
	report(&t, "round %d: allreduce BXOR of %zu B at offset 1", round, len);
}

/* Allreduce, sum of 64-bit words: the arithmetic path. */
static void allreduce_words(int round, int check, size_t count)
{
	struct buf sb, rb;
	uint64_t *s = (uint64_t *)buf_map(&sb, count * 8), *r = (uint64_t *)buf_map(&rb, count * 8);
	struct tally t = { 0, 0 };
	size_t i;
	int p;

	for (i = 0; i < count; i++)
		s[i] = vt_pattern_word(vt_pattern_key(seed_of(round, check, rank, 0)), i);
	MPI_Allreduce(s, r, (int)count, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
	for (i = 0; i < count; i++) {
		uint64_t want = 0;

		for (p = 0; p < nranks; p++)
			want += vt_pattern_word(vt_pattern_key(seed_of(round, check, p, 0)), i);
		if (r[i] != want) {
			if (!t.wrong)
				t.first = i * 8;
			t.wrong += 8;
		}
	}
	buf_unmap(&sb);
	buf_unmap(&rb);
	report(&t, "round %d: allreduce SUM of %zu 64-bit words", round, count);
}

static void alltoall(int round, int check, size_t block)
{
	size_t total = block * nranks;
	struct buf sb, rb;
	unsigned char *s = buf_map(&sb, total + 3) + 3, *r = buf_map(&rb, total + 3 + GUARD) + 3;
	struct tally t = { 0, 0 };
	int p;

	for (p = 0; p < nranks; p++)
		vt_fill(s + p * block, block, seed_of(round, check, rank, p));
	memset(r, GUARD_BYTE, total + GUARD);
	MPI_Alltoall(s, (int)block, MPI_BYTE, r, (int)block, MPI_BYTE, MPI_COMM_WORLD);
	for (p = 0; p < nranks; p++) {
		struct tally one = { 0, 0 };

		tally_check(&one, r + p * block, block, seed_of(round, check, p, rank));
		if (one.wrong && !t.wrong)
			t.first = p * block + one.first;
		t.wrong += one.wrong;
	}
	tally_guard(&t, r + total, total);
	buf_unmap(&sb);
	buf_unmap(&rb);
	report(&t, "round %d: alltoall of %zu B blocks at offset 3", round, block);
}

/* Every rank is the root once. */
static void bcast(int round, int check, size_t len)
{
	struct tally t = { 0, 0 };
	int root;

	for (root = 0; root < nranks; root++) {
		struct buf b;
		unsigned char *p = buf_map(&b, len + 7 + GUARD) + 7;
		unsigned int seed = seed_of(round, check, root, 0);

		if (rank == root)
			vt_fill(p, len, seed);
		else
			memset(p, GUARD_BYTE, len);
		memset(p + len, GUARD_BYTE, GUARD);
		MPI_Bcast(p, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
		tally_check(&t, p, len, seed);
		tally_guard(&t, p + len, len);
		buf_unmap(&b);
	}
	report(&t, "round %d: bcast of %zu B at offset 7 from each rank", round, len);
}

/*
 * One-sided: a window over a mapped buffer. Put: each rank writes the first half of
 * its right neighbour's window. Get: each rank reads the second half of its right
 * neighbour's, which that one filled. Accumulate: every rank adds its words into
 * every rank's window.
 */
static void one_sided(int round, int check, size_t half)
{
	int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
	size_t count = half / 8, i;
	struct buf wb, sb, gb;
	unsigned char *w = buf_map(&wb, 2 * half), *s = buf_map(&sb, half + 5) + 5;
	unsigned char *g = buf_map(&gb, half + 5) + 5;
	struct tally put = { 0, 0 }, get = { 0, 0 }, acc = { 0, 0 };
	uint64_t *words;
	MPI_Win win;
	int p;

	memset(w, GUARD_BYTE, half);
	vt_fill(w + half, half, seed_of(round, check + 1, rank, 0));
	vt_fill(s, half, seed_of(round, check, rank, right));
	MPI_Win_create(w, 2 * half, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	MPI_Win_fence(0, win);
	MPI_Put(s, (int)half, MPI_BYTE, right, 0, (int)half, MPI_BYTE, win);
	MPI_Get(g, (int)half, MPI_BYTE, right, half, (int)half, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	tally_check(&put, w, half, seed_of(round, check, left, rank));
	tally_check(&get, g, half, seed_of(round, check + 1, right, 0));
	report(&put, "round %d: one-sided put of %zu B at offset 5", round, half);
	report(&get, "round %d: one-sided get of %zu B into offset 5", round, half);

	/* Accumulate into the first half, now the words of pattern (rank, 2). */
	words = (uint64_t *)w;
	for (i = 0; i < count; i++)
		words[i] = vt_pattern_word(vt_pattern_key(seed_of(round, check + 2, rank, 0)), i);
	MPI_Win_fence(0, win);
	uint64_t *src = malloc(count * 8);

	if (!src)
		die("out of memory");
	for (i = 0; i < count; i++)
		src[i] = vt_pattern_word(vt_pattern_key(seed_of(round, check + 3, rank, 0)), i);
	for (p = 0; p < nranks; p++)
		MPI_Accumulate(src, (int)count, MPI_UINT64_T, p, 0, (int)count, MPI_UINT64_T,
			       MPI_SUM, win);
	MPI_Win_fence(0, win);
	for (i = 0; i < count; i++) {
		uint64_t want = vt_pattern_word(vt_pattern_key(seed_of(round, check + 2, rank, 0)), i);

		for (p = 0; p < nranks; p++)
			want += vt_pattern_word(vt_pattern_key(seed_of(round, check + 3, p, 0)), i);
		if (words[i] != want) {
			if (!acc.wrong)
				acc.first = i * 8;
			acc.wrong += 8;
		}
	}
	free(src);
	MPI_Win_free(&win);
	buf_unmap(&wb);
	buf_unmap(&sb);
	buf_unmap(&gb);
	report(&acc, "round %d: one-sided accumulate (SUM) of %zu words from every rank", round, count);
}

static size_t parse_size(const char *arg, const char *what, size_t min)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || *end || v < min || v > INT_MAX)
		die("%s \"%s\": want a number from %zu to %d", what, arg, min, INT_MAX);
	return v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "max-size", required_argument, NULL, 'm' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	size_t max = 64 << 20, i;
	int rounds = 2, round, c, status;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	while ((c = getopt_long(argc, argv, "m:r:h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			max = parse_size(optarg, "--max-size", 4096);
			break;
		case 'r':
			rounds = (int)parse_size(optarg, "--rounds", 1);
			if (rounds > 8)
				die("--rounds %d: at most 8", rounds);
			break;
		case 'h':
			if (!rank)
				printf("usage: mpirun ... %s [--max-size BYTES] [--rounds N]\n", argv[0]);
			MPI_Finalize();
			return 0;
		default:
			die("usage: mpirun ... %s [--max-size BYTES] [--rounds N]", argv[0]);
		}
	}
	if (nranks < 2)
		die("run it on 2 or more ranks (mpirun -np N)");

	if (!rank) {
		int n = 0;

		for (i = 0; i < NP2P; i++)
			n += p2p_sizes[i] <= max;
		tap_plan(rounds * (n + CHECKS_PER_ROUND - NP2P));
		tap_diag("%d ranks, sizes up to %zu B, %d rounds", nranks, max, rounds);
	}
	started = MPI_Wtime();
	for (round = 0; round < rounds; round++) {
		/* The same order of mappings each round: the same addresses, other data. */
		nhint = 0;
		for (i = 0; i < NP2P; i++)
			if (p2p_sizes[i] <= max)
				p2p(round, (int)i, p2p_sizes[i], 2 * i + 1);
		allreduce_bytes(round, 20, max < (4 << 20) + 1 ? max : (4 << 20) + 1);
		allreduce_words(round, 21, (max < (8 << 20) ? max : (8 << 20)) / 8);
		alltoall(round, 22, (max < (1 << 20) ? max : (1 << 20)) / nranks + 3);
		bcast(round, 23, max < (2 << 20) + 7 ? max : (2 << 20) + 7);
		one_sided(round, 24, (max < (4 << 20) ? max : (4 << 20)) & ~(size_t)7);
	}
	status = rank ? 0 : tap_done();
	MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Finalize();
	return status;
}
