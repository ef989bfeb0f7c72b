/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ODP helpers shared by the ODP test programs: untouched anonymous buffers registered
 * as ODP MRs, the driver's ODP counters, whether the RDMA device's network device sits
 * behind an IOMMU, and ibv_advise_mr() that reaches the kernel's ADVISE_MR method
 * directly when the provider does not pass it on (Debian's rxe provider), through
 * libibodp's ibodp_advise_mr().
 */
#ifndef VT_ODP_H
#define VT_ODP_H

#include "verbs.h"

#define VT_ODP_ACCESS (IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE | \
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		       IBV_ACCESS_REMOTE_ATOMIC)

/* Access of the pinned buffers the tests move data to and from. */
#define VT_PINNED_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			  IBV_ACCESS_REMOTE_READ)

/* What an ODP test program needs of the device (vt_odp_start()). */
enum vt_odp_needs {
	VT_NEED_ODP		= 1 << 0,
	VT_NEED_IMPLICIT	= 1 << 1,
	VT_NEED_COUNTERS	= 1 << 2,
};

/*
 * The start of an ODP test program: parse the options into @opt, plan @tests checks,
 * open the device and query it into @attr. When the device lacks what @needs, every
 * check is skipped with the reason (named "@what check N") and the program exits.
 */
struct ibv_context *vt_odp_start(int argc, char **argv, struct vt_options *opt, int tests,
				 unsigned int needs, const char *what,
				 struct ibv_device_attr_ex *attr);

/* An anonymous buffer the CPU has not touched, registered as an ODP MR (or pinned). */
struct vt_odp_buf {
	unsigned char *p;
	size_t size;
	struct ibv_mr *mr;
};

/* mmap() of size bytes, anonymous and private plus flags; NULL (reported) on failure. */
unsigned char *vt_map_anon(size_t size, int prot, int flags);
bool vt_odp_buf_init(struct vt_odp_buf *b, struct ibv_pd *pd, size_t size, int flags,
		     int access);
void vt_odp_buf_fini(struct vt_odp_buf *b);

/* The ODP hardware counters of rxe (struct ibodp_counters's), as an array. */
enum vt_odp_counter {
	VT_ODP_PAGE_FAULTS,
	VT_ODP_PAGES_FAULTED,
	VT_ODP_PAGES_LINKED,
	VT_ODP_PAGES_UNLINKED,
	VT_ODP_INVALIDATIONS,
	VT_ODP_PREFETCH_REQUESTS,
	VT_ODP_FAULT_ERRORS,
	VT_ODP_NCOUNTERS
};

/* One hw_counters value of @port, or -1; maybe up to the counters' cache lifespan old. */
long vt_hw_counter(struct ibv_context *ctx, uint8_t port, const char *name);
/* Waits out the counters' cache, so that the next read sees everything counted so far. */
void vt_hw_counters_settle(void);
/* Read every ODP counter of the device's port; false when it has none. */
bool vt_odp_counters(struct ibv_context *ctx, uint8_t port, long *v);
/* The same, saying so when they cannot be read: for a check that needs them. */
bool vt_odp_snapshot(struct ibv_context *ctx, uint8_t port, long *v);

/* How rxe reaches the pages of an ODP MR: what its "pages linked" counter counts. */
enum vt_odp_dma {
	VT_DMA_IOVA,	/* an IOMMU DMA domain: each page linked into the MR's IOVA */
	VT_DMA_DIRECT,	/* no IOMMU: each page mapped by dma-direct, counted as linked */
	VT_DMA_VIRTUAL,	/* the device would bounce, or rxe.odp_virt_dma=1: none linked */
};

/*
 * The DMA path of the device's ODP MRs. Under the harness the VM profile says which
 * one it must be (VT_ODP_DMA=iova|direct|virtual in the environment), so that a kernel
 * taking another path fails the counter checks; run by hand, it is worked out from
 * sysfs and the kernel command line (and said once as a diagnostic).
 */
enum vt_odp_dma vt_odp_dma(struct ibv_context *ctx, const struct vt_options *opt);
/* The exact "pages linked" delta for @pages pages newly faulted on that path. */
long vt_odp_linked(struct ibv_context *ctx, const struct vt_options *opt, long pages);

/*
 * Move len bytes from src to dst with op (IBV_WR_SEND for SEND/RECV, RDMA WRITE or
 * READ) and wait for it: true when every completion succeeded, else false (reported).
 */
bool vt_move(struct vt_loopback *lb, enum ibv_wr_opcode op, void *src, struct ibv_mr *src_mr,
	     void *dst, struct ibv_mr *dst_mr, size_t len);

/*
 * The same between parts of two buffers: len bytes from src->p + soff to dst->p + doff
 * (src on qp[0]'s side). vt_odp_rdma() gives the completion status and says nothing.
 */
bool vt_odp_move(struct vt_loopback *lb, struct vt_odp_buf *src, size_t soff,
		 struct vt_odp_buf *dst, size_t doff, size_t len, enum ibv_wr_opcode op);
int vt_odp_rdma(struct vt_loopback *lb, struct vt_odp_buf *src, size_t soff,
		struct vt_odp_buf *dst, size_t doff, size_t len, enum ibv_wr_opcode op,
		enum ibv_wc_status *status);
/* dst[doff, +len) == src[soff, +len); the first byte that differs is said. */
bool vt_odp_same(const struct vt_odp_buf *src, size_t soff, const struct vt_odp_buf *dst,
		 size_t doff, size_t len);
/* Every byte of b outside [off, off + len) is zero (never written); else said. */
bool vt_odp_zero_outside(const struct vt_odp_buf *b, size_t off, size_t len);
/* Move the whole of src to dst with op and check every byte. */
bool vt_odp_round_trip(struct vt_loopback *lb, struct vt_odp_buf *src, struct vt_odp_buf *dst,
		       enum ibv_wr_opcode op);

/* Counter deltas: after[i] - before[i] for every ODP counter. */
void vt_odp_delta(const long *before, const long *after, long *delta);

/* rxe's module parameters (built in or loaded). */
#define VT_RXE_PARAMS "/sys/module/rdma_rxe/parameters/"

/* A 2 MiB aligned range inside a 4 MiB anonymous mapping, advised to be a THP. */
#define VT_THP_SIZE (2UL << 20)
struct vt_thp_range {
	unsigned char *raw, *p;
};

/* Map it (MADV_HUGEPAGE); false, said as a diagnostic, when that fails. */
bool vt_thp_map(struct vt_thp_range *r);
void vt_thp_unmap(struct vt_thp_range *r);

/* AnonHugePages (kB) of this process's mapping that holds p, -1 when it cannot be read. */
long vt_anon_huge_kb(const void *p);

/*
 * KSM (CONFIG_KSM): vt_ksm_start() makes [p, p + len) mergeable and starts ksmd
 * scanning without pause; vt_ksm_stop() unmerges it and stops ksmd. False (said) on
 * failure.
 */
#define VT_KSM "/sys/kernel/mm/ksm/"
#define VT_NO_KSM "no " VT_KSM " (CONFIG_KSM)"
bool vt_ksm_start(void *p, size_t len);
bool vt_ksm_stop(void *p, size_t len);

/*
 * The page frame that backs the page at p (/proc/self/pagemap, root only): pages
 * merged by KSM share one. 0 when none is present, -1 (said) when it cannot be read.
 */
long long vt_page_frame(const void *p);
/* The same for the @n pages from @p, into @frames; false (said) when they cannot be read. */
bool vt_page_frames(const void *p, size_t n, long long *frames);

/* Split the THPs of [p, p + len) (debugfs split_huge_pages); false (said) on failure. */
#define VT_SPLIT_HUGE_PAGES "/sys/kernel/debug/split_huge_pages"
bool vt_thp_split(void *p, size_t len);

/* A number read from a sysfs file, -1 when it cannot be read. */
long vt_read_long(const char *path);
/* The counter NAME of /proc/vmstat, -1 when the kernel has none. */
long vt_vmstat(const char *name);
bool vt_write_str(const char *path, const char *s);

/*
 * ibv_advise_mr(); when the provider answers EOPNOTSUPP, the kernel's ADVISE_MR
 * method directly (libibodp). Returns 0 or an errno value; *direct (may be NULL)
 * tells which way it went.
 */
int vt_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		 struct ibv_sge *sg_list, uint32_t num_sge, bool *direct);

#endif
