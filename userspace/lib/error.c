// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Per-thread failure messages, bounded string building, structs of a caller's size. */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char errmsg[512];

const char *ibodp_errmsg(void)
{
	return errmsg;
}

static void vrecord(int err, const char *fmt, va_list ap)
{
	int n = vsnprintf(errmsg, sizeof(errmsg), fmt, ap);

	if (err && n >= 0 && (size_t)n < sizeof(errmsg))
		snprintf(errmsg + n, sizeof(errmsg) - n, ": %s", strerror(err));
}

int ibodp_fail(int err, const char *fmt, ...)
{
	va_list ap;

	/* A failure is never reported as success, even when errno was not set. */
	if (err <= 0)
		err = EIO;
	va_start(ap, fmt);
	vrecord(err, fmt, ap);
	va_end(ap);
	/* Both conventions: ours returns -err, libibverbs' callers look at errno. */
	errno = err;
	return -err;
}

void ibodp_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vrecord(0, fmt, ap);
	va_end(ap);
}

void ibodp_copy_sized(void *dst, size_t dst_size, const void *src, size_t src_size)
{
	memcpy(dst, src, dst_size < src_size ? dst_size : src_size);
	if (dst_size > src_size)
		memset((char *)dst + src_size, 0, dst_size - src_size);
}

void ibodp_append(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(*len < size ? buf + *len : NULL, *len < size ? size - *len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += n;
}
