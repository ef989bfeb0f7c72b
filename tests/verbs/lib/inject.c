// SPDX-License-Identifier: GPL-2.0
#include "inject.h"
#include "odp.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where "times" starts: it counts down the failures injected. */
#define INJECT_TIMES "1000000000"

bool vt_inject_available(void)
{
	return !access(VT_FAIL_FUNCTION "inject", W_OK);
}

bool vt_inject_start(const char *func, int err, unsigned int percent)
{
	char path[128], val[32], pct[8];

	if (!vt_write_str(VT_FAIL_FUNCTION "inject", func)) {
		tap_diag("cannot add %s to " VT_FAIL_FUNCTION "inject: %s", func, strerror(errno));
		return false;
	}
	snprintf(path, sizeof(path), VT_FAIL_FUNCTION "%s/retval", func);
	snprintf(val, sizeof(val), "%#llx", (unsigned long long)(long long)-err);
	snprintf(pct, sizeof(pct), "%u", percent);
	if (!vt_write_str(path, val) || !vt_write_str(VT_FAIL_FUNCTION "verbose", "0") ||
	    !vt_write_str(VT_FAIL_FUNCTION "interval", "1") ||
	    !vt_write_str(VT_FAIL_FUNCTION "times", INJECT_TIMES) ||
	    !vt_write_str(VT_FAIL_FUNCTION "probability", pct)) {
		tap_diag("cannot set up the injection into %s: %s", func, strerror(errno));
		return false;
	}
	return true;
}

long vt_inject_count(void)
{
	long left = vt_read_long(VT_FAIL_FUNCTION "times");

	return left < 0 ? -1 : atol(INJECT_TIMES) - left;
}

bool vt_inject_stop(void)
{
	if (vt_write_str(VT_FAIL_FUNCTION "probability", "0") &&
	    vt_write_str(VT_FAIL_FUNCTION "inject", "\n"))
		return true;
	tap_diag("cannot stop the injection: %s", strerror(errno));
	return false;
}
