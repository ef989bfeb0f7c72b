// SPDX-License-Identifier: GPL-2.0
#include "odp.h"
#include "ibodp.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

unsigned char *vt_map_anon(size_t size, int prot, int flags)
{
	void *p = mmap(NULL, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	if (p == MAP_FAILED) {
		tap_diag("mmap(%zu bytes): %s", size, strerror(errno));
		return NULL;
	}
	return p;
}

bool vt_odp_buf_init(struct vt_odp_buf *b, struct ibv_pd *pd, size_t size, int flags,
		     int access)
{
	memset(b, 0, sizeof(*b));
	b->size = size;
	b->p = vt_map_anon(size, PROT_READ | PROT_WRITE, flags);
	if (!b->p)
		return false;
	b->mr = ibv_reg_mr(pd, b->p, size, access);
	if (!b->mr) {
		tap_diag("ibv_reg_mr(%zu bytes, %s): %s", size,
			 access & IBV_ACCESS_ON_DEMAND ? "ODP" : "pinned", strerror(errno));
		munmap(b->p, size);
		b->p = NULL;
		return false;
	}
	return true;
}

void vt_odp_buf_fini(struct vt_odp_buf *b)
{
	if (b->mr && ibv_dereg_mr(b->mr))
		tap_diag("ibv_dereg_mr: %s", strerror(errno));
	if (b->p)
		munmap(b->p, b->size);
	memset(b, 0, sizeof(*b));
}

bool vt_move(struct vt_loopback *lb, enum ibv_wr_opcode op, void *src, struct ibv_mr *src_mr,
	     void *dst, struct ibv_mr *dst_mr, size_t len)
{
	enum ibv_wc_status status;

	if (op == IBV_WR_SEND)
		return vt_send_recv(lb, src, src_mr, dst, dst_mr, len) == 0;
	if (vt_rdma(lb, op, src, src_mr, dst, dst_mr, len, &status))
		return false;
	if (status != IBV_WC_SUCCESS) {
		tap_diag("%s of %zu bytes: %s", op == IBV_WR_RDMA_WRITE ? "RDMA WRITE" :
			 "RDMA READ", len, ibv_wc_status_str(status));
		return false;
	}
	return true;
}

bool vt_odp_move(struct vt_loopback *lb, struct vt_odp_buf *src, size_t soff,
		 struct vt_odp_buf *dst, size_t doff, size_t len, enum ibv_wr_opcode op)
{
	return vt_move(lb, op, src->p + soff, src->mr, dst->p + doff, dst->mr, len);
}

int vt_odp_rdma(struct vt_loopback *lb, struct vt_odp_buf *src, size_t soff,
		struct vt_odp_buf *dst, size_t doff, size_t len, enum ibv_wr_opcode op,
		enum ibv_wc_status *status)
{
	return vt_rdma(lb, op, src->p + soff, src->mr, dst->p + doff, dst->mr, len, status);
}

bool vt_odp_same(const struct vt_odp_buf *src, size_t soff, const struct vt_odp_buf *dst,
		 size_t doff, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (dst->p[doff + i] != src->p[soff + i]) {
			tap_diag("byte %zu of %zu differs", i, len);
			return false;
		}
	}
	return true;
}

bool vt_odp_zero_outside(const struct vt_odp_buf *b, size_t off, size_t len)
{
	size_t i;

	for (i = 0; i < b->size; i++) {
		if ((i < off || i >= off + len) && b->p[i]) {
			tap_diag("byte %zu outside the transfer was written", i);
			return false;
		}
	}
	return true;
}

bool vt_odp_round_trip(struct vt_loopback *lb, struct vt_odp_buf *src, struct vt_odp_buf *dst,
		       enum ibv_wr_opcode op)
{
	return vt_odp_move(lb, src, 0, dst, 0, src->size, op) &&
	       vt_odp_same(src, 0, dst, 0, src->size);
}

void vt_odp_delta(const long *before, const long *after, long *delta)
{
	int i;

	for (i = 0; i < VT_ODP_NCOUNTERS; i++)
		delta[i] = after[i] - before[i];
}

long vt_read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

long vt_vmstat(const char *name)
{
	FILE *f = fopen("/proc/vmstat", "r");
	char key[64];
	long v, found = -1;

	if (!f)
		return -1;
	while (found < 0 && fscanf(f, "%63s %ld", key, &v) == 2)
		if (!strcmp(key, name))
			found = v;
	fclose(f);
	return found;
}

bool vt_write_str(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	bool ok;

	if (!f)
		return false;
	ok = fputs(s, f) >= 0;
	return fclose(f) == 0 && ok;
}

bool vt_ksm_start(void *p, size_t len)
{
	if (madvise(p, len, MADV_MERGEABLE)) {
		tap_diag("madvise(MADV_MERGEABLE): %s", strerror(errno));
		return false;
	}
	if (!vt_write_str(VT_KSM "pages_to_scan", "4096") ||
	    !vt_write_str(VT_KSM "sleep_millisecs", "0") || !vt_write_str(VT_KSM "run", "1")) {
		tap_diag("cannot start KSM through " VT_KSM ": %s", strerror(errno));
		return false;
	}
	return true;
}

bool vt_ksm_stop(void *p, size_t len)
{
	/* run = 2 unmerges every KSM page, as MADV_UNMERGEABLE does for the range. */
	if (vt_write_str(VT_KSM "run", "2") && !madvise(p, len, MADV_UNMERGEABLE))
		return true;
	tap_diag("cannot stop KSM: %s", strerror(errno));
	return false;
}

/* Bits of a /proc/self/pagemap entry (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT	(1ULL << 63)
#define PM_PFN_MASK	((1ULL << 55) - 1)

bool vt_page_frames(const void *p, size_t n, long long *frames)
{
	long page = sysconf(_SC_PAGESIZE);
	int fd = open("/proc/self/pagemap", O_RDONLY);
	off_t at = (off_t)((uintptr_t)p / page * sizeof(uint64_t));
	uint64_t entry[512];
	size_t i, k, chunk;
	ssize_t got;

	if (fd < 0) {
		tap_diag("open /proc/self/pagemap: %s", strerror(errno));
		return false;
	}
	/* A few preads for a whole range, not an open and a read per page. */
	for (i = 0; i < n; i += chunk) {
		chunk = n - i < 512 ? n - i : 512;
		got = pread(fd, entry, chunk * sizeof(entry[0]),
			    at + (off_t)(i * sizeof(entry[0])));
		if (got != (ssize_t)(chunk * sizeof(entry[0]))) {
			tap_diag("reading /proc/self/pagemap: %s", got < 0 ? strerror(errno) : "short");
			close(fd);
			return false;
		}
		for (k = 0; k < chunk; k++) {
			if (!(entry[k] & PM_PRESENT)) {
				frames[i + k] = 0;
			} else if (!(entry[k] & PM_PFN_MASK)) {
				tap_diag("/proc/self/pagemap shows no page frames (not root?)");
				close(fd);
				return false;
			} else {
				frames[i + k] = (long long)(entry[k] & PM_PFN_MASK);
			}
		}
	}
	close(fd);
	return true;
}

long long vt_page_frame(const void *p)
{
	long long frame;

	return vt_page_frames(p, 1, &frame) ? frame : -1;
}

bool vt_thp_split(void *p, size_t len)
{
	char range[96];

	snprintf(range, sizeof(range), "%d,%#lx,%#lx", (int)getpid(), (unsigned long)p,
		 (unsigned long)p + len);
	if (vt_write_str(VT_SPLIT_HUGE_PAGES, range))
		return true;
	tap_diag("writing %s to " VT_SPLIT_HUGE_PAGES ": %s", range, strerror(errno));
	return false;
}

bool vt_thp_map(struct vt_thp_range *r)
{
	r->raw = vt_map_anon(2 * VT_THP_SIZE, PROT_READ | PROT_WRITE, 0);
	if (!r->raw)
		return false;
	r->p = (unsigned char *)(((uintptr_t)r->raw + VT_THP_SIZE - 1) & ~(VT_THP_SIZE - 1));
	if (madvise(r->p, VT_THP_SIZE, MADV_HUGEPAGE)) {
		tap_diag("madvise(MADV_HUGEPAGE): %s", strerror(errno));
		munmap(r->raw, 2 * VT_THP_SIZE);
		return false;
	}
	return true;
}

void vt_thp_unmap(struct vt_thp_range *r)
{
	munmap(r->raw, 2 * VT_THP_SIZE);
}

long vt_anon_huge_kb(const void *p)
{
	unsigned long start, end, addr = (uintptr_t)p;
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[256];
	bool in = false;
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
			if (in)
				break;
			in = addr >= start && addr < end;
		} else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) {
			break;
		}
	}
	fclose(f);
	return kb;
}

long vt_hw_counter(struct ibv_context *ctx, uint8_t port, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/hw_counters/%s",
		 ibv_get_device_name(ctx->device), port, name);
	return vt_read_long(path);
}

void vt_hw_counters_settle(void)
{
	/* The RDMA core serves hw_counters from a cache that lives 10 ms. */
	usleep(20000);
}

/* libibodp reads them: one list of their names, one wait for their cache. */
bool vt_odp_counters(struct ibv_context *ctx, uint8_t port, long *v)
{
	struct ibodp_counters c;
	struct ibodp_dev *dev;
	int ret;

	if (ibodp_wrap(ctx, &dev))
		return false;
	ret = ibodp_read_counters(dev, port, &c);
	ibodp_close(dev);
	if (ret)
		return false;
	v[VT_ODP_PAGE_FAULTS] = (long)c.page_faults;
	v[VT_ODP_PAGES_FAULTED] = (long)c.pages_faulted;
	v[VT_ODP_PAGES_LINKED] = (long)c.pages_linked;
	v[VT_ODP_PAGES_UNLINKED] = (long)c.pages_unlinked;
	v[VT_ODP_INVALIDATIONS] = (long)c.invalidations;
	v[VT_ODP_PREFETCH_REQUESTS] = (long)c.prefetch_requests;
	v[VT_ODP_FAULT_ERRORS] = (long)c.fault_errors;
	return true;
}

bool vt_odp_snapshot(struct ibv_context *ctx, uint8_t port, long *v)
{
	if (vt_odp_counters(ctx, port, v))
		return true;
	tap_diag("cannot read the ODP counters of %s port %u", ibv_get_device_name(ctx->device),
		 port);
	return false;
}

struct ibv_context *vt_odp_start(int argc, char **argv, struct vt_options *opt, int tests,
				 unsigned int needs, const char *what,
				 struct ibv_device_attr_ex *attr)
{
	const char *missing = NULL;
	long c[VT_ODP_NCOUNTERS];
	struct ibv_context *ctx;
	int i;

	vt_parse_options(argc, argv, opt);
	tap_plan(tests);
	ctx = vt_open_device(opt->dev);
	if (!ctx)
		tap_bail("no RDMA device");
	if (ibv_query_device_ex(ctx, NULL, attr))
		tap_bail("ibv_query_device_ex: %s", strerror(errno));
	if ((needs & VT_NEED_ODP) && !(attr->odp_caps.general_caps & IBV_ODP_SUPPORT))
		missing = "ODP not supported by this device";
	else if ((needs & VT_NEED_IMPLICIT) &&
		 !(attr->odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT))
		missing = "implicit ODP not supported by this device";
	else if ((needs & VT_NEED_COUNTERS) && !vt_odp_counters(ctx, opt->port, c))
		missing = "the device has no ODP counters";
	if (!missing)
		return ctx;
	for (i = 0; i < tests; i++)
		tap_skip(missing, "%s check %d", what, i + 1);
	ibv_close_device(ctx);
	exit(tap_done());
}

/* Whether the device's DMA goes through an IOMMU that translates: libibodp's answer. */
static bool vt_behind_iommu(struct ibv_context *ctx, const struct vt_options *opt)
{
	struct ibodp_dev *dev;
	char mode[128] = "";

	if (ibodp_wrap(ctx, &dev))
		return false;
	if (ibodp_dma_mode(dev, opt->port, opt->gid_index, mode, sizeof(mode)) < 0)
		mode[0] = 0;
	ibodp_close(dev);
	return !strncmp(mode, "IOMMU strict", 12) || !strncmp(mode, "IOMMU lazy", 10);
}

static const char *const vt_odp_dma_names[] = {
	[VT_DMA_IOVA] = "iova", [VT_DMA_DIRECT] = "direct", [VT_DMA_VIRTUAL] = "virtual",
};

static enum vt_odp_dma vt_odp_dma_guess(struct ibv_context *ctx, const struct vt_options *opt)
{
	char cmdline[4096] = "", virt = 0;
	FILE *f;

	f = fopen(VT_RXE_PARAMS "odp_virt_dma", "r");	/* a bool parameter: Y or N */
	if (f) {
		virt = (char)fgetc(f);
		fclose(f);
	}
	if (virt == 'Y')
		return VT_DMA_VIRTUAL;
	if (vt_behind_iommu(ctx, opt))
		return VT_DMA_IOVA;
	f = fopen("/proc/cmdline", "r");
	if (f) {
		if (!fgets(cmdline, sizeof(cmdline), f))
			cmdline[0] = 0;
		fclose(f);
	}
	/* rxe refuses to mirror pages for a device that would bounce them. */
	return strstr(cmdline, "swiotlb=force") ? VT_DMA_VIRTUAL : VT_DMA_DIRECT;
}

enum vt_odp_dma vt_odp_dma(struct ibv_context *ctx, const struct vt_options *opt)
{
	static int mode = -1;
	const char *want = getenv("VT_ODP_DMA");
	size_t i;

	if (mode >= 0)
		return mode;
	if (want && *want) {
		for (i = 0; i < sizeof(vt_odp_dma_names) / sizeof(vt_odp_dma_names[0]); i++)
			if (!strcmp(want, vt_odp_dma_names[i]))
				mode = (int)i;
		if (mode < 0)
			tap_bail("VT_ODP_DMA=%s: want iova, direct or virtual", want);
		return mode;
	}
	mode = vt_odp_dma_guess(ctx, opt);
	tap_diag("ODP DMA path %s (worked out here; the harness sets VT_ODP_DMA from the profile)",
		 vt_odp_dma_names[mode]);
	return mode;
}

long vt_odp_linked(struct ibv_context *ctx, const struct vt_options *opt, long pages)
{
	return vt_odp_dma(ctx, opt) == VT_DMA_VIRTUAL ? 0 : pages;
}

/* The libibodp device that advises for this program, opened on first use. */
static struct ibodp_dev *advise_dev;

static void close_advise_dev(void)
{
	ibodp_close(advise_dev);
}

int vt_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		 struct ibv_sge *sg_list, uint32_t num_sge, bool *direct)
{
	if (!advise_dev) {
		if (ibodp_open(ibv_get_device_name(pd->context->device), &advise_dev)) {
			tap_diag("%s", ibodp_errmsg());
			return ENODEV;
		}
		atexit(close_advise_dev);
	}
	return -ibodp_advise_mr(advise_dev, pd, advice, flags, sg_list, num_sge, direct);
}
