/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RDMA FLUSH on soft-RoCE without provider support. Debian's rxe provider (rdma-core
 * v44) has no ibv_wr_flush(), but rxe takes work requests from a send queue shared
 * with userspace (mmap of the command FD): this writes a FLUSH work request into the
 * send queue of an RC QP and rings the doorbell with an empty POST_SEND, as the
 * provider itself would. For tests only: nothing else may post on that QP meanwhile.
 */
#ifndef VT_RXE_RAW_H
#define VT_RXE_RAW_H

#include "verbs.h"

/* The kernel's values (ib_user_verbs.h, ib_user_ioctl_verbs.h), newer than Debian's. */
#define VT_WR_FLUSH		14
#define VT_WC_FLUSH		8
#define VT_FLUSH_GLOBAL		(1 << 0)
#define VT_FLUSH_PERSISTENT	(1 << 1)
#define VT_FLUSH_RANGE		0
#define VT_FLUSH_MR		1
#define VT_ACCESS_FLUSH_GLOBAL	(1 << 8)
#define VT_ACCESS_FLUSH_PERSISTENT (1 << 9)

/* The mappings of rxe queues of a context: snapshot before creating a loopback. */
struct vt_rxe_maps {
	int n;
	struct { uintptr_t start; unsigned long long offset; } m[64];
};
int vt_rxe_maps_read(struct ibv_context *ctx, struct vt_rxe_maps *maps);

/*
 * The send queue of lb->qp[0] of a loopback created after the snapshot `before`
 * (queues are numbered in the order the kernel made them: the two CQs, then send and
 * receive queue of each QP). NULL (reported) when it cannot be told.
 */
void *vt_rxe_sq_of_loopback(struct ibv_context *ctx, const struct vt_rxe_maps *before);

/* Post a signaled FLUSH on qp through its send queue sq. 0 or -1 (reported). */
int vt_rxe_post_flush(struct ibv_qp *qp, void *sq, uint64_t wr_id, uint64_t remote_addr,
		      uint32_t length, uint32_t rkey, uint8_t type, uint8_t level);

#endif
