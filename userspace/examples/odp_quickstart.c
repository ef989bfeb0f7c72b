// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What an application does with libibodp, start to end: open a device (by name, or the
 * first with ODP), allocate a PD with libibverbs, register 1 MiB of memory as an ODP MR
 * (pinned if the device has no ODP, and saying so), prefetch it for writing, and read
 * what the driver's ODP counters saw, and the MR's own. Built against an installed libibodp:
 *   cc odp_quickstart.c $(pkg-config --cflags --libs ibodp) -o odp_quickstart
 */
#define _DEFAULT_SOURCE		/* MAP_ANONYMOUS under -std=c11 */
#include <ibodp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define SIZE (1u << 20)

int main(int argc, char **argv)
{
	struct ibodp_counters before, after, delta;
	struct ibodp_mr_counters mr_counters;
	bool have_counters, direct = false;
	struct ibodp_mr *mr = NULL;
	struct ibv_pd *pd = NULL;
	struct ibodp_dev *dev;
	char text[512];
	int ret = 1;
	void *buf;

	if (ibodp_open(argc > 1 ? argv[1] : NULL, &dev)) {
		fprintf(stderr, "odp_quickstart: %s\n", ibodp_errmsg());
		return 1;
	}
	/* The PD is the application's own, made with libibverbs on the library's context. */
	pd = ibv_alloc_pd(ibodp_context(dev));
	buf = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!pd || buf == MAP_FAILED) {
		perror(!pd ? "odp_quickstart: ibv_alloc_pd" : "odp_quickstart: mmap");
		goto out;
	}
	if (ibodp_reg_mr(dev, pd, buf, SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ, IBODP_EXPLICIT, IBODP_FALLBACK_PINNED, &mr)) {
		fprintf(stderr, "odp_quickstart: %s\n", ibodp_errmsg());
		goto out;
	}
	printf("%s: registered 1 MiB as %s MR, lkey %#x\n", ibodp_name(dev),
	       mr->fell_back ? "a pinned" : "an ODP", mr->mr->lkey);
	if (mr->fell_back)
		printf("  (no ODP: %s)\n", ibodp_errmsg());

	have_counters = ibodp_read_counters(dev, 1, &before) == 0;
	if (ibodp_prefetch(mr, buf, SIZE, IBODP_PREFETCH_WRITE | IBODP_PREFETCH_SYNC, &direct)) {
		fprintf(stderr, "odp_quickstart: %s\n", ibodp_errmsg());
		goto out;
	}
	printf("prefetched 1 MiB for writing%s\n",
	       direct ? " (through the kernel's ADVISE_MR: the provider has none)" : "");
	if (have_counters && ibodp_read_counters(dev, 1, &after) == 0) {
		ibodp_counters_delta(&before, &after, &delta);
		ibodp_counters_str(&delta, text, sizeof(text));
		printf("ODP counters of port 1 during the prefetch: %s\n", text);
	} else {
		printf("no ODP counters: %s\n", ibodp_errmsg());
	}
	/* The same seen from the MR alone (its counters start at 0 when it is registered). */
	if (ibodp_mr_read_counters(mr, &mr_counters) == 0)
		printf("this MR's counters: page_faults %llu page_invalidations %llu page_prefetch %llu\n",
		       (unsigned long long)mr_counters.page_faults,
		       (unsigned long long)mr_counters.page_invalidations,
		       (unsigned long long)mr_counters.page_prefetch);
	else
		printf("no counters for this MR: %s\n", ibodp_errmsg());
	ret = 0;
out:
	if (mr && ibodp_dereg_mr(mr)) {
		fprintf(stderr, "odp_quickstart: %s\n", ibodp_errmsg());
		ret = 1;
	}
	if (buf != MAP_FAILED)
		munmap(buf, SIZE);
	if (pd)
		ibv_dealloc_pd(pd);
	ibodp_close(dev);
	return ret;
}
