/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The results of a benchmark that compares ODP with pinned memory: every repetition's
 * value of each measurement, kept in the order measured, and what a person and a plot
 * read of them: a table of medians with their ranges and ratios ODP / pinned taken
 * repetition by repetition, CSV and JSON.
 */
#ifndef IBODP_TOOLS_BENCH_RESULTS_H
#define IBODP_TOOLS_BENCH_RESULTS_H

#include <stdbool.h>
#include <stddef.h>

#define BENCH_MAX_REPS		64
#define BENCH_MAX_RESULTS	128

/* One measurement: section ("first_touch"), metric ("WRITE"), memory ("odp", "pinned"). */
struct bench_result {
	const char *section, *metric, *memory, *unit;
	size_t size;
	unsigned int n;
	double v[BENCH_MAX_REPS];
};

struct bench_results {
	const char *tool;	/* the name in messages */
	struct bench_result r[BENCH_MAX_RESULTS];
	unsigned int n;
	unsigned int failures;	/* measurements that could not be made */
};

/* Add one repetition's value; false (said on stderr) when the table is full. */
bool bench_record(struct bench_results *b, const char *section, const char *metric,
		  const char *memory, size_t size, double value, const char *unit);
const struct bench_result *bench_find(const struct bench_results *b, const char *section,
				      const char *metric, const char *memory, size_t size);
/*
 * A measurement that could not be made (@metric NULL: the whole section): said on
 * stderr as "TOOL: SECTION [METRIC] not measured", counted, and what it recorded
 * forgotten, so that no half-measured row is reported.
 */
void bench_not_measured(struct bench_results *b, const char *section, const char *metric);

/* Median, smallest and largest of @n values. */
double bench_median(const double *v, unsigned int n, double *lo, double *hi);
/*
 * The median of a->v[i] / b->v[i], the repetitions taken side by side, and their range
 * (0 when no b->v[i] is non-zero).
 */
double bench_ratio(const struct bench_result *a, const struct bench_result *b, double *lo,
		   double *hi);

/* The table: one row per ODP measurement, its pinned counterpart and the ratio beside it. */
void bench_print_table(const struct bench_results *b, const char *title);
/* CSV (section,metric,memory,size_bytes,rep,value,unit) and JSON; 0 or -errno. */
int bench_write_csv(const struct bench_results *b, const char *path);
int bench_write_json(const struct bench_results *b, const char *path, const char *device,
		     const char *dma);

#endif
