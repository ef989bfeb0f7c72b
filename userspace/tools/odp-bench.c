// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * odp-bench: what On-Demand Paging costs and saves, against pinned memory, measured
 * side by side in one run on one device (RC loopback):
 *   registration  time to register an MR, by size (ODP: no pages; pinned: all of them)
 *   first_touch   pages per second of the first RDMA WRITE, READ and SEND into memory
 *                 the device has not touched (ODP: faults; pinned: pages already there)
 *   steady        bandwidth of repeated 1 MiB RDMA WRITEs, latency of 64-byte ones
 *   invalidate    an MADV_DONTNEED + RDMA WRITE cycle against the WRITE alone
 *   prefetch      first WRITE after a synchronous PREFETCH_WRITE, against none
 * Every transfer's data is checked. Prints a table; --csv and --json write the same
 * numbers for plots.
 */
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t max_size = 256UL << 20, touch_size = 4UL << 20;
static double seconds = 1;
static const char *csv_path, *json_path;
static struct tool tool = {
	.name = "odp-bench",
	.summary = "ODP against pinned memory: registration, first touch, steady state,\n"
		   "invalidate + refault, prefetch. A table, and CSV or JSON for plots.",
	.options = (const struct tool_option[]){
		{ "max-size", "BYTES", "largest MR of the registration sweep (default: 256M)",
		  OPT_SIZE, &max_size },
		{ "touch-size", "BYTES", "buffer of the first-touch and prefetch runs (default: 4M)",
		  OPT_SIZE, &touch_size },
		{ "seconds", "SECONDS", "time of each steady-state measurement (default: 1)",
		  OPT_SECONDS, &seconds },
		{ "csv", "FILE", "also write the results as CSV", OPT_STRING, &csv_path },
		{ "json", "FILE", "also write the results as JSON", OPT_STRING, &json_path },
		{ 0 }
	},
	.details = "CSV columns: section,metric,memory,size_bytes,value,unit. Ratios compare ODP and\n"
		   "pinned numbers of the same run; absolute numbers depend on the machine.\n",
};

struct result {
	const char *section, *metric, *memory, *unit;
	size_t size;
	double value;
};

static struct result results[128];
static unsigned int nresults;
static struct ibodp_dev *dev;
static struct ibv_pd *pd;
static struct vt_loopback lb;
static struct tool_buf warm;	/* pinned, touched: the other side of each transfer */
static size_t page_size;

static void record(const char *section, const char *metric, const char *memory, size_t size,
		   double value, const char *unit)
{
	if (nresults < sizeof(results) / sizeof(results[0]))
		results[nresults++] = (struct result){ section, metric, memory, unit, size, value };
}

static const char *mem_name(enum ibodp_kind kind)
{
	return kind == IBODP_PINNED ? "pinned" : "odp";
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void bench_registration(void)
{
	enum ibodp_kind kinds[] = { IBODP_EXPLICIT, IBODP_PINNED };
	double t[20];
	size_t size;
	unsigned int k, rep, reps;

	for (size = 4096; size <= max_size; size *= 16) {
		reps = size <= (1UL << 20) ? 20 : size <= (16UL << 20) ? 5 : 2;
		for (k = 0; k < 2; k++) {
			for (rep = 0; rep < reps; rep++) {
				struct tool_buf b = { 0 };
				long long t0;

				progress(&tool, "registration: %s %zu KiB, %u of %u", mem_name(kinds[k]),
					 size >> 10, rep + 1, reps);
				b.size = size;
				b.p = mmap(NULL, size, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
				if (b.p == MAP_FAILED)
					die(&tool, "mmap of %zu bytes: %s", size, strerror(errno));
				t0 = now_ns();
				if (ibodp_reg_mr(dev, pd, b.p, size, TOOL_ACCESS, kinds[k], IBODP_FAIL,
						 &b.mr))
					die_lib(&tool, "registration sweep");
				t[rep] = (now_ns() - t0) / 1e3;
				tool_buf_fini(&b);
			}
			qsort(t, reps, sizeof(t[0]), cmp_double);
			record("registration", "register", mem_name(kinds[k]), size, t[reps / 2], "us");
		}
	}
}

/* One transfer of @len bytes checked against the fill @seed; exits on failure. */
static long long timed_move(enum ibv_wr_opcode op, unsigned char *src, struct ibodp_mr *src_mr,
			    unsigned char *dst, struct ibodp_mr *dst_mr, size_t len,
			    unsigned int seed)
{
	enum ibv_wc_status status = IBV_WC_SUCCESS;
	long long t0 = now_ns();
	int ret;

	if (op == IBV_WR_SEND)
		ret = vt_send_recv(&lb, src, src_mr->mr, dst, dst_mr->mr, len);
	else
		ret = vt_rdma(&lb, op, src, src_mr->mr, dst, dst_mr->mr, len, &status);
	t0 = now_ns() - t0;
	if (ret || status != IBV_WC_SUCCESS)
		die(&tool, "%s of %zu bytes: %s", op == IBV_WR_SEND ? "SEND" :
		    op == IBV_WR_RDMA_WRITE ? "RDMA WRITE" : "RDMA READ", len,
		    ret ? "failed" : ibv_wc_status_str(status));
	if (vt_check(dst, len, seed) >= 0)
		die(&tool, "the data of a %zu-byte transfer differs", len);
	return t0;
}

/* The first transfer into (WRITE, SEND) or out of (READ) memory of @kind. */
static void bench_first_touch(void)
{
	enum ibodp_kind kinds[] = { IBODP_EXPLICIT, IBODP_PINNED };
	unsigned int k, i, seed = 100;
	struct tool_buf fresh;
	long long ns;

	for (i = 0; i < VT_NTRANSFERS; i++) {
		const struct vt_transfer *t = &vt_transfers[i];

		for (k = 0; k < 2; k++) {
			progress(&tool, "first touch: %s, %s", t->name, mem_name(kinds[k]));
			tool_buf_init(&tool, &fresh, dev, pd, touch_size, kinds[k]);
			seed++;
			if (t->op == IBV_WR_RDMA_READ) {
				/* The device reads memory only the CPU has written. */
				vt_fill(fresh.p, touch_size, seed);
				ns = timed_move(t->op, fresh.p, fresh.mr, warm.p, warm.mr, touch_size,
						seed);
			} else {
				vt_fill(warm.p, touch_size, seed);
				ns = timed_move(t->op, warm.p, warm.mr, fresh.p, fresh.mr, touch_size,
						seed);
			}
			record("first_touch", t->name, mem_name(kinds[k]), touch_size,
			       touch_size / page_size / (ns / 1e9), "pages/s");
			tool_buf_fini(&fresh);
		}
	}
}

static void bench_steady(void)
{
	enum ibodp_kind kinds[] = { IBODP_EXPLICIT, IBODP_PINNED };
	const size_t chunk = 1UL << 20, small = 64;
	unsigned long long bytes, n;
	struct tool_buf dst;
	long long t0, spent;
	unsigned int k;

	for (k = 0; k < 2; k++) {
		tool_buf_init(&tool, &dst, dev, pd, chunk, kinds[k]);
		vt_fill(warm.p, chunk, 7);
		timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst.p, dst.mr, chunk, 7);
		progress(&tool, "steady state: %s bandwidth", mem_name(kinds[k]));
		for (bytes = 0, t0 = now_ns(); now_ns() - t0 < seconds * 1e9; bytes += chunk)
			timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst.p, dst.mr, chunk, 7);
		spent = now_ns() - t0;
		record("steady", "write_bandwidth", mem_name(kinds[k]), chunk,
		       bytes / (spent / 1e9) / 1e6, "MB/s");
		progress(&tool, "steady state: %s latency", mem_name(kinds[k]));
		for (n = 0, t0 = now_ns(); now_ns() - t0 < seconds * 1e9 / 2; n++)
			timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst.p, dst.mr, small, 7);
		spent = now_ns() - t0;
		record("steady", "write_latency", mem_name(kinds[k]), small, spent / 1e3 / n, "us");
		tool_buf_fini(&dst);
	}
}

/* MADV_DONTNEED + WRITE against WRITE alone, on 1 MiB of ODP memory. */
static void bench_invalidate(void)
{
	const size_t chunk = 1UL << 20;
	long long t0, plain = 0, cycle = 0;
	unsigned int i, n = 10;
	struct tool_buf dst;

	tool_buf_init(&tool, &dst, dev, pd, chunk, IBODP_EXPLICIT);
	vt_fill(warm.p, chunk, 9);
	timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst.p, dst.mr, chunk, 9);
	for (i = 0; i < n; i++) {
		progress(&tool, "invalidate + refault: %u of %u", i + 1, n);
		plain += timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst.p, dst.mr, chunk, 9);
		t0 = now_ns();
		if (madvise(dst.p, chunk, MADV_DONTNEED))
			die(&tool, "madvise: %s", strerror(errno));
		timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst.p, dst.mr, chunk, 9);
		cycle += now_ns() - t0;
	}
	record("invalidate", "write", "odp", chunk, plain / 1e3 / n, "us");
	record("invalidate", "dontneed_and_write", "odp", chunk, cycle / 1e3 / n, "us");
	tool_buf_fini(&dst);
}

/* The first WRITE into fresh ODP memory, with and without a PREFETCH_WRITE before. */
static void bench_prefetch(void)
{
	long long t0, prefetch, write_after, write_cold;
	struct tool_buf dst;
	bool direct;

	progress(&tool, "prefetch");
	vt_fill(warm.p, touch_size, 11);
	tool_buf_init(&tool, &dst, dev, pd, touch_size, IBODP_EXPLICIT);
	write_cold = timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst.p, dst.mr, touch_size, 11);
	tool_buf_fini(&dst);

	tool_buf_init(&tool, &dst, dev, pd, touch_size, IBODP_EXPLICIT);
	t0 = now_ns();
	if (ibodp_prefetch(dst.mr, dst.p, touch_size, IBODP_PREFETCH_WRITE | IBODP_PREFETCH_SYNC,
			   &direct)) {
		fprintf(stderr, "%s: no prefetch numbers: %s\n", tool.name, ibodp_errmsg());
		tool_buf_fini(&dst);
		return;
	}
	prefetch = now_ns() - t0;
	write_after = timed_move(IBV_WR_RDMA_WRITE, warm.p, warm.mr, dst.p, dst.mr, touch_size, 11);
	tool_buf_fini(&dst);
	record("prefetch", "write_cold", "odp", touch_size, write_cold / 1e3, "us");
	record("prefetch", "prefetch_write", "odp", touch_size, prefetch / 1e3, "us");
	record("prefetch", "write_after_prefetch", "odp", touch_size, write_after / 1e3, "us");
}

static const struct result *find(const char *section, const char *metric, const char *memory,
				 size_t size)
{
	unsigned int i;

	for (i = 0; i < nresults; i++)
		if (!strcmp(results[i].section, section) && !strcmp(results[i].metric, metric) &&
		    !strcmp(results[i].memory, memory) && results[i].size == size)
			return &results[i];
	return NULL;
}

/* "64B", "4K", "16M": sizes as the table shows them. */
static const char *size_text(size_t size, char *buf, size_t len)
{
	if (size >= (1UL << 20) && !(size % (1UL << 20)))
		snprintf(buf, len, "%zuM", size >> 20);
	else if (size >= 1024 && !(size % 1024))
		snprintf(buf, len, "%zuK", size >> 10);
	else
		snprintf(buf, len, "%zuB", size);
	return buf;
}

static void print_table(const char *device, const char *dma)
{
	const struct result *o, *p;
	char size[24];
	unsigned int i;

	printf("odp-bench on %s (%s); ratio = ODP / pinned\n\n", device, dma);
	printf("%-13s %-21s %6s %19s %19s %7s\n", "section", "metric", "size", "ODP", "pinned",
	       "ratio");
	for (i = 0; i < nresults; i++) {
		o = &results[i];
		if (strcmp(o->memory, "odp"))
			continue;
		p = find(o->section, o->metric, "pinned", o->size);
		printf("%-13s %-21s %6s %11.1f %-7s ", o->section, o->metric,
		       size_text(o->size, size, sizeof(size)), o->value, o->unit);
		if (p)
			printf("%11.1f %-7s %6.2fx\n", p->value, p->unit,
			       p->value ? o->value / p->value : 0);
		else
			printf("%19s %7s\n", "-", "-");
	}
	o = find("invalidate", "dontneed_and_write", "odp", 1UL << 20);
	p = find("invalidate", "write", "odp", 1UL << 20);
	if (o && p)
		printf("\ninvalidate + refault of 1 MiB costs %.2fx a WRITE into present pages\n",
		       o->value / p->value);
	o = find("prefetch", "write_after_prefetch", "odp", touch_size);
	p = find("prefetch", "write_cold", "odp", touch_size);
	if (o && p)
		printf("a first WRITE after PREFETCH_WRITE takes %.2fx the time of one without; prefetch + WRITE %.2fx\n",
		       o->value / p->value,
		       (o->value + find("prefetch", "prefetch_write", "odp", touch_size)->value) /
		       p->value);
}

static void write_csv(void)
{
	FILE *f = fopen(csv_path, "w");
	unsigned int i;

	if (!f)
		die(&tool, "--csv %s: %s", csv_path, strerror(errno));
	fprintf(f, "section,metric,memory,size_bytes,value,unit\n");
	for (i = 0; i < nresults; i++)
		fprintf(f, "%s,%s,%s,%zu,%.3f,%s\n", results[i].section, results[i].metric,
			results[i].memory, results[i].size, results[i].value, results[i].unit);
	if (fclose(f))
		die(&tool, "--csv %s: %s", csv_path, strerror(errno));
}

static void write_json(const char *device, const char *dma)
{
	FILE *f = fopen(json_path, "w");
	unsigned int i;

	if (!f)
		die(&tool, "--json %s: %s", json_path, strerror(errno));
	fprintf(f, "{\n  \"device\": \"%s\",\n  \"dma\": \"%s\",\n  \"results\": [\n", device, dma);
	for (i = 0; i < nresults; i++)
		fprintf(f, "    {\"section\": \"%s\", \"metric\": \"%s\", \"memory\": \"%s\", "
			"\"size_bytes\": %zu, \"value\": %.3f, \"unit\": \"%s\"}%s\n",
			results[i].section, results[i].metric, results[i].memory, results[i].size,
			results[i].value, results[i].unit, i + 1 < nresults ? "," : "");
	fprintf(f, "  ]\n}\n");
	if (fclose(f))
		die(&tool, "--json %s: %s", json_path, strerror(errno));
}

int main(int argc, char **argv)
{
	struct ibodp_caps caps;
	char dma[128];

	tool_parse(&tool, argc, argv);
	page_size = sysconf(_SC_PAGESIZE);
	if (max_size < 4096 || touch_size < page_size || touch_size > (1UL << 30))
		die(&tool, "--max-size must be at least 4K, --touch-size from a page to 1G");
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

	bench_registration();
	bench_first_touch();
	bench_steady();
	bench_invalidate();
	bench_prefetch();
	progress_done(&tool);

	print_table(ibodp_name(dev), dma);
	if (csv_path)
		write_csv();
	if (json_path)
		write_json(ibodp_name(dev), dma);
	tool_buf_fini(&warm);
	vt_loopback_destroy(&lb);
	ibv_dealloc_pd(pd);
	ibodp_close(dev);
	return 0;
}
