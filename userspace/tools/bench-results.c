// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "bench-results.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct bench_result *bench_find(const struct bench_results *b, const char *section,
				      const char *metric, const char *memory, size_t size)
{
	unsigned int i;

	for (i = 0; i < b->n; i++)
		if (!strcmp(b->r[i].section, section) && !strcmp(b->r[i].metric, metric) &&
		    !strcmp(b->r[i].memory, memory) && b->r[i].size == size)
			return &b->r[i];
	return NULL;
}

bool bench_record(struct bench_results *b, const char *section, const char *metric,
		  const char *memory, size_t size, double value, const char *unit)
{
	struct bench_result *r = (struct bench_result *)bench_find(b, section, metric, memory,
								   size);

	if (!r) {
		if (b->n == BENCH_MAX_RESULTS) {
			fprintf(stderr, "%s: more than %d measurements: %s %s left out\n", b->tool,
				BENCH_MAX_RESULTS, section, metric);
			return false;
		}
		r = &b->r[b->n++];
		*r = (struct bench_result){ section, metric, memory, unit, size, 0, { 0 } };
	}
	if (r->n == BENCH_MAX_REPS) {
		fprintf(stderr, "%s: more than %d repetitions of %s %s: the rest left out\n",
			b->tool, BENCH_MAX_REPS, section, metric);
		return false;
	}
	r->v[r->n++] = value;
	return true;
}

void bench_not_measured(struct bench_results *b, const char *section, const char *metric)
{
	unsigned int i, j;

	b->failures++;
	fprintf(stderr, "%s: %s%s%s not measured\n", b->tool, section, metric ? " " : "",
		metric ? metric : "");
	for (i = 0, j = 0; i < b->n; i++)
		if (strcmp(b->r[i].section, section) || (metric && strcmp(b->r[i].metric, metric)))
			b->r[j++] = b->r[i];
	b->n = j;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double bench_median(const double *v, unsigned int n, double *lo, double *hi)
{
	double s[BENCH_MAX_REPS];

	if (!n) {
		*lo = *hi = 0;
		return 0;
	}
	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(s[0]), cmp_double);
	*lo = s[0];
	*hi = s[n - 1];
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

double bench_ratio(const struct bench_result *a, const struct bench_result *b, double *lo,
		   double *hi)
{
	unsigned int i, n = 0, reps = a->n < b->n ? a->n : b->n;
	double r[BENCH_MAX_REPS];

	/* A repetition with nothing to divide by has no ratio. */
	for (i = 0; i < reps; i++)
		if (b->v[i])
			r[n++] = a->v[i] / b->v[i];
	return bench_median(r, n, lo, hi);
}

/* "64B", "4K", "16M": sizes as the table shows them. */
static const char *size_text(size_t size, char *buf, size_t len)
{
	if (size >= (1UL << 30) && !(size % (1UL << 30)))
		snprintf(buf, len, "%zuG", size >> 30);
	else if (size >= (1UL << 20) && !(size % (1UL << 20)))
		snprintf(buf, len, "%zuM", size >> 20);
	else if (size >= 1024 && !(size % 1024))
		snprintf(buf, len, "%zuK", size >> 10);
	else
		snprintf(buf, len, "%zuB", size);
	return buf;
}

/* A number in a few characters: 48.5, 1234, 12.1k, 3.81M. */
static const char *num_text(double v, char *buf, size_t len)
{
	if (v >= 1e6 || v <= -1e6)
		snprintf(buf, len, "%.3gM", v / 1e6);
	else if (v >= 1e4 || v <= -1e4)
		snprintf(buf, len, "%.3gk", v / 1e3);
	else
		snprintf(buf, len, "%.4g", v);
	return buf;
}

/* "12.3 (11.9-13.0)": a median with the range of the repetitions. */
static const char *spread_text(const struct bench_result *r, char *buf, size_t len)
{
	double lo, hi, m = bench_median(r->v, r->n, &lo, &hi);
	char a[16], b[16], c[16];

	snprintf(buf, len, "%s (%s-%s)", num_text(m, a, sizeof(a)), num_text(lo, b, sizeof(b)),
		 num_text(hi, c, sizeof(c)));
	return buf;
}

void bench_print_table(const struct bench_results *b, const char *title)
{
	const struct bench_result *o, *p;
	char size[24], a[48], r[48];
	double lo, hi, m;
	unsigned int i;

	printf("%s\n\n", title);
	printf("%-13s %-24s %6s %-10s %25s %25s %19s\n", "section", "metric", "size", "unit",
	       "ODP", "pinned", "ratio");
	for (i = 0; i < b->n; i++) {
		o = &b->r[i];
		if (strcmp(o->memory, "odp"))
			continue;
		p = bench_find(b, o->section, o->metric, "pinned", o->size);
		printf("%-13s %-24s %6s %-10s %25s ", o->section, o->metric,
		       size_text(o->size, size, sizeof(size)), o->unit,
		       spread_text(o, a, sizeof(a)));
		if (p) {
			m = bench_ratio(o, p, &lo, &hi);
			snprintf(r, sizeof(r), "%.2fx (%.2f-%.2f)", m, lo, hi);
			printf("%25s %19s\n", spread_text(p, a, sizeof(a)), r);
		} else {
			printf("%25s %19s\n", "-", "-");
		}
	}
	printf("\n");
}

/* fclose() that also reports a write error it is the first to see. */
static int close_file(FILE *f, int err)
{
	if (ferror(f) && !err)
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

int bench_write_csv(const struct bench_results *b, const char *path)
{
	FILE *f = fopen(path, "w");
	unsigned int i, j;

	if (!f)
		return -errno;
	fprintf(f, "section,metric,memory,size_bytes,rep,value,unit\n");
	for (i = 0; i < b->n; i++)
		for (j = 0; j < b->r[i].n; j++)
			fprintf(f, "%s,%s,%s,%zu,%u,%.3f,%s\n", b->r[i].section, b->r[i].metric,
				b->r[i].memory, b->r[i].size, j, b->r[i].v[j], b->r[i].unit);
	return close_file(f, 0);
}

/* A JSON string: the device name and DMA mode come from the system. */
static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

int bench_write_json(const struct bench_results *b, const char *path, const char *device,
		     const char *dma)
{
	FILE *f = fopen(path, "w");
	unsigned int i, j;

	if (!f)
		return -errno;
	fprintf(f, "{\n  \"device\": ");
	json_string(f, device);
	fprintf(f, ",\n  \"dma\": ");
	json_string(f, dma);
	fprintf(f, ",\n  \"results\": [\n");
	for (i = 0; i < b->n; i++) {
		fprintf(f, "    {\"section\": \"%s\", \"metric\": \"%s\", \"memory\": \"%s\", "
			"\"size_bytes\": %zu, \"unit\": \"%s\", \"values\": [",
			b->r[i].section, b->r[i].metric, b->r[i].memory, b->r[i].size,
			b->r[i].unit);
		for (j = 0; j < b->r[i].n; j++)
			fprintf(f, "%s%.3f", j ? ", " : "", b->r[i].v[j]);
		fprintf(f, "]}%s\n", i + 1 < b->n ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	return close_file(f, 0);
}
