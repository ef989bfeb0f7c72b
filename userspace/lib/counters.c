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

static const struct {
	const char *name;
	size_t offset;
} counter_files[] = {
	{ "odp_page_faults", offsetof(struct ibodp_counters, page_faults) },
	{ "odp_pages_faulted", offsetof(struct ibodp_counters, pages_faulted) },
	{ "odp_pages_linked", offsetof(struct ibodp_counters, pages_linked) },
	{ "odp_pages_unlinked", offsetof(struct ibodp_counters, pages_unlinked) },
	{ "odp_invalidations", offsetof(struct ibodp_counters, invalidations) },
	{ "odp_prefetch_requests", offsetof(struct ibodp_counters, prefetch_requests) },
	{ "odp_fault_errors", offsetof(struct ibodp_counters, fault_errors) },
};
#define NCOUNTERS (sizeof(counter_files) / sizeof(counter_files[0]))

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

int ibodp_read_counters(const struct ibodp_dev *dev, uint8_t port,
			struct ibodp_counters *counters)
{
	struct ibodp_counters c;
	char path[PATH_MAX];
	uint64_t lifespan;
	unsigned int i;

	if (!dev || !counters)
		return ibodp_fail(EINVAL, "ibodp_read_counters: %s is NULL",
				  dev ? "counters" : "dev");
	/*
	 * The RDMA core serves hw_counters from a cache refreshed when it is older than
	 * its lifespan (ms, rounded to jiffies): a read right after the work could show
	 * the values from before it. Wait until any cache made before this call expired.
	 */
	if (!read_counter(dev, port, "lifespan", &lifespan, path, sizeof(path)) ||
	    lifespan > 1000)
		lifespan = 10;
	usleep((lifespan + JIFFY_MAX_MS) * 1000);
	for (i = 0; i < NCOUNTERS; i++)
		if (!read_counter(dev, port, counter_files[i].name, field(&c, i), path,
				  sizeof(path)))
			return errno == ENOENT ?
			       ibodp_fail(EOPNOTSUPP, "%s port %u has no ODP counters (%s)",
					  ibodp_name(dev), port, path) :
			       ibodp_fail(errno, "cannot read %s", path);
	/* All or nothing: the caller's struct is written only now. */
	*counters = c;
	return 0;
}

void ibodp_counters_delta(const struct ibodp_counters *before,
			  const struct ibodp_counters *after, struct ibodp_counters *delta)
{
	unsigned int i;

	for (i = 0; i < NCOUNTERS; i++)
		*field(delta, i) = cfield(after, i) - cfield(before, i);
}

int ibodp_counters_str(const struct ibodp_counters *counters, char *buf, size_t size)
{
	size_t len = 0;
	unsigned int i;

	if (!counters || (!buf && size))
		return ibodp_fail(EINVAL, "ibodp_counters_str: %s is NULL",
				  counters ? "buf" : "counters");
	if (size)
		buf[0] = 0;
	for (i = 0; i < NCOUNTERS; i++)
		ibodp_append(buf, size, &len, "%s%s %" PRIu64, i ? "  " : "",
			     counter_files[i].name + 4, cfield(counters, i));
	return len > INT_MAX ? -EOVERFLOW : (int)len;
}
