// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * odp-bench: what On-Demand Paging costs and saves, against pinned memory, measured
 * side by side in one run on one device (RC loopback):
 *   registration  time to register an MR, by size (ODP: no pages; pinned: all of them)
 *   first_touch   pages per second of the first RDMA WRITE, READ and SEND (1 MiB
 *                 messages) into memory the device has not touched (ODP: faults;
 *                 pinned: pages already there); faults: ODP faults per MiB of it
 *   steady        bandwidth of repeated 1 MiB RDMA WRITEs, latency of 64-byte ones
 *   invalidate    an MADV_DONTNEED + RDMA WRITE cycle against the WRITE alone
 *   prefetch      first WRITE after a synchronous PREFETCH_WRITE, against none
 *   memory        kernel memory per page of a registered, untouched 16 GiB ODP MR
 * Every transfer's data is checked. Prints a table; --csv and --json write the same
 * numbers for plots; --only runs some sections.
 */
#include "bench-results.h"
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t max_size = 256UL << 20, touch_size = 4UL << 20;
static double seconds = 1;
static unsigned int reps = 5;
static const char *csv_path, *json_path, *only;
static struct tool tool = {
	.name = "odp-bench",
	.summary = "ODP against pinned memory: registration, first touch, steady state,\n"
		   "invalidate + refault, prefetch, kernel memory per page. A table, and CSV\n"
		   "or JSON for plots.",
	.options = (const struct tool_option[]){
		{ "max-size", "BYTES", "largest MR of the registration sweep (default: 256M)",
		  OPT_SIZE, &max_size },
		{ "touch-size", "BYTES", "buffer of the first-touch and prefetch runs, moved in 1 MiB\n"
		  "messages (default: 4M)", OPT_SIZE, &touch_size },
		{ "seconds", "SECONDS", "time of each steady-state measurement, all repetitions\n"
		  "together (default: 1)", OPT_SECONDS, &seconds },
		{ "reps", "N", "repetitions of every measurement, ODP and pinned taking turns\n"
		  "(default: 5, at least 5)", OPT_COUNT, &reps },
		{ "csv", "FILE", "also write the results as CSV", OPT_STRING, &csv_path },
		{ "json", "FILE", "also write the results as JSON", OPT_STRING, &json_path },
		{ "only", "SECTIONS", "run only these sections, comma-separated: registration,\n"
		  "first_touch, steady, invalidate, prefetch, memory (default: all)",
		  OPT_STRING, &only },
		{ 0 }
	},
	.details = "Every measurement is repeated, ODP and pinned in turn (each going first in every\n"
		   "other repetition), and reported as the median with the range of the\n"
		   "repetitions; a ratio ODP / pinned is the median of the ratios of the\n"
		   "repetitions, with their range. CSV columns:\n"
		   "section,metric,memory,size_bytes,rep,value,unit (one row per repetition).\n"
		   "Absolute numbers depend on the machine; only ratios of one run compare.\n"
		   "A transfer that fails or moves wrong bytes leaves its measurement out (said\n"
		   "on stderr); the others are still reported, and the exit status is then 1.\n",
};

/* First-touch transfers are messages of this size, as applications move data. */
#define MSG_SIZE	(1UL << 20)
/* Large enough that the per-page lists (8 bytes a page: 32 MiB) come from vmalloc. */
#define MEMORY_MR_SIZE	(16UL << 30)

static struct bench_results results = { .tool = "odp-bench" };
static struct ibodp_dev *dev;
static struct ibv_pd *pd;
static struct vt_loopback lb;
static struct tool_buf warm;	/* pinned, touched: the other side of each transfer */
static size_t page_size;
static const enum ibodp_kind kinds[] = { IBODP_EXPLICIT, IBODP_PINNED };

/*
 * The index into kinds[] of the @k-th run of repetition @rep: ODP and pinned take
 * turns going first, so that neither is always the one that runs while the kernel
 * still tidies up after the other (freeing its pages, flushing its IOTLB entries).
 */
static unsigned int turn(unsigned int rep, unsigned int k)
{
	return (rep + k) & 1;
}

static void record(const char *section, const char *metric, const char *memory, size_t size,
		   double value, const char *unit)
{
	if (!bench_record(&results, section, metric, memory, size, value, unit))
		die(&tool, "the results do not fit: fewer --reps or sections (--only)");
}

static const char *mem_name(enum ibodp_kind kind)
{
	return kind == IBODP_PINNED ? "pinned" : "odp";
}

static void bench_registration(void)
{
	unsigned int i, k, rep;
	struct tool_buf b;
	long long t0;
	size_t size;

	for (size = 4096; size <= max_size; size *= 16) {
		for (rep = 0; rep < reps; rep++) {
			for (i = 0; i < 2; i++) {
				k = turn(rep, i);
				progress(&tool, "registration: %s %zu KiB, %u of %u", mem_name(kinds[k]),
					 size >> 10, rep + 1, reps);
				memset(&b, 0, sizeof(b));
				b.size = size;
				b.p = mmap(NULL, size, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
				if (b.p == MAP_FAILED)
					die(&tool, "mmap of %zu bytes: %s", size, strerror(errno));
				t0 = vt_now_ns();
				if (ibodp_reg_mr(dev, pd, b.p, size, TOOL_ACCESS, kinds[k], IBODP_FAIL,
						 &b.mr))
					die_lib(&tool, "registration sweep");
				record("registration", "register", mem_name(kinds[k]), size,
				       (vt_now_ns() - t0) / 1e3, "us");
				tool_buf_fini(&b);
			}
		}
	}
}

static const char *op_name(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND ? "SEND" : op == IBV_WR_RDMA_WRITE ? "RDMA WRITE" : "RDMA READ";
}

/*
 * One transfer of @len bytes checked against the fill @seed: its time in ns, or -1
 * (said) when it failed or moved wrong bytes, as on a kernel whose ODP is broken.
 */
static long long timed_move(enum ibv_wr_opcode op, unsigned char *src, struct ibodp_mr *src_mr,
			    unsigned char *dst, struct ibodp_mr *dst_mr, size_t len,
			    unsigned int seed)
{
	enum ibv_wc_status status = IBV_WC_SUCCESS;
	long long t0 = vt_now_ns();
	long bad;
	int ret;

	if (op == IBV_WR_SEND)
		ret = vt_send_recv(&lb, src, src_mr->mr, dst, dst_mr->mr, len);
	else
		ret = vt_rdma(&lb, op, src, src_mr->mr, dst, dst_mr->mr, len, &status);
	t0 = vt_now_ns() - t0;
	if (ret || status != IBV_WC_SUCCESS) {
		fprintf(stderr, "%s: %s of %zu bytes: %s\n", tool.name, op_name(op), len,
			ret ? "failed" : ibv_wc_status_str(status));
		/* An error completion leaves the QPs in the error state: take new ones. */
		vt_loopback_destroy(&lb);
		if (vt_loopback_create_on(&lb, ibodp_context(dev), &tool.dev, pd))
			die(&tool, "no connected QP pair on %s after a failed transfer",
			    ibodp_name(dev));
		return -1;
	}
	bad = vt_check(dst, len, seed);
	if (bad >= 0) {
		fprintf(stderr, "%s: %s of %zu bytes: byte %ld differs\n", tool.name, op_name(op),
			len, bad);
		return -1;
	}
	return t0;
}

static void not_measured(const char *section, const char *metric)
{
	bench_not_measured(&results, section, metric);
}

/* A fill seed for message @m of first-touch run @run. */
static unsigned int msg_seed(unsigned int run, size_t m)
{
	return run * 1000 + (unsigned int)m;
}

/*
 * The first transfer of touch_size bytes, in 1 MiB messages, into (WRITE, SEND) or out
 * of (READ) memory the device has not touched; ns, every message's data checked.
 */
static long long first_touch(const struct vt_transfer *t, struct tool_buf *fresh,
			     unsigned int run)
{
	size_t msg = touch_size < MSG_SIZE ? touch_size : MSG_SIZE, off, m;
	unsigned char *src = t->op == IBV_WR_RDMA_READ ? fresh->p : warm.p;
	unsigned char *dst = t->op == IBV_WR_RDMA_READ ? warm.p : fresh->p;
	struct ibodp_mr *src_mr = t->op == IBV_WR_RDMA_READ ? fresh->mr : warm.mr;
	struct ibodp_mr *dst_mr = t->op == IBV_WR_RDMA_READ ? warm.mr : fresh->mr;
	long long ns = 0;

	/* The CPU writes the source first (for READ, the memory under test). */
	for (off = 0, m = 0; off < touch_size; off += msg, m++)
		vt_fill(src + off, msg, msg_seed(run, m));
	for (off = 0, m = 0; off < touch_size; off += msg, m++) {
		long long one = timed_move(t->op, src + off, src_mr, dst + off, dst_mr, msg,
					   msg_seed(run, m));

		if (one < 0)
			return -1;
		ns += one;
	}
	return ns;
}

/*
 * First touch on the memory as the system gives it (transparent huge pages where it
 * allows them: a fault takes a huge page whole) and on base pages only (what each
 * message costs in faults and links).
 */
static const struct page_mode {
	const char *suffix;
	int advice;
} page_modes[] = {
	{ "", MADV_NORMAL },
	{ " 4K pages", MADV_NOHUGEPAGE },
};

#define NR_PAGE_MODES	(sizeof(page_modes) / sizeof(page_modes[0]))
static char metric_names[VT_NTRANSFERS][NR_PAGE_MODES][48];

static void bench_first_touch(void)
{
	struct ibodp_counters before, after, d;
	unsigned int j, k, i, pm, rep, run = 100;
	struct tool_buf fresh;
	const char *metric;
	bool counted;
	long long ns;

	for (i = 0; i < VT_NTRANSFERS; i++) {
		const struct vt_transfer *t = &vt_transfers[i];

		for (pm = 0; pm < NR_PAGE_MODES; pm++) {
			snprintf(metric_names[i][pm], sizeof(metric_names[i][pm]), "%s%s", t->name,
				 page_modes[pm].suffix);
			metric = metric_names[i][pm];
			for (rep = 0; rep < reps; rep++) {
				for (j = 0; j < 2; j++) {
					k = turn(rep, j);
					progress(&tool, "first touch: %s, %s, %u of %u", metric,
						 mem_name(kinds[k]), rep + 1, reps);
					tool_buf_init_advised(&tool, &fresh, dev, pd, touch_size,
							      kinds[k], page_modes[pm].advice);
					counted = kinds[k] != IBODP_PINNED &&
						  !ibodp_read_counters(dev, tool.dev.port, &before);
					ns = first_touch(t, &fresh, run++);
					if (ns < 0) {
						tool_buf_fini(&fresh);
						not_measured("first_touch", metric);
						not_measured("faults", metric);
						goto next;
					}
					record("first_touch", metric, mem_name(kinds[k]), touch_size,
					       touch_size / page_size / (ns / 1e9), "pages/s");
					/* The pinned side takes no fault: these are the ODP side's. */
					if (counted &&
					    !ibodp_read_counters(dev, tool.dev.port, &after)) {
						ibodp_counters_delta(&before, &after, &d);
						record("faults", metric, "odp", touch_size,
						       d.page_faults /
						       ((double)touch_size / MSG_SIZE), "per MiB");
					}
					tool_buf_fini(&fresh);
				}
			}
next:
			;
		}
	}
}

static void bench_steady(void)
{
	const size_t chunk = 1UL << 20, small = 64;
	double each = seconds / reps;
	struct tool_buf dst[2];
	unsigned long long bytes, n;
	long long t0, spent;
	unsigned int i, k, rep;

	vt_fill(warm.p, chunk, 7);
	for (k = 0; k < 2; k++)
		tool_buf_init(&tool, &dst[k], dev, pd, chunk, kinds[k]);
	for (k = 0; k < 2; k++)
		if (timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst[k].p, dst[k].mr, chunk,
			       7) < 0)
			goto fail;
	for (rep = 0; rep < reps; rep++) {
		for (i = 0; i < 2; i++) {
			k = turn(rep, i);
			progress(&tool, "steady state: %s, %u of %u", mem_name(kinds[k]), rep + 1,
				 reps);
			for (bytes = 0, t0 = vt_now_ns(); vt_now_ns() - t0 < each * 1e9; bytes += chunk)
				if (timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst[k].p,
					       dst[k].mr, chunk, 7) < 0)
					goto fail;
			spent = vt_now_ns() - t0;
			record("steady", "write_bandwidth", mem_name(kinds[k]), chunk,
			       bytes / (spent / 1e9) / 1e6, "MB/s");
			for (n = 0, t0 = vt_now_ns(); vt_now_ns() - t0 < each * 1e9 / 2; n++)
				if (timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst[k].p,
					       dst[k].mr, small, 7) < 0)
					goto fail;
			spent = vt_now_ns() - t0;
			record("steady", "write_latency", mem_name(kinds[k]), small,
			       spent / 1e3 / n, "us");
		}
	}
	goto out;
fail:
	not_measured("steady", NULL);
out:
	for (k = 0; k < 2; k++)
		tool_buf_fini(&dst[k]);
}

/* MADV_DONTNEED + WRITE against WRITE alone, on 1 MiB of ODP memory. */
static void bench_invalidate(void)
{
	const size_t chunk = 1UL << 20;
	long long t0, plain, cycle, one;
	unsigned int i, rep, n = 4;
	struct tool_buf dst;

	tool_buf_init(&tool, &dst, dev, pd, chunk, IBODP_EXPLICIT);
	vt_fill(warm.p, chunk, 9);
	if (timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst.p, dst.mr, chunk, 9) < 0)
		goto fail;
	for (rep = 0; rep < reps; rep++) {
		progress(&tool, "invalidate + refault: %u of %u", rep + 1, reps);
		for (i = 0, plain = cycle = 0; i < n; i++) {
			one = timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst.p, dst.mr,
					 chunk, 9);
			if (one < 0)
				goto fail;
			plain += one;
			t0 = vt_now_ns();
			if (madvise(dst.p, chunk, MADV_DONTNEED))
				die(&tool, "madvise: %s", strerror(errno));
			if (timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst.p, dst.mr, chunk,
				       9) < 0)
				goto fail;
			cycle += vt_now_ns() - t0;
		}
		record("invalidate", "write", "odp", chunk, plain / 1e3 / n, "us");
		record("invalidate", "dontneed_and_write", "odp", chunk, cycle / 1e3 / n, "us");
	}
	tool_buf_fini(&dst);
	return;
fail:
	not_measured("invalidate", NULL);
	tool_buf_fini(&dst);
}

/* The first WRITE into fresh ODP memory, with and without a PREFETCH_WRITE before. */
static void bench_prefetch(void)
{
	long long t0, prefetch, write_after, write_cold;
	struct tool_buf dst;
	unsigned int rep;
	bool direct;

	vt_fill(warm.p, touch_size, 11);
	for (rep = 0; rep < reps; rep++) {
		progress(&tool, "prefetch: %u of %u", rep + 1, reps);
		tool_buf_init(&tool, &dst, dev, pd, touch_size, IBODP_EXPLICIT);
		write_cold = timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst.p, dst.mr,
					touch_size, 11);
		tool_buf_fini(&dst);
		if (write_cold < 0)
			goto fail;

		tool_buf_init(&tool, &dst, dev, pd, touch_size, IBODP_EXPLICIT);
		t0 = vt_now_ns();
		if (ibodp_prefetch(dst.mr, dst.p, touch_size,
				   IBODP_PREFETCH_WRITE | IBODP_PREFETCH_SYNC, &direct)) {
			fprintf(stderr, "%s: PREFETCH_WRITE: %s\n", tool.name, ibodp_errmsg());
			tool_buf_fini(&dst);
			goto fail;
		}
		prefetch = vt_now_ns() - t0;
		write_after = timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst.p, dst.mr,
					 touch_size, 11);
		tool_buf_fini(&dst);
		if (write_after < 0)
			goto fail;
		record("prefetch", "write_cold", "odp", touch_size, write_cold / 1e3, "us");
		record("prefetch", "prefetch_write", "odp", touch_size, prefetch / 1e3, "us");
		record("prefetch", "write_after_prefetch", "odp", touch_size, write_after / 1e3,
		       "us");
	}
	return;
fail:
	not_measured("prefetch", NULL);
}

static long vmalloc_used_kb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmallocUsed: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * What the kernel keeps per page of an ODP MR: the growth of VmallocUsed when a 16 GiB
 * MR is registered (no page present), over its pages. Linux 6.12 keeps 16 bytes, a PFN
 * and a DMA address; a pinned MR of that size would pin 16 GiB, so ODP only.
 */
static void bench_memory(void)
{
	long before, after;
	struct ibodp_mr *mr;
	unsigned int rep;
	void *p;

	for (rep = 0; rep < reps; rep++) {
		progress(&tool, "kernel memory: %u of %u", rep + 1, reps);
		p = mmap(NULL, MEMORY_MR_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			die(&tool, "mmap of 16 GiB (MAP_NORESERVE): %s", strerror(errno));
		before = vmalloc_used_kb();
		if (ibodp_reg_mr(dev, pd, p, MEMORY_MR_SIZE, IBV_ACCESS_LOCAL_WRITE,
				 IBODP_EXPLICIT, IBODP_FAIL, &mr)) {
			fprintf(stderr, "%s: registering 16 GiB of ODP memory: %s\n", tool.name,
				ibodp_errmsg());
			munmap(p, MEMORY_MR_SIZE);
			not_measured("memory", NULL);
			return;
		}
		after = vmalloc_used_kb();
		ibodp_dereg_mr(mr);
		munmap(p, MEMORY_MR_SIZE);
		if (before < 0 || after < 0) {
			fprintf(stderr, "%s: /proc/meminfo has no VmallocUsed: %s\n", tool.name,
				strerror(errno));
			not_measured("memory", NULL);
			return;
		}
		record("memory", "kernel_per_page", "odp", MEMORY_MR_SIZE,
		       (after - before) * 1024.0 / (MEMORY_MR_SIZE / page_size), "bytes");
	}
}

/* The sentence comparing two ODP measurements of one run, repetition by repetition. */
static void say_ratio(const char *what, const struct bench_result *a,
		      const struct bench_result *b)
{
	double lo, hi, m;

	if (!a || !b || !a->n || !b->n)
		return;
	m = bench_ratio(a, b, &lo, &hi);
	printf("%s %.2fx (%.2f-%.2f)\n", what, m, lo, hi);
}

static void print_report(const char *device, const char *dma)
{
	char title[512];

	snprintf(title, sizeof(title),
		 "odp-bench on %s (%s), %u repetitions, ODP and pinned in turn: medians with the\n"
		 "range of the repetitions; ratio = ODP / pinned, per repetition", device, dma,
		 reps);
	bench_print_table(&results, title);
	say_ratio("invalidate + refault of 1 MiB costs, against a WRITE into present pages,",
		  bench_find(&results, "invalidate", "dontneed_and_write", "odp", 1UL << 20),
		  bench_find(&results, "invalidate", "write", "odp", 1UL << 20));
	say_ratio("a first WRITE after PREFETCH_WRITE takes, against one without,",
		  bench_find(&results, "prefetch", "write_after_prefetch", "odp", touch_size),
		  bench_find(&results, "prefetch", "write_cold", "odp", touch_size));
}

static const struct section {
	const char *name;
	void (*run)(void);
} sections[] = {
	{ "registration", bench_registration },
	{ "first_touch", bench_first_touch },
	{ "steady", bench_steady },
	{ "invalidate", bench_invalidate },
	{ "prefetch", bench_prefetch },
	{ "memory", bench_memory },
};

#define NR_SECTIONS	(sizeof(sections) / sizeof(sections[0]))

/* Which sections --only names (all without it); exits on a name that is none. */
static void parse_only(bool *run)
{
	char list[256], *name, *save = NULL;
	bool named = false;
	unsigned int i;

	for (i = 0; i < NR_SECTIONS; i++)
		run[i] = !only;
	if (!only)
		return;
	if (strlen(only) >= sizeof(list))
		die(&tool, "--only: a list of at most %zu characters", sizeof(list) - 1);
	strcpy(list, only);
	for (name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < NR_SECTIONS && strcmp(sections[i].name, name); i++)
			;
		if (i == NR_SECTIONS) {
			/* A bad option value, as the option parser exits on one. */
			fprintf(stderr, "%s: --only: no section '%s' (registration, first_touch, "
				"steady, invalidate, prefetch, memory; see --help)\n", tool.name, name);
			exit(2);
		}
		run[i] = true;
		named = true;
	}
	if (!named) {
		fprintf(stderr, "%s: --only wants a section, not '%s' (see --help)\n", tool.name,
			only);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	bool run[NR_SECTIONS];
	struct ibodp_caps caps;
	unsigned int i;
	char dma[128];
	int err;

	tool_parse(&tool, argc, argv);
	page_size = sysconf(_SC_PAGESIZE);
	if (max_size < 4096 || touch_size < page_size || touch_size > (1UL << 30))
		die(&tool, "--max-size must be at least 4K, --touch-size from a page to 1G");
	if (touch_size > MSG_SIZE && touch_size % MSG_SIZE)
		die(&tool, "--touch-size above 1M must be a multiple of 1M (it moves in 1 MiB messages)");
	if (reps < 5 || reps > BENCH_MAX_REPS)
		die(&tool, "--reps must be from 5 to %d: fewer decide nothing on a noisy machine",
		    BENCH_MAX_REPS);
	parse_only(run);
	if (ibodp_open(tool.dev.dev, &dev))
		die_lib(&tool, "opening the device");
	ibodp_query_caps(dev, &caps);
	if (!caps.explicit_odp)
		die(&tool, "%s: ODP not supported by this device", ibodp_name(dev));
	if (ibodp_dma_mode(dev, tool.dev.port, tool.dev.gid_index, dma, sizeof(dma)) < 0)
		snprintf(dma, sizeof(dma), "DMA mode unknown");
	pd = ibv_alloc_pd(ibodp_context(dev));
	if (!pd || vt_loopback_create_on(&lb, ibodp_context(dev), &tool.dev, pd))
		die(&tool, "no connected QP pair on %s port %u", ibodp_name(dev), tool.dev.port);
	/* The steady-state runs move 1 MiB at a time. */
	tool_buf_init(&tool, &warm, dev, pd, touch_size > (1UL << 20) ? touch_size : 1UL << 20,
		      IBODP_PINNED);

	for (i = 0; i < NR_SECTIONS; i++)
		if (run[i])
			sections[i].run();
	progress_done(&tool);

	print_report(ibodp_name(dev), dma);
	if (csv_path && (err = bench_write_csv(&results, csv_path)))
		die(&tool, "--csv %s: %s", csv_path, strerror(-err));
	if (json_path && (err = bench_write_json(&results, json_path, ibodp_name(dev), dma)))
		die(&tool, "--json %s: %s", json_path, strerror(-err));
	tool_buf_fini(&warm);
	vt_loopback_destroy(&lb);
	ibv_dealloc_pd(pd);
	ibodp_close(dev);
	if (results.failures)
		fprintf(stderr, "%s: %u measurements could not be made (said above)\n", tool.name,
			results.failures);
	return results.failures ? 1 : 0;
}
