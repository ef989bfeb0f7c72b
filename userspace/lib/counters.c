// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The driver's ODP counters, from the rdma hw_counters in sysfs. */
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*
 * The counters in the order of struct ibodp_counters. Those of 1.0 must all be there;
 * a later one a driver does not have reads 0.
 */
static const struct {
	const char *name;
	size_t offset;
	bool optional;
} counter_files[] = {
	{ "odp_page_faults", offsetof(struct ibodp_counters, page_faults), false },
	{ "odp_pages_faulted", offsetof(struct ibodp_counters, pages_faulted), false },
	{ "odp_pages_linked", offsetof(struct ibodp_counters, pages_linked), false },
	{ "odp_pages_unlinked", offsetof(struct ibodp_counters, pages_unlinked), false },
	{ "odp_invalidations", offsetof(struct ibodp_counters, invalidations), false },
	{ "odp_prefetch_requests", offsetof(struct ibodp_counters, prefetch_requests), false },
	{ "odp_fault_errors", offsetof(struct ibodp_counters, fault_errors), false },
	{ "odp_fault_retries", offsetof(struct ibodp_counters, fault_retries), true },
};
#define NCOUNTERS (sizeof(counter_files) / sizeof(counter_files[0]))

/* struct ibodp_counters as 1.0 and 1.1 had it, which their programs pass. */
#define COUNTERS_SIZE_1_0	offsetof(struct ibodp_counters, fault_retries)

/* Counter @i is within a caller's struct of @size bytes. */
static bool fits(unsigned int i, size_t size)
{
	return counter_files[i].offset + sizeof(uint64_t) <= size;
}

static uint64_t *field(struct ibodp_counters *c, unsigned int i)
{
	return (uint64_t *)((char *)c + counter_files[i].offset);
}

static uint64_t cfield(const struct ibodp_counters *c, unsigned int i)
{
	return *(const uint64_t *)((const char *)c + counter_files[i].offset);
}

/* The hw_counters file @name of @port, as a number; false when it cannot be read. */
static bool read_counter(const struct ibodp_dev *dev, uint8_t port, const char *name,
			 uint64_t *value, char *path, size_t size)
{
	FILE *f;
	bool ok;

	snprintf(path, size, "/sys/class/infiniband/%s/ports/%u/hw_counters/%s",
		 ibodp_name(dev), port, name);
	f = fopen(path, "r");
	if (!f)
		return false;
	ok = fscanf(f, "%" SCNu64, value) == 1;
	fclose(f);
	if (!ok)
		errno = EIO;
	return ok;
}

/* One jiffy at the lowest HZ a kernel has (100). */
#define JIFFY_MAX_MS	10

int ibodp_read_counters_sized(const struct ibodp_dev *dev, uint8_t port,
			      struct ibodp_counters *counters, size_t counters_size)
{
	struct ibodp_counters c = { 0 };
	char path[PATH_MAX];
	uint64_t lifespan;
	unsigned int i;

	if (!dev || !counters)
		return ibodp_fail(EINVAL, "ibodp_read_counters: %s is NULL",
				  dev ? "counters" : "dev");
	if (counters_size < COUNTERS_SIZE_1_0)
		return ibodp_fail(EINVAL, "ibodp_read_counters: a struct of %zu bytes is smaller than any struct ibodp_counters",
				  counters_size);
	/*
	 * The RDMA core serves hw_counters from a cache refreshed when it is older than
	 * its lifespan (ms, rounded to jiffies): a read right after the work could show
	 * the values from before it. Wait until any cache made before this call expired.
	 */
	if (!read_counter(dev, port, "lifespan", &lifespan, path, sizeof(path)) ||
	    lifespan > 1000)
		lifespan = 10;
	usleep((lifespan + JIFFY_MAX_MS) * 1000);
	for (i = 0; i < NCOUNTERS && fits(i, counters_size); i++) {
		if (read_counter(dev, port, counter_files[i].name, field(&c, i), path,
				 sizeof(path)))
			continue;
		if (errno == ENOENT && counter_files[i].optional)
			continue;
		return errno == ENOENT ?
		       ibodp_fail(EOPNOTSUPP, "%s port %u has no ODP counters (%s)",
				  ibodp_name(dev), port, path) :
		       ibodp_fail(errno, "cannot read %s", path);
	}
	/* All or nothing: the caller's struct is written only now. */
	ibodp_copy_sized(counters, counters_size, &c, sizeof(c));
	return 0;
}

/* The 1.0 function, for programs built before the size was passed. */
int (ibodp_read_counters)(const struct ibodp_dev *dev, uint8_t port,
			  struct ibodp_counters *counters)
{
	return ibodp_read_counters_sized(dev, port, counters, COUNTERS_SIZE_1_0);
}

void ibodp_counters_delta_sized(const struct ibodp_counters *before,
				const struct ibodp_counters *after,
				struct ibodp_counters *delta, size_t counters_size)
{
	unsigned int i;

	if (!before || !after || !delta || counters_size < COUNTERS_SIZE_1_0)
		return;
	for (i = 0; i < NCOUNTERS && fits(i, counters_size); i++)
		*field(delta, i) = cfield(after, i) - cfield(before, i);
	if (counters_size > sizeof(*delta))
		memset((char *)delta + sizeof(*delta), 0, counters_size - sizeof(*delta));
}

void (ibodp_counters_delta)(const struct ibodp_counters *before,
			    const struct ibodp_counters *after, struct ibodp_counters *delta)
{
	ibodp_counters_delta_sized(before, after, delta, COUNTERS_SIZE_1_0);
}

int ibodp_counters_str_sized(const struct ibodp_counters *counters, size_t counters_size,
			     char *buf, size_t size)
{
	size_t len = 0;
	unsigned int i;

	if (!counters || (!buf && size))
		return ibodp_fail(EINVAL, "ibodp_counters_str: %s is NULL",
				  counters ? "buf" : "counters");
	if (counters_size < COUNTERS_SIZE_1_0)
		return ibodp_fail(EINVAL, "ibodp_counters_str: a struct of %zu bytes is smaller than any struct ibodp_counters",
				  counters_size);
	if (size)
		buf[0] = 0;
	for (i = 0; i < NCOUNTERS && fits(i, counters_size); i++)
		ibodp_append(buf, size, &len, "%s%s %" PRIu64, i ? "  " : "",
			     counter_files[i].name + 4, cfield(counters, i));
	return len > INT_MAX ? ibodp_fail(EOVERFLOW, "ibodp_counters_str") : (int)len;
}

int (ibodp_counters_str)(const struct ibodp_counters *counters, char *buf, size_t size)
{
	return ibodp_counters_str_sized(counters, COUNTERS_SIZE_1_0, buf, size);
}

int ibodp_mr_read_counters_sized(const struct ibodp_mr *mr, struct ibodp_mr_counters *counters,
				 size_t counters_size)
{
	struct ibodp_mr_counters c = { 0 };
	int ret;

	if (!mr || !counters || !counters_size)
		return ibodp_fail(EINVAL, "ibodp_mr_read_counters() needs an MR and a struct to fill");
	if (mr->kind != IBODP_PINNED && !mr->fell_back) {
		ret = ibodp_nl_mr_counters(mr, &c);
		if (ret)
			return ret;
	}
	ibodp_copy_sized(counters, counters_size, &c, sizeof(c));
	return 0;
}
