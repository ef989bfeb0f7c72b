// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Registering memory with a policy, and prefetching it. */
#include "internal.h"

#include <errno.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

static const char *const kind_names[] = { "explicit ODP", "implicit ODP", "pinned" };

/* Whether the device can register @kind as ODP; if not, why (for the message). */
static const char *odp_missing(const struct ibodp_dev *dev, enum ibodp_kind kind)
{
	struct ibodp_caps caps;

	ibodp_query_caps(dev, &caps);
	if (!caps.explicit_odp)
		return dev->no_odp ? "IBODP_NO_ODP is set" : "ODP not supported by this device";
	if (kind == IBODP_IMPLICIT && !caps.implicit_odp)
		return "implicit ODP not supported by this device";
	return NULL;
}

int ibodp_reg_mr(struct ibodp_dev *dev, struct ibv_pd *pd, void *addr, size_t length,
		 int access, enum ibodp_kind kind, enum ibodp_fallback fallback,
		 struct ibodp_mr **mrp)
{
	enum ibodp_kind got = kind;
	const char *missing = NULL;
	struct ibodp_mr *mr;
	struct ibv_mr *vmr;
	int err;

	if (!mrp)
		return ibodp_fail(EINVAL, "ibodp_reg_mr: no place for the MR (mr is NULL)");
	*mrp = NULL;
	if (!dev || !pd)
		return ibodp_fail(EINVAL, "ibodp_reg_mr: %s is NULL", dev ? "pd" : "dev");
	if ((unsigned int)kind > IBODP_PINNED)
		return ibodp_fail(EINVAL, "ibodp_reg_mr: unknown kind %d", kind);
	if ((unsigned int)fallback > IBODP_FALLBACK_PINNED)
		return ibodp_fail(EINVAL, "ibodp_reg_mr: unknown fallback policy %d", fallback);
	if (access & IBV_ACCESS_ON_DEMAND)
		return ibodp_fail(EINVAL, "ibodp_reg_mr: leave IBV_ACCESS_ON_DEMAND out of the access flags, the kind says it");
	if (kind == IBODP_IMPLICIT) {
		if (addr || length != SIZE_MAX)
			return ibodp_fail(EINVAL, "an implicit ODP MR covers everything: pass addr NULL and length SIZE_MAX");
		if (fallback == IBODP_FALLBACK_PINNED)
			return ibodp_fail(EINVAL, "an implicit ODP MR cannot fall back to pinned memory (the whole address space); use IBODP_FAIL");
	} else if (!addr || !length) {
		return ibodp_fail(EINVAL, "ibodp_reg_mr: %s", addr ? "empty range (length 0)" :
				  "addr is NULL (use IBODP_IMPLICIT for the whole address space)");
	}

	if (pd->context->device != dev->ctx->device)
		return ibodp_fail(EINVAL, "ibodp_reg_mr: the PD is of another device than %s",
				  ibodp_name(dev));

	if (kind != IBODP_PINNED) {
		missing = odp_missing(dev, kind);
		if (missing && fallback == IBODP_FAIL)
			return ibodp_fail(EOPNOTSUPP, "cannot register %zu bytes as %s on %s: %s",
					  length, kind_names[kind], ibodp_name(dev), missing);
		if (missing)
			got = IBODP_PINNED;
	}
	mr = malloc(sizeof(*mr));
	if (!mr)
		return ibodp_fail(ENOMEM, "ibodp_reg_mr");
	if (got != IBODP_PINNED)
		access |= IBV_ACCESS_ON_DEMAND;
	vmr = ibv_reg_mr(pd, addr, length, access);
	if (!vmr) {
		err = errno ? errno : EINVAL;
		free(mr);
		return ibodp_fail(err, "cannot register %zu bytes at %p as %s on %s%s", length,
				  addr, kind_names[got], ibodp_name(dev),
				  err == ENOMEM && got == IBODP_PINNED ?
				  " (pinned memory counts against RLIMIT_MEMLOCK: ulimit -l)" : "");
	}
	/* Its fields are const for the caller: set once, here, through a copy. */
	memcpy(mr, &(struct ibodp_mr){ .mr = vmr, .kind = got, .fell_back = got != kind,
				       .dev = dev, .addr = addr, .length = length },
	       sizeof(*mr));
	if (mr->fell_back)
		ibodp_note("registered %zu bytes pinned instead of as %s: %s", length,
			   kind_names[kind], missing);
	*mrp = mr;
	return 0;
}

int ibodp_dereg_mr(struct ibodp_mr *mr)
{
	int ret;

	if (!mr)
		return 0;
	ret = ibv_dereg_mr(mr->mr);
	if (ret)
		return ibodp_fail(ret, "cannot deregister the MR of %zu bytes at %p", mr->length,
				  mr->addr);
	free(mr);
	return 0;
}

/*
 * The kernel's ADVISE_MR method, through the verbs ioctl. It is only accepted with the
 * driver id of the device's uAPI, which libibverbs keeps to itself: the kernel tells it
 * through RDMA netlink (netlink.c).
 */
static int advise_ioctl(int cmd_fd, uint32_t driver_id, uint32_t advice, uint32_t flags,
			struct ibv_sge *sge, uint32_t num_sge, uint32_t pd)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[4];
	} cmd = {
		.hdr = {
			.length = sizeof(cmd),
			.object_id = UVERBS_OBJECT_MR,
			.method_id = UVERBS_METHOD_ADVISE_MR,
			.num_attrs = 4,
			.driver_id = driver_id,
		},
		.attrs = {
			{ .attr_id = UVERBS_ATTR_ADVISE_MR_PD_HANDLE,
			  .flags = UVERBS_ATTR_F_MANDATORY, .data = pd },
			/* Constants travel as 64-bit values. */
			{ .attr_id = UVERBS_ATTR_ADVISE_MR_ADVICE, .len = sizeof(uint64_t),
			  .flags = UVERBS_ATTR_F_MANDATORY, .data = advice },
			{ .attr_id = UVERBS_ATTR_ADVISE_MR_FLAGS, .len = sizeof(uint32_t),
			  .flags = UVERBS_ATTR_F_MANDATORY, .data = flags },
			{ .attr_id = UVERBS_ATTR_ADVISE_MR_SGE_LIST,
			  .len = num_sge * sizeof(*sge), .flags = UVERBS_ATTR_F_MANDATORY,
			  .data = (uintptr_t)sge },
		},
	};

	_Static_assert(sizeof(struct ibv_sge) == sizeof(struct ib_uverbs_sge), "sge layout");
	return ioctl(cmd_fd, RDMA_VERBS_IOCTL, &cmd) ? errno : 0;
}

/* The device's uverbs driver id, asked of the kernel once it is known; else again. */
static int driver_id(struct ibodp_dev *dev, uint32_t *id)
{
	uint32_t found;
	int err = 0;

	pthread_mutex_lock(&dev->driver_lock);
	if (dev->driver_id < 0) {
		err = ibodp_uverbs_driver_id(dev->ctx, &found);
		if (!err)
			dev->driver_id = (int)found;
	}
	*id = (uint32_t)dev->driver_id;
	pthread_mutex_unlock(&dev->driver_lock);
	return err;
}

/* The most SGEs one ADVISE_MR request carries: its attribute length is 16 bits. */
#define ADVISE_SGE_MAX	(UINT16_MAX / sizeof(struct ib_uverbs_sge))

/* ibodp_advise_mr() of at most ADVISE_SGE_MAX SGEs. */
static int advise_some(struct ibodp_dev *dev, struct ibv_pd *pd,
		       enum ibv_advise_mr_advice advice, uint32_t flags, struct ibv_sge *sge,
		       uint32_t num_sge, bool *direct)
{
	uint32_t id;
	int ret;

	ret = ibv_advise_mr(pd, advice, flags, sge, num_sge);
	if (ret == EOPNOTSUPP) {
		if (direct)
			*direct = true;
		ret = driver_id(dev, &id);
		if (ret)
			return ibodp_fail(ret, "ADVISE_MR on %s: the provider has none, and RDMA netlink did not tell the kernel driver's uverbs id",
					  ibodp_name(dev));
		/* IBV_ADVISE_MR_FLAG_FLUSH is the kernel's IB_UVERBS_ADVISE_MR_FLAG_FLUSH. */
		ret = advise_ioctl(pd->context->cmd_fd, id, advice, flags, sge, num_sge,
				   pd->handle);
	}
	if (ret == EOPNOTSUPP)
		return ibodp_fail(ret, "ADVISE_MR on %s: neither the provider nor the kernel driver supports it",
				  ibodp_name(dev));
	if (ret)
		return ibodp_fail(ret, "ADVISE_MR of %u SGEs from %#llx (%s)", num_sge,
				  (unsigned long long)sge[0].addr,
				  ret == EFAULT ? "part of the range is not mapped" :
				  ret == EPERM ? "the MR is not writable for a PREFETCH_WRITE" :
				  ret == ENOENT ? "no such MR, or it is gone" :
				  ret == EINVAL ? "not an ODP MR, or outside it" : "rejected by the driver");
	return 0;
}

int ibodp_advise_mr(struct ibodp_dev *dev, struct ibv_pd *pd,
		    enum ibv_advise_mr_advice advice, uint32_t flags, struct ibv_sge *sge,
		    uint32_t num_sge, bool *direct)
{
	uint32_t i, n;
	int ret;

	if (direct)
		*direct = false;
	if (!dev || !pd || !sge || !num_sge)
		return ibodp_fail(EINVAL, "ibodp_advise_mr: %s", !dev ? "dev is NULL" :
				  !pd ? "pd is NULL" : "no SGE to advise on");
	if (pd->context->device != dev->ctx->device)
		return ibodp_fail(EINVAL, "ibodp_advise_mr: the PD is of another device than %s",
				  ibodp_name(dev));
	for (i = 0; i < num_sge; i++)
		if (sge[i].length && sge[i].addr + sge[i].length - 1 < sge[i].addr)
			return ibodp_fail(EINVAL, "ibodp_advise_mr: SGE %u (%u bytes at %#llx) wraps around the address space",
					  i, sge[i].length, (unsigned long long)sge[i].addr);
	/* The SGE list travels in an ioctl attribute of at most 64 KiB: split it. */
	for (i = 0; i < num_sge; i += n) {
		n = num_sge - i < ADVISE_SGE_MAX ? num_sge - i : ADVISE_SGE_MAX;
		ret = advise_some(dev, pd, advice, flags, sge + i, n, direct);
		if (ret)
			return ret;
	}
	return 0;
}

/* An SGE covers at most 4 GiB - 1; a longer range takes several. */
#define SGE_MAX		0x80000000u

int ibodp_prefetch(struct ibodp_mr *mr, void *addr, size_t length, unsigned int flags,
		   bool *direct)
{
	enum ibv_advise_mr_advice advice;
	struct ibv_sge *sge;
	uint32_t i, n;
	uintptr_t a;
	int ret;

	if (direct)
		*direct = false;
	if (!mr)
		return ibodp_fail(EINVAL, "ibodp_prefetch: mr is NULL");
	if (flags & ~(IBODP_PREFETCH_WRITE | IBODP_PREFETCH_NO_FAULT | IBODP_PREFETCH_SYNC))
		return ibodp_fail(EINVAL, "ibodp_prefetch: unknown flags %#x", flags);
	if ((flags & IBODP_PREFETCH_WRITE) && (flags & IBODP_PREFETCH_NO_FAULT))
		return ibodp_fail(EINVAL, "ibodp_prefetch: NO_FAULT maps what is present; it cannot be for writing");
	if (!length)
		return 0;
	if ((uintptr_t)addr + length - 1 < (uintptr_t)addr)
		return ibodp_fail(EINVAL, "prefetch of %zu bytes at %p wraps around the address space",
				  length, addr);
	if (mr->kind != IBODP_IMPLICIT &&
	    ((uintptr_t)addr < (uintptr_t)mr->addr ||
	     (uintptr_t)addr - (uintptr_t)mr->addr > mr->length ||
	     length > mr->length - ((uintptr_t)addr - (uintptr_t)mr->addr)))
		return ibodp_fail(EINVAL, "prefetch of %zu bytes at %p is outside the MR (%zu bytes at %p)",
				  length, addr, mr->length, mr->addr);
	if (mr->kind == IBODP_PINNED)
		return 0;	/* pinned pages are there already */

	advice = flags & IBODP_PREFETCH_WRITE ? IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE :
		 flags & IBODP_PREFETCH_NO_FAULT ? IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT :
		 IBV_ADVISE_MR_ADVICE_PREFETCH;
	if (length / SGE_MAX >= UINT32_MAX)
		return ibodp_fail(EINVAL, "prefetch of %zu bytes at %p: larger than any address space",
				  length, addr);
	n = (uint32_t)(length / SGE_MAX + (length % SGE_MAX != 0));
	sge = calloc(n, sizeof(*sge));
	if (!sge)
		return ibodp_fail(ENOMEM, "ibodp_prefetch");
	for (i = 0, a = (uintptr_t)addr; i < n; i++, a += SGE_MAX) {
		sge[i].addr = a;
		sge[i].length = i + 1 < n ? SGE_MAX : (uint32_t)(length - (size_t)i * SGE_MAX);
		sge[i].lkey = mr->mr->lkey;
	}
	ret = ibodp_advise_mr(mr->dev, mr->mr->pd, advice,
			      flags & IBODP_PREFETCH_SYNC ? IBV_ADVISE_MR_FLAG_FLUSH : 0, sge, n,
			      direct);
	free(sge);
	return ret;
}
