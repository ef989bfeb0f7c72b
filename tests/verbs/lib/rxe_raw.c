// SPDX-License-Identifier: GPL-2.0
#include "rxe_raw.h"

#include <errno.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_rxe.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The uverbs device behind ctx, as /proc/self/maps names it: /dev/infiniband/uverbsN. */
static bool uverbs_path(struct ibv_context *ctx, char *path, size_t size)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", ctx->cmd_fd);
	n = readlink(link, path, size - 1);
	if (n <= 0)
		return false;
	path[n] = 0;
	return true;
}

int vt_rxe_maps_read(struct ibv_context *ctx, struct vt_rxe_maps *maps)
{
	char path[128], line[512], file[256];
	unsigned long long offset;
	unsigned long start, end;
	FILE *f;

	maps->n = 0;
	if (!uverbs_path(ctx, path, sizeof(path)))
		return -1;
	f = fopen("/proc/self/maps", "r");
	if (!f) {
		fprintf(stderr, "/proc/self/maps: %s\n", strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) && maps->n < 64) {
		if (sscanf(line, "%lx-%lx %*s %llx %*s %*s %255s", &start, &end, &offset,
			   file) == 4 && !strcmp(file, path)) {
			maps->m[maps->n].start = start;
			maps->m[maps->n].offset = offset;
			maps->n++;
		}
	}
	fclose(f);
	return 0;
}

static int by_offset(const void *a, const void *b)
{
	const unsigned long long *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

void *vt_rxe_sq_of_loopback(struct ibv_context *ctx, const struct vt_rxe_maps *before)
{
	struct { unsigned long long offset; uintptr_t start; } fresh[64];
	struct vt_rxe_maps now;
	struct rxe_queue_buf *q;
	int i, j, n = 0;

	if (vt_rxe_maps_read(ctx, &now))
		return NULL;
	for (i = 0; i < now.n; i++) {
		for (j = 0; j < before->n && before->m[j].start != now.m[i].start; j++)
			;
		if (j == before->n) {
			fresh[n].offset = now.m[i].offset;
			fresh[n++].start = now.m[i].start;
		}
	}
	if (n != 6) {
		fprintf(stderr, "%d new rxe queue mappings, expected 6 (2 CQs, 2 QPs)\n", n);
		return NULL;
	}
	qsort(fresh, n, sizeof(fresh[0]), by_offset);
	q = (struct rxe_queue_buf *)fresh[2].start;
	if ((1u << q->log2_elem_size) < sizeof(struct rxe_send_wqe)) {
		fprintf(stderr, "queue 3 has %u-byte elements: not a send queue\n",
			1u << q->log2_elem_size);
		return NULL;
	}
	return q;
}

int vt_rxe_post_flush(struct ibv_qp *qp, void *sq, uint64_t wr_id, uint64_t remote_addr,
		      uint32_t length, uint32_t rkey, uint8_t type, uint8_t level)
{
	/* The kernel's flush member of rxe_send_wr.wr, which Debian's header lacks. */
	struct {
		uint64_t remote_addr;
		uint32_t length;
		uint32_t rkey;
		uint8_t type;
		uint8_t level;
	} flush = { remote_addr, length, rkey, type, level };
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} db = {
		.hdr = { .command = IB_USER_VERBS_CMD_POST_SEND, .in_words = sizeof(db) / 4,
			 .out_words = sizeof(struct ib_uverbs_post_send_resp) / 4 },
		.cmd = { .qp_handle = qp->handle, .wqe_size = sizeof(struct ibv_send_wr) },
	};
	struct ib_uverbs_post_send_resp resp;
	struct rxe_queue_buf *q = sq;
	uint32_t prod, cons;
	struct rxe_send_wqe *wqe;

	prod = atomic_load_explicit((_Atomic uint32_t *)&q->producer_index,
				    memory_order_relaxed);
	cons = atomic_load_explicit((_Atomic uint32_t *)&q->consumer_index,
				    memory_order_acquire);
	if (((prod + 1 - cons) & q->index_mask) == 0) {
		fprintf(stderr, "the send queue is full\n");
		return -1;
	}
	wqe = (struct rxe_send_wqe *)(q->data + ((prod & q->index_mask) << q->log2_elem_size));
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr.wr_id = wr_id;
	wqe->wr.opcode = VT_WR_FLUSH;
	wqe->wr.send_flags = IBV_SEND_SIGNALED;
	_Static_assert(sizeof(flush) <= sizeof(wqe->wr.wr), "flush fits the union");
	memcpy(&wqe->wr.wr, &flush, sizeof(flush));
	wqe->iova = remote_addr;
	wqe->dma.length = length;
	wqe->dma.resid = length;
	atomic_store_explicit((_Atomic uint32_t *)&q->producer_index,
			      (prod + 1) & q->index_mask, memory_order_release);

	db.cmd.response = (uintptr_t)&resp;
	if (write(qp->context->cmd_fd, &db, sizeof(db)) != sizeof(db)) {
		fprintf(stderr, "POST_SEND doorbell: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}
