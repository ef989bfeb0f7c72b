/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A few lines of TAP for the library's tests: check(), then return checks_done(). */
#ifndef IBODP_CHECK_H
#define IBODP_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int checks_run, checks_failed;

static inline bool __attribute__((format(printf, 2, 3))) check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", ok ? "ok" : "not ok", ++checks_run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	checks_failed += !ok;
	return ok;
}

static inline void __attribute__((format(printf, 2, 3))) skip(const char *why, const char *fmt,
							      ...)
{
	va_list ap;

	printf("ok %d - ", ++checks_run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # SKIP %s\n", why);
}

static inline int checks_done(void)
{
	printf("1..%d\n", checks_run);
	return checks_failed ? 1 : 0;
}

#endif
