// SPDX-License-Identifier: GPL-2.0
/*
 * ODP against pinned memory on one device, in one run, RC loopback:
 *  - first touch: register a buffer and RDMA WRITE into all of it once, in pages per
 *    second (ODP faults and links every page during the WRITE; pinned pins them all
 *    at registration);
 *  - steady state: the same WRITE repeated on the now-present pages, in MB/s;
 *  - kernel memory per registered ODP page: the growth of VmallocUsed when a 16 GiB ODP
 *    MR is registered, divided by its pages (its per-page lists live there).
 * Prints CSV: metric,memory,value,unit
 */
#include "verbs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define BUF_PAGES	1024
#define STEADY_ROUNDS	20
/* Large enough that the PFN list (8 bytes a page: 32 MiB) comes from vmalloc. */
#define MEM_MR_SIZE	(16UL << 30)

static double now_s(void)
{
	return vt_now_ns() / 1e9;
}

static long vmalloc_used_kb(void)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmallocUsed: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static int write_all(struct vt_loopback *lb, struct ibv_mr *src, struct ibv_mr *dst,
		     size_t len)
{
	struct ibv_sge sge = { (uintptr_t)src->addr, (uint32_t)len, src->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE };

	wr.wr.rdma.remote_addr = (uintptr_t)dst->addr;
	wr.wr.rdma.rkey = dst->rkey;
	return vt_post_send_wait(lb, lb->qp[0], &wr);
}

/* First touch and steady state for one kind of memory; 0 or -1. */
static int measure(struct vt_loopback *lb, struct ibv_mr *src, size_t size, int odp)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     (odp ? IBV_ACCESS_ON_DEMAND : 0);
	const char *kind = odp ? "odp" : "pinned";
	struct ibv_mr *dst;
	double t0, t1, t2;
	void *p;
	int i;

	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "mmap(%zu): %s\n", size, strerror(errno));
		return -1;
	}
	t0 = now_s();
	dst = ibv_reg_mr(lb->pd, p, size, access);
	if (!dst) {
		fprintf(stderr, "ibv_reg_mr(%s, %zu bytes): %s\n", kind, size, strerror(errno));
		munmap(p, size);
		return -1;
	}
	if (write_all(lb, src, dst, size))
		goto err;
	t1 = now_s();
	for (i = 0; i < STEADY_ROUNDS; i++)
		if (write_all(lb, src, dst, size))
			goto err;
	t2 = now_s();
	printf("first_touch,%s,%.0f,pages/s\n", kind, BUF_PAGES / (t1 - t0));
	printf("steady_write,%s,%.1f,MB/s\n", kind, STEADY_ROUNDS * size / (t2 - t1) / 1e6);
	ibv_dereg_mr(dst);
	munmap(p, size);
	return 0;
err:
	ibv_dereg_mr(dst);
	munmap(p, size);
	return -1;
}

/* VmallocUsed growth per page of a registered, untouched 16 GiB ODP MR. */
static int memory_per_page(struct vt_loopback *lb)
{
	long before, after;
	struct ibv_mr *mr;
	void *p;

	p = mmap(NULL, MEM_MR_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "mmap(16 GiB): %s\n", strerror(errno));
		return -1;
	}
	before = vmalloc_used_kb();
	mr = ibv_reg_mr(lb->pd, p, MEM_MR_SIZE, IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE);
	after = vmalloc_used_kb();
	if (!mr || before < 0 || after < 0) {
		fprintf(stderr, "ibv_reg_mr(16 GiB ODP): %s\n", mr ? "no VmallocUsed" : strerror(errno));
		if (mr)
			ibv_dereg_mr(mr);
		munmap(p, MEM_MR_SIZE);
		return -1;
	}
	printf("kernel_memory,odp,%.2f,bytes/page\n",
	       (after - before) * 1024.0 / (MEM_MR_SIZE / sysconf(_SC_PAGESIZE)));
	ibv_dereg_mr(mr);
	munmap(p, MEM_MR_SIZE);
	return 0;
}

int main(int argc, char **argv)
{
	size_t size = BUF_PAGES * sysconf(_SC_PAGESIZE);
	struct ibv_device_attr_ex attr;
	struct vt_options opt;
	struct vt_loopback lb;
	struct ibv_context *ctx;
	struct ibv_mr *src;
	void *buf;
	int ret = 1;

	vt_parse_options(argc, argv, &opt);
	ctx = vt_open_device(opt.dev);
	if (!ctx)
		return 1;
	if (ibv_query_device_ex(ctx, NULL, &attr) ||
	    !(attr.odp_caps.general_caps & IBV_ODP_SUPPORT)) {
		fprintf(stderr, "ODP not supported by %s\n", ibv_get_device_name(ctx->device));
		ibv_close_device(ctx);
		return 1;
	}
	if (vt_loopback_create(&lb, ctx, &opt)) {
		ibv_close_device(ctx);
		return 1;
	}
	if (posix_memalign(&buf, sysconf(_SC_PAGESIZE), size)) {
		fprintf(stderr, "posix_memalign(%zu): out of memory\n", size);
		goto out;
	}
	vt_fill(buf, size, 1);
	src = ibv_reg_mr(lb.pd, buf, size, IBV_ACCESS_LOCAL_WRITE);
	if (!src) {
		fprintf(stderr, "ibv_reg_mr(source): %s\n", strerror(errno));
		free(buf);
		goto out;
	}
	printf("metric,memory,value,unit\n");
	if (!measure(&lb, src, size, 0) && !measure(&lb, src, size, 1) && !memory_per_page(&lb))
		ret = 0;
	ibv_dereg_mr(src);
	free(buf);
out:
	vt_loopback_destroy(&lb);
	ibv_close_device(ctx);
	return ret;
}
