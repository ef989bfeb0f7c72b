/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* libibodp internals shared by its source files. */
#ifndef IBODP_INTERNAL_H
#define IBODP_INTERNAL_H

#include "ibodp.h"

#include <pthread.h>

struct ibodp_dev {
	struct ibv_context *ctx;
	bool own_ctx;			/* opened here: ibodp_close() closes it */
	struct ibv_device_attr_ex attr;
	bool no_odp;			/* IBODP_NO_ODP=1: pretend there is no ODP */
	pthread_mutex_t driver_lock;	/* guards driver_id */
	int driver_id;			/* the uverbs driver id; -1: not known yet */
};

/* The uverbs driver id of @ctx's device, from RDMA netlink; 0 or a positive errno. */
int ibodp_uverbs_driver_id(struct ibv_context *ctx, uint32_t *id);
/* @mr's counters from the kernel's restrack MR statistics; 0 or -errno (said). */
int ibodp_nl_mr_counters(const struct ibodp_mr *mr, struct ibodp_mr_counters *c);

/*
 * Record a failure for ibodp_errmsg(): the formatted text, then strerror(err) when
 * err is not 0. Returns -err, so that `return ibodp_fail(EINVAL, ...)` reads well.
 */
int ibodp_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record a note that is not a failure (a fallback taken); ibodp_errmsg() shows it. */
void ibodp_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The library's struct @src of @src_size bytes into a caller's of @dst_size: as much as
 * fits, and zeros past what this library knows (a newer header's fields).
 */
void ibodp_copy_sized(void *dst, size_t dst_size, const void *src, size_t src_size);

/* snprintf() into buf + *len that tolerates a full buffer, tracking the whole length. */
void ibodp_append(char *buf, size_t size, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
