/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libibodp: On-Demand Paging (ODP) memory regions for libibverbs applications.
 *
 * ODP MRs pin nothing: the device faults pages in when it first touches them and
 * after every invalidation (munmap, MADV_DONTNEED, mprotect, fork...). Providers
 * differ in what they support, and in how much of it they pass on to the kernel.
 * This library answers the questions an application has: which device can do ODP
 * and for which operations, how to register memory with an explicit policy when it
 * cannot, how to prefetch (also where the provider has no ibv_advise_mr(), by the
 * kernel's ADVISE_MR method directly), and what ODP did (the driver's counters).
 *
 * Errors: every function that can fail returns 0 (or a count) on success and a
 * negative errno value on failure, and then also sets errno to that value (positive,
 * as libibverbs' functions return theirs); ibodp_errmsg() tells what failed and what
 * to do about it, for the calling thread. Each prototype below says "0 or -errno" (or
 * what else it returns).
 *
 * Growth: the structs the caller allocates (struct ibodp_caps, struct ibodp_counters)
 * gain fields at their end in later versions. The names that fill or read them
 * (ibodp_query_caps(), ibodp_read_counters(), ...) are macros that pass the size of
 * the caller's struct to the library's *_sized() functions (since 1.2): a program
 * built against an older header gets exactly the fields it knows, and one built
 * against a newer header than the library's gets 0 in the fields the library does
 * not know. Programs built against 1.0 or 1.1 keep calling the 1.0 functions, which
 * fill the 1.0 layout.
 *
 * Threads: all functions may be called from several threads at once, on the same
 * device too, except that an MR must not be deregistered while another thread
 * still uses it, and ibodp_close() must come last.
 */
#ifndef IBODP_H
#define IBODP_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The version of this header; the library's soname stays libibodp.so.1. */
#define IBODP_VERSION_MAJOR	1
#define IBODP_VERSION_MINOR	3
#define IBODP_VERSION_PATCH	0

#ifdef __cplusplus
extern "C" {
#endif

/* The message of the calling thread's last failure ("" if none yet). Never fails. */
const char *ibodp_errmsg(void);

/* An open RDMA device. */
struct ibodp_dev;

/*
 * Open the device called @name, or with @name NULL the first device that supports
 * ODP. -ENODEV when there is no such device (the message lists the devices there
 * are). Setting IBODP_NO_ODP=1 in the environment makes every device look as if it
 * had no ODP, to try an application's fallback path. 0 or -errno.
 */
int ibodp_open(const char *name, struct ibodp_dev **dev);

/* ibodp_open_ex() flags. */
enum ibodp_open_flags {
	/*
	 * With @name NULL: the first device with ODP if there is one, else the first
	 * device at all (ibodp_errmsg() then says so), for applications whose policy is
	 * ODP where possible and pinned MRs elsewhere (IBODP_FALLBACK_PINNED).
	 */
	IBODP_OPEN_ANY		= 1 << 0,
};

/* ibodp_open() with @flags (enum ibodp_open_flags). 0 or -errno. Since 1.1. */
int ibodp_open_ex(const char *name, unsigned int flags, struct ibodp_dev **dev);
/*
 * The same on a context the application opened itself (an rdma_cm id's
 * cm_id->verbs, say): ibodp_close() then frees the library's part and leaves the
 * context open, to be closed by its owner after ibodp_close(). 0 or -errno. Since 1.1.
 */
int ibodp_wrap(struct ibv_context *ctx, struct ibodp_dev **dev);
/* Close what ibodp_open*() opened (NULL: nothing). Never fails. */
void ibodp_close(struct ibodp_dev *dev);
/* The device's verbs context and name. Never fail. */
struct ibv_context *ibodp_context(const struct ibodp_dev *dev);
const char *ibodp_name(const struct ibodp_dev *dev);

/* Operations a transport supports on ODP MRs (the kernel's bits). */
enum ibodp_op {
	IBODP_OP_SEND		= 1 << 0,
	IBODP_OP_RECV		= 1 << 1,
	IBODP_OP_WRITE		= 1 << 2,
	IBODP_OP_READ		= 1 << 3,
	IBODP_OP_ATOMIC		= 1 << 4,
	IBODP_OP_SRQ_RECV	= 1 << 5,
	IBODP_OP_FLUSH		= 1 << 6,
	IBODP_OP_ATOMIC_WRITE	= 1 << 7,
};

/* Grows at its end (see "Growth" above). */
struct ibodp_caps {
	bool explicit_odp;	/* ODP MRs over a given range */
	bool implicit_odp;	/* one ODP MR for the whole address space */
	uint32_t rc, uc, ud, xrc;	/* enum ibodp_op bits per transport */
};

/* What @dev can do with ODP MRs, into @caps. 0 or -errno. */
#define ibodp_query_caps(dev, caps) ibodp_query_caps_sized(dev, caps, sizeof(*(caps)))
/*
 * "explicit implicit; RC: SEND RECV WRITE ...; UD: ..." or "no ODP", into @buf
 * (always terminated when @size > 0). Returns the length of the whole string, as
 * snprintf() does, or -errno.
 */
#define ibodp_caps_str(caps, buf, size) \
	ibodp_caps_str_sized(caps, sizeof(*(caps)), buf, size)

/* The functions behind those macros; @caps_size is sizeof(*@caps). Since 1.2. */
int ibodp_query_caps_sized(const struct ibodp_dev *dev, struct ibodp_caps *caps,
			   size_t caps_size);
int ibodp_caps_str_sized(const struct ibodp_caps *caps, size_t caps_size, char *buf,
			 size_t size);

/* What to register. */
enum ibodp_kind {
	IBODP_EXPLICIT,		/* an ODP MR over [addr, addr + length) */
	IBODP_IMPLICIT,		/* an ODP MR over everything (addr NULL, length SIZE_MAX) */
	IBODP_PINNED,		/* an ordinary MR: pages pinned at registration */
};

/* What to do when the device cannot register the kind asked for. */
enum ibodp_fallback {
	IBODP_FAIL,		/* fail with -EOPNOTSUPP */
	IBODP_FALLBACK_PINNED,	/* register the range pinned instead (not for implicit) */
};

/* A registration: read its fields, never write them (the library relies on them). */
struct ibodp_mr {
	struct ibv_mr *const mr;	/* the verbs MR: lkey, rkey */
	const enum ibodp_kind kind;	/* what was registered */
	const bool fell_back;		/* pinned, although ODP was asked for */
	struct ibodp_dev *const dev;
	void *const addr;
	const size_t length;
};

/*
 * Register memory of @pd, a PD of @dev's device from any of its contexts (the one of
 * ibodp_context(dev), or the application's own); ibodp_advise_mr() has the same rule.
 * @access: IBV_ACCESS_* flags without IBV_ACCESS_ON_DEMAND
 * (the kind decides). With IBODP_FALLBACK_PINNED an MR that cannot be ODP is pinned
 * and (*mr)->fell_back says so; the message says why. 0 or -errno.
 */
int ibodp_reg_mr(struct ibodp_dev *dev, struct ibv_pd *pd, void *addr, size_t length,
		 int access, enum ibodp_kind kind, enum ibodp_fallback fallback,
		 struct ibodp_mr **mr);
/* Deregister and free @mr (NULL: nothing); on failure @mr stays valid. 0 or -errno. */
int ibodp_dereg_mr(struct ibodp_mr *mr);

/* ibodp_prefetch() flags. */
enum ibodp_prefetch_flags {
	IBODP_PREFETCH_WRITE	= 1 << 0,	/* fault for writing */
	IBODP_PREFETCH_NO_FAULT	= 1 << 1,	/* only map what is present */
	IBODP_PREFETCH_SYNC	= 1 << 2,	/* done when the call returns */
};

/*
 * Ask the device to fault (or with IBODP_PREFETCH_NO_FAULT, map what is present
 * of) [addr, addr + length) of @mr ahead of use. Asynchronous unless
 * IBODP_PREFETCH_SYNC. A pinned MR needs nothing: 0. When the provider answers
 * EOPNOTSUPP, the request goes to the kernel's ADVISE_MR method directly; @direct
 * (may be NULL) tells whether it did. 0 or -errno.
 */
int ibodp_prefetch(struct ibodp_mr *mr, void *addr, size_t length, unsigned int flags,
		   bool *direct);

/*
 * ibv_advise_mr() on @pd, a PD of @dev's device (of any context): when the provider
 * answers EOPNOTSUPP, the kernel's ADVISE_MR method through the verbs ioctl on the PD's
 * context, *@direct (may be NULL) saying so. The tool for advice ibodp_prefetch() does
 * not cover, or for MRs the library did not register. Any number of SGEs: a list
 * longer than one kernel request carries (4095) goes as several requests, and an
 * SGE whose end wraps around the address space is refused (-EINVAL). 0 or -errno.
 */
int ibodp_advise_mr(struct ibodp_dev *dev, struct ibv_pd *pd,
		    enum ibv_advise_mr_advice advice, uint32_t flags, struct ibv_sge *sge,
		    uint32_t num_sge, bool *direct);

/*
 * The driver's ODP counters of one port (rdma hw_counters: odp_*). Grows at its end
 * (see "Growth" above).
 */
struct ibodp_counters {
	uint64_t page_faults;		/* faults the device took */
	uint64_t pages_faulted;		/* pages those faults brought in */
	uint64_t pages_linked;		/* pages mapped for the device's DMA */
	uint64_t pages_unlinked;	/* pages given up on invalidation */
	uint64_t invalidations;		/* invalidations that took pages away */
	uint64_t prefetch_requests;	/* ibv_advise_mr() prefetch requests */
	uint64_t fault_errors;		/* faults that failed */
	/* Since 1.2; 0 where the driver does not count them. */
	uint64_t fault_retries;		/* faults that did not settle, tried again */
};

/*
 * Read all of @port's ODP counters at once; @counters is written only on success.
 * -EOPNOTSUPP when the driver has no ODP counters. The kernel serves them from a
 * cache that lives the port's hw_counters/lifespan (10 ms by default): each call
 * first waits that long plus a jiffy, so that it sees all the work done before it.
 * 0 or -errno.
 */
#define ibodp_read_counters(dev, port, counters) \
	ibodp_read_counters_sized(dev, port, counters, sizeof(*(counters)))
/* @delta = @after - @before, counter by counter (@delta may be either). Never fails. */
#define ibodp_counters_delta(before, after, delta) \
	ibodp_counters_delta_sized(before, after, delta, sizeof(*(delta)))
/* "page_faults 3  pages_faulted 16 ..." as ibodp_caps_str() does (its returns). */
#define ibodp_counters_str(counters, buf, size) \
	ibodp_counters_str_sized(counters, sizeof(*(counters)), buf, size)

/* The functions behind those macros; the sizes are the structs'. Since 1.2. */
int ibodp_read_counters_sized(const struct ibodp_dev *dev, uint8_t port,
			      struct ibodp_counters *counters, size_t counters_size);
void ibodp_counters_delta_sized(const struct ibodp_counters *before,
				const struct ibodp_counters *after,
				struct ibodp_counters *delta, size_t counters_size);
int ibodp_counters_str_sized(const struct ibodp_counters *counters, size_t counters_size,
			     char *buf, size_t size);

/*
 * The ODP counters of one MR, as "rdma statistic show mr" shows them (the kernel's
 * restrack MR statistics), counted in pages like mlx5's. Grows at its end (see
 * "Growth" above). Since 1.3.
 */
struct ibodp_mr_counters {
	uint64_t page_faults;		/* pages the MR's accesses made present */
	uint64_t page_invalidations;	/* pages invalidations of its ranges took away */
	uint64_t page_prefetch;		/* pages prefetch made present */
};

/*
 * Read @mr's counters, all at once and current (no cache); @counters is written only
 * on success. A pinned MR (IBODP_PINNED, or fell_back) pages never: all 0. The kernel
 * finds an MR by its lkey, which it shows only to CAP_NET_ADMIN; without it the MR is
 * this process's MR of @mr's length on the device, and -EPERM when it has several.
 * -EOPNOTSUPP when the driver counts nothing per MR. 0 or -errno. Since 1.3.
 */
#define ibodp_mr_read_counters(mr, counters) \
	ibodp_mr_read_counters_sized(mr, counters, sizeof(*(counters)))
int ibodp_mr_read_counters_sized(const struct ibodp_mr *mr, struct ibodp_mr_counters *counters,
				 size_t counters_size);

/*
 * The functions of 1.0 behind the macros' names, which programs built against 1.0 and
 * 1.1 call: they read and write the 1.0 layout of the structs (7 counters). Reached
 * from newer programs only with the name in parentheses.
 */
int (ibodp_query_caps)(const struct ibodp_dev *dev, struct ibodp_caps *caps);
int (ibodp_caps_str)(const struct ibodp_caps *caps, char *buf, size_t size);
int (ibodp_read_counters)(const struct ibodp_dev *dev, uint8_t port,
			  struct ibodp_counters *counters);
void (ibodp_counters_delta)(const struct ibodp_counters *before,
			    const struct ibodp_counters *after,
			    struct ibodp_counters *delta);
int (ibodp_counters_str)(const struct ibodp_counters *counters, char *buf, size_t size);

/*
 * How the device's DMA reaches memory, for reports: "IOMMU strict (DMA, dmar0)",
 * "IOMMU lazy (DMA-FQ, ...)", "IOMMU passthrough", "no IOMMU" or "no DMA device
 * (virtual)", from the network device under GID @gid_index of @port. 0 or -errno.
 */
int ibodp_dma_mode(const struct ibodp_dev *dev, uint8_t port, int gid_index, char *buf,
		   size_t size);

#ifdef __cplusplus
}
#endif

#endif /* IBODP_H */
