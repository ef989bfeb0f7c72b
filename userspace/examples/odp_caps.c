// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The smallest libibodp program: open a device (by name, or the first with ODP) and
 * print what it can do with On-Demand Paging. Built against an installed libibodp:
 *   cc odp_caps.c $(pkg-config --cflags --libs ibodp) -o odp_caps
 */
#include <ibodp.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	struct ibodp_dev *dev;
	struct ibodp_caps caps;
	char text[256];

	if (ibodp_open(argc > 1 ? argv[1] : NULL, &dev)) {
		fprintf(stderr, "odp_caps: %s\n", ibodp_errmsg());
		return 1;
	}
	ibodp_query_caps(dev, &caps);
	ibodp_caps_str(&caps, text, sizeof(text));
	printf("%s: %s\n", ibodp_name(dev), text);
	ibodp_close(dev);
	return 0;
}
