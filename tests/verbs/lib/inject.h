/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's function error injection (/sys/kernel/debug/fail_function,
 * CONFIG_FAIL_FUNCTION: the distro-mm and debug profiles) for the tests that make ODP faults fail.
 * The injection is not scoped to the test task (rxe faults in its work queue), so such a
 * test runs alone in its guest, as the harness runs it.
 */
#ifndef VT_INJECT_H
#define VT_INJECT_H

#include <stdbool.h>

#define VT_FAIL_FUNCTION "/sys/kernel/debug/fail_function/"
/* The reason a test gives for its skips where the kernel has no fail_function. */
#define VT_NO_FAIL_FUNCTION \
	"no " VT_FAIL_FUNCTION " (CONFIG_FAIL_FUNCTION): the distro-mm and debug profiles have it"

bool vt_inject_available(void);
/*
 * Make func return -err on percent of its calls (100: every call) until
 * vt_inject_stop(); only one function at a time. False (said) on failure. For a
 * function that fails by returning false or NULL (its ALLOW_ERROR_INJECTION type NULL),
 * err is 0.
 */
bool vt_inject_start(const char *func, int err, unsigned int percent);
/* Failures injected since vt_inject_start(); -1 when it cannot be read. */
long vt_inject_count(void);
bool vt_inject_stop(void);

#endif
