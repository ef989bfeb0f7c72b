// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * odp-workload: a short ODP workload through libibodp, with a summary a person can
 * read. Registers two ODP MRs much larger than anything touched before, RDMA WRITEs
 * a CPU-filled source across all of the destination and RDMA READs it back into a
 * third, checks every byte, invalidates a quarter of each (MADV_DONTNEED), and does
 * it all again. The summary: bytes moved, bytes verified, the driver's ODP counters
 * over the run, and how the device's DMA reaches memory.
 */
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define CHUNK	(1UL << 20)	/* one work request: progress per MiB */

static size_t size = 64UL << 20;
static unsigned int rounds = 2;
static struct tool tool = {
	.name = "odp-workload",
	.summary = "A short ODP workload with a summary: RDMA WRITE and READ across ODP MRs\n"
		   "nothing has touched, every byte checked, then again after invalidating part.",
	.options = (const struct tool_option[]){
		{ "size", "BYTES", "size of each buffer (default: 64M)", OPT_SIZE, &size },
		{ "rounds", "N", "rounds of WRITE + READ, with an invalidation in between (default: 2)",
		  OPT_COUNT, &rounds },
		{ 0 }
	},
	.details = "Exit status 0 when every byte arrived as sent, 1 on any error or difference.\n",
};

/* Move @b->size bytes in CHUNK pieces; false (reported) on a failed completion. */
static bool move_all(struct vt_loopback *lb, enum ibv_wr_opcode op, struct tool_buf *src,
		     struct tool_buf *dst, unsigned int round)
{
	enum ibv_wc_status status;
	size_t off, len;

	for (off = 0; off < src->size; off += len) {
		len = src->size - off < CHUNK ? src->size - off : CHUNK;
		progress(&tool, "round %u: %s %zu of %zu MiB", round,
			 op == IBV_WR_RDMA_WRITE ? "RDMA WRITE" : "RDMA READ", off >> 20,
			 src->size >> 20);
		if (vt_rdma(lb, op, src->p + off, src->mr->mr, dst->p + off, dst->mr->mr, len,
			    &status) || status != IBV_WC_SUCCESS) {
			progress_done(&tool);
			fprintf(stderr, "%s: %s of %zu bytes at offset %zu: %s\n", tool.name,
				op == IBV_WR_RDMA_WRITE ? "RDMA WRITE" : "RDMA READ", len, off,
				ibv_wc_status_str(status));
			return false;
		}
	}
	return true;
}

int main(int argc, char **argv)
{
	struct ibodp_counters before, after, d;
	struct tool_buf src, dst, back;
	unsigned long long moved = 0, verified = 0, differing = 0;
	char caps_text[256], counters_text[256], mode[128];
	struct ibodp_caps caps;
	struct ibodp_dev *dev;
	struct vt_loopback lb;
	struct ibv_pd *pd;
	long long t0;
	unsigned int r;
	long bad;

	tool_parse(&tool, argc, argv);
	if (size < 4096 || !rounds)
		die(&tool, "--size must be at least 4K and --rounds at least 1");
	if (ibodp_open(tool.dev.dev, &dev))
		die_lib(&tool, "opening the device");
	ibodp_query_caps(dev, &caps);
	ibodp_caps_str(&caps, caps_text, sizeof(caps_text));
	if (!caps.explicit_odp)
		die(&tool, "%s: ODP not supported by this device (%s)", ibodp_name(dev), caps_text);
	if (ibodp_dma_mode(dev, tool.dev.port, tool.dev.gid_index, mode, sizeof(mode)) < 0)
		snprintf(mode, sizeof(mode), "unknown (%s)", ibodp_errmsg());
	pd = ibv_alloc_pd(ibodp_context(dev));
	if (!pd || vt_loopback_create_on(&lb, ibodp_context(dev), &tool.dev, pd))
		die(&tool, "no connected QP pair on %s port %u", ibodp_name(dev), tool.dev.port);

	tool_buf_init(&tool, &src, dev, pd, size, IBODP_EXPLICIT);
	tool_buf_init(&tool, &dst, dev, pd, size, IBODP_EXPLICIT);
	tool_buf_init(&tool, &back, dev, pd, size, IBODP_EXPLICIT);
	if (ibodp_read_counters(dev, tool.dev.port, &before))
		fprintf(stderr, "%s: %s (no counter deltas)\n", tool.name, ibodp_errmsg());
	t0 = vt_now_ns();
	for (r = 1; r <= rounds; r++) {
		vt_fill(src.p, size, r);
		if (!move_all(&lb, IBV_WR_RDMA_WRITE, &src, &dst, r) ||
		    !move_all(&lb, IBV_WR_RDMA_READ, &dst, &back, r))
			return 1;
		moved += 2ULL * size;
		bad = vt_check(back.p, size, r);
		differing += bad >= 0;
		verified += size;
		if (bad >= 0)
			fprintf(stderr, "%s: round %u: byte %ld read back differs\n", tool.name, r, bad);
		/* Take a quarter of each away: the next round faults it again. */
		if (r < rounds && (madvise(dst.p, size / 4, MADV_DONTNEED) ||
				   madvise(back.p + size / 2, size / 4, MADV_DONTNEED)))
			die(&tool, "madvise(MADV_DONTNEED): %s", strerror(errno));
	}
	progress_done(&tool);
	t0 = vt_now_ns() - t0;

	printf("device:        %s, port %u (ODP: %s)\n", ibodp_name(dev), tool.dev.port,
	       caps_text);
	printf("DMA:           %s\n", mode);
	printf("workload:      %u rounds of RDMA WRITE + READ over %zu MiB ODP MRs, a quarter\n"
	       "               of two of them invalidated (MADV_DONTNEED) between rounds\n",
	       rounds, size >> 20);
	printf("bytes moved:   %llu (%.1f MB/s over %.2f s)\n", moved,
	       moved / (t0 / 1e9) / 1e6, t0 / 1e9);
	printf("data verified: %llu bytes, %s\n", verified,
	       differing ? "DIFFERENCES FOUND" : "all as sent");
	if (!ibodp_read_counters(dev, tool.dev.port, &after)) {
		ibodp_counters_delta(&before, &after, &d);
		ibodp_counters_str(&d, counters_text, sizeof(counters_text));
		printf("ODP counters:  %s\n", counters_text);
		printf("               %llu faults brought in %llu pages; %llu pages linked and %llu unlinked in %llu invalidations\n",
		       (unsigned long long)d.page_faults, (unsigned long long)d.pages_faulted,
		       (unsigned long long)d.pages_linked, (unsigned long long)d.pages_unlinked,
		       (unsigned long long)d.invalidations);
	}
	tool_buf_fini(&back);
	tool_buf_fini(&dst);
	tool_buf_fini(&src);
	vt_loopback_destroy(&lb);
	ibv_dealloc_pd(pd);
	ibodp_close(dev);
	return differing ? 1 : 0;
}
