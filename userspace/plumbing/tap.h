/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Minimal TAP producer for every test program (the tools do not link it): a plan, one
 * line per check, diagnostics as '#' lines, and an exit status that is non-zero when
 * any check failed.
 */
#ifndef VT_TAP_H
#define VT_TAP_H

#include <stdbool.h>

/* The number of checks, first; a program that does not know it says none. */
void tap_plan(int count);
/* Record one check. Returns cond so callers can stop a dependent sequence. */
bool tap_ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tap_skip(const char *reason, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Stop early: report the remaining planned checks as failed, with the reason. */
void tap_bail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Close the plan (printed here when none was given); the exit status for main(). */
int tap_done(void);

#endif
