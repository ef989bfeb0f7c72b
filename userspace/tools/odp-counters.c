// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * odp-counters: a device port's ODP counters as libibodp reads them (all at once, after
 * the kernel's counter cache has expired), one "name value" line each, for scripts that
 * take a snapshot before and after a program and subtract name by name.
 */
#include "common.h"

#include <stdio.h>
#include <string.h>

static struct tool tool = {
	.name = "odp-counters",
	.summary = "The ODP counters of a device's port, one \"name value\" line each\n"
		   "(page_faults, pages_faulted, pages_linked, ...).",
	.details = "The names are the driver's hw_counters without their odp_ prefix. Exit status 0;\n"
		   "1 when the device or its counters cannot be read (a driver without ODP\n"
		   "counters says so), 2 on bad options.\n",
};

int main(int argc, char **argv)
{
	struct ibodp_counters c;
	struct ibodp_dev *dev;
	char text[512], *name, *value, *save = NULL;
	int n;

	tool_parse(&tool, argc, argv);
	if (ibodp_open(tool.dev.dev, &dev))
		die_lib(&tool, "opening the device");
	if (ibodp_read_counters(dev, tool.dev.port, &c)) {
		fprintf(stderr, "%s: %s port %u: %s\n", tool.name, ibodp_name(dev), tool.dev.port,
			ibodp_errmsg());
		ibodp_close(dev);
		return 1;
	}
	ibodp_close(dev);
	/* "page_faults 3  pages_faulted 16  ...": the library's names, one pair a line. */
	n = ibodp_counters_str(&c, text, sizeof(text));
	if (n < 0)
		die_lib(&tool, "formatting the counters");
	if ((size_t)n >= sizeof(text))
		die(&tool, "the counters do not fit in %zu characters", sizeof(text));
	for (name = strtok_r(text, " ", &save); name; name = strtok_r(NULL, " ", &save)) {
		value = strtok_r(NULL, " ", &save);
		printf("%s %s\n", name, value ? value : "?");
	}
	return 0;
}
