// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "tap.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static struct {
	int planned;	/* -1: no plan given, tap_done() prints it at the end */
	int run;
	int failed;
} tap = { .planned = -1 };

void tap_plan(int count)
{
	tap.planned = count;
	printf("1..%d\n", count);
	fflush(stdout);
}

static void tap_line(bool ok, const char *directive, const char *fmt, va_list ap)
{
	printf("%sok %d - ", ok ? "" : "not ", ++tap.run);
	vprintf(fmt, ap);
	if (directive)
		printf(" # %s", directive);
	putchar('\n');
	fflush(stdout);
}

bool tap_ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_line(cond, NULL, fmt, ap);
	va_end(ap);
	if (!cond)
		tap.failed++;
	return cond;
}

void tap_skip(const char *reason, const char *fmt, ...)
{
	char directive[256];
	va_list ap;

	snprintf(directive, sizeof(directive), "SKIP %s", reason);
	va_start(ap, fmt);
	tap_line(true, directive, fmt, ap);
	va_end(ap);
}

void tap_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void tap_bail(const char *fmt, ...)
{
	char reason[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	while (tap.run < tap.planned)
		tap_ok(false, "not run: %s", reason);
	exit(tap_done());
}

int tap_done(void)
{
	if (tap.planned < 0) {
		printf("1..%d\n", tap.run);
		fflush(stdout);
		return tap.failed ? 1 : 0;
	}
	if (tap.run != tap.planned) {
		tap_diag("planned %d checks but ran %d", tap.planned, tap.run);
		return 1;
	}
	return tap.failed ? 1 : 0;
}
