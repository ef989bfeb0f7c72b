// SPDX-License-Identifier: GPL-2.0
/*
 * Cost of mapping a faulted run of pages for a device with the HMM DMA
 * helpers: one hmm_dma_map_pfn() per page (one IOTLB sync each) against one
 * hmm_dma_map_pfns() for the run (one sync), through test_hmm's DMA mode
 * (HMM_DMIRROR_DMA_BENCH). Needs a DMA device bound to test_hmm_dma.
 *
 * Each run length is measured REPS times (both ways in each ioctl, so the two
 * take turns). Prints CSV: pages,rep,loops,single_ns_per_page,run_ns_per_page
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <lib/test_hmm_uapi.h>

#define MAX_PAGES	512
/* Page mappings per measurement, whatever the run length. */
#define MAPS_PER_RUN	51200
/* Repetitions of each measurement: fewer decide nothing on a noisy machine. */
#define REPS		5

static const char *device = "/dev/hmm_dmirror0";

static int usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--device /dev/hmm_dmirrorN] [PAGES...]\n"
		"  PAGES: run lengths to measure, 1 to %d (default 1 16 64 512)\n",
		prog, MAX_PAGES);
	return 2;
}

int main(int argc, char **argv)
{
	static const unsigned long defaults[] = { 1, 16, 64, 512 };
	unsigned long runs[16], nruns = 0, i;
	struct hmm_dmirror_cmd cmd = { 0 };
	long page_size = sysconf(_SC_PAGESIZE);
	unsigned char *buf;
	int fd, a, rep;

	for (a = 1; a < argc; a++) {
		char *end;

		if (!strcmp(argv[a], "--device") && a + 1 < argc) {
			device = argv[++a];
			continue;
		}
		if (!strcmp(argv[a], "--help") || nruns == 16)
			return usage(argv[0]);
		runs[nruns] = strtoul(argv[a], &end, 10);
		if (*end || !runs[nruns] || runs[nruns] > MAX_PAGES)
			return usage(argv[0]);
		nruns++;
	}
	if (!nruns) {
		memcpy(runs, defaults, sizeof(defaults));
		nruns = sizeof(defaults) / sizeof(defaults[0]);
	}

	fd = open(device, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "cannot open %s: %s (is CONFIG_TEST_HMM in the kernel?)\n",
			device, strerror(errno));
		return 1;
	}
	buf = mmap(NULL, MAX_PAGES * page_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		fprintf(stderr, "cannot map %d pages: %s\n", MAX_PAGES, strerror(errno));
		close(fd);
		return 1;
	}
	memset(buf, 0x5a, MAX_PAGES * page_size);

	cmd.addr = (uintptr_t)buf;
	cmd.npages = MAX_PAGES;
	if (ioctl(fd, HMM_DMIRROR_DMA_ENABLE, &cmd)) {
		fprintf(stderr, "cannot enable the DMA mode of %s: %s%s\n", device,
			strerror(errno), errno == ENODEV ?
			" (bind a DMA device to the test_hmm_dma PCI driver first)" : "");
		munmap(buf, MAX_PAGES * page_size);
		close(fd);
		return 1;
	}

	printf("pages,rep,loops,single_ns_per_page,run_ns_per_page\n");
	for (i = 0; i < nruns; i++) {
		for (rep = 0; rep < REPS; rep++) {
			struct hmm_dmirror_dma_bench b = {
				.addr = (uintptr_t)buf,
				.npages = runs[i],
				.loops = MAPS_PER_RUN / runs[i],
			};

			if (ioctl(fd, HMM_DMIRROR_DMA_BENCH, &b)) {
				fprintf(stderr, "benchmark of %lu pages failed: %s\n", runs[i],
					strerror(errno));
				munmap(buf, MAX_PAGES * page_size);
				close(fd);
				return 1;
			}
			printf("%lu,%d,%llu,%.1f,%.1f\n", runs[i], rep,
			       (unsigned long long)b.loops, (double)b.single_ns / runs[i],
			       (double)b.run_ns / runs[i]);
			fflush(stdout);
		}
	}
	munmap(buf, MAX_PAGES * page_size);
	close(fd);
	return 0;
}
