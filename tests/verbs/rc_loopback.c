// SPDX-License-Identifier: GPL-2.0
/*
 * RC traffic between two QPs of one device on pinned memory regions: SEND/RECV, RDMA
 * WRITE and RDMA READ, each with the data checked byte for byte, including transfers
 * that start and end at unaligned offsets (the bytes around them must stay untouched).
 *
 * vmtest-class: nodma
 */
#include "tap.h"
#include "verbs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUF_SIZE (256 * 1024)
#define GUARD 0xa5

struct buffers {
	unsigned char *src, *dst;
	struct ibv_mr *src_mr, *dst_mr;
};

static int buffers_init(struct buffers *b, struct ibv_pd *pd)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	long page = sysconf(_SC_PAGESIZE);

	memset(b, 0, sizeof(*b));
	if (posix_memalign((void **)&b->src, page, BUF_SIZE) ||
	    posix_memalign((void **)&b->dst, page, BUF_SIZE)) {
		fprintf(stderr, "posix_memalign(%d): out of memory\n", BUF_SIZE);
		return -1;
	}
	b->src_mr = ibv_reg_mr(pd, b->src, BUF_SIZE, access);
	b->dst_mr = ibv_reg_mr(pd, b->dst, BUF_SIZE, access);
	if (!b->src_mr || !b->dst_mr) {
		fprintf(stderr, "ibv_reg_mr(%d bytes): %s\n", BUF_SIZE, strerror(errno));
		return -1;
	}
	return 0;
}

static void buffers_fini(struct buffers *b)
{
	if (b->src_mr)
		ibv_dereg_mr(b->src_mr);
	if (b->dst_mr)
		ibv_dereg_mr(b->dst_mr);
	free(b->src);
	free(b->dst);
}

/* Source holds pattern `seed`, destination holds guard bytes. */
static void buffers_reset(struct buffers *b, unsigned int seed)
{
	vt_fill(b->src, BUF_SIZE, seed);
	memset(b->dst, GUARD, BUF_SIZE);
}

/*
 * After a transfer of len bytes from src+soff to dst+doff: those bytes match and every
 * other byte of dst still holds the guard.
 */
static bool transferred(const struct buffers *b, size_t soff, size_t doff, size_t len)
{
	size_t i;

	if (memcmp(b->dst + doff, b->src + soff, len)) {
		for (i = 0; i < len && b->dst[doff + i] == b->src[soff + i]; i++)
			;
		tap_diag("first differing byte at offset %zu of %zu", i, len);
		return false;
	}
	for (i = 0; i < BUF_SIZE; i++) {
		if ((i < doff || i >= doff + len) && b->dst[i] != GUARD) {
			tap_diag("byte %zu outside the transfer was overwritten", i);
			return false;
		}
	}
	return true;
}

static bool do_send(struct vt_loopback *lb, struct buffers *b, size_t soff, size_t doff,
		    size_t len)
{
	return vt_send_recv(lb, b->src + soff, b->src_mr, b->dst + doff, b->dst_mr, len) == 0;
}

/* RDMA WRITE from qp0's src to qp1's dst, or RDMA READ by qp1 of qp0's src into dst. */
static bool do_rdma(struct vt_loopback *lb, struct buffers *b, enum ibv_wr_opcode op,
		    size_t soff, size_t doff, size_t len)
{
	enum ibv_wc_status status;

	if (vt_rdma(lb, op, b->src + soff, b->src_mr, b->dst + doff, b->dst_mr, len, &status))
		return false;
	if (status != IBV_WC_SUCCESS)
		tap_diag("completion: %s", ibv_wc_status_str(status));
	return status == IBV_WC_SUCCESS;
}

/* Offsets and lengths: whole buffer, one byte, and ranges that start and end mid-page. */
static const struct {
	size_t soff, doff, len;
	const char *what;
} shapes[] = {
	{ 0, 0, 4096, "one aligned page" },
	{ 0, 0, 1, "one byte" },
	{ 7, 13, 5000, "unaligned, spanning a page boundary" },
	{ 4095, 1, 8194, "from the last byte of a page across three pages" },
	{ 0, 0, BUF_SIZE, "the whole 256 KiB buffer" },
};

int main(int argc, char **argv)
{
	const struct vt_transfer *ops = vt_transfers;
	const size_t nshapes = sizeof(shapes) / sizeof(shapes[0]);
	struct vt_options opt;
	struct vt_loopback lb;
	struct ibv_context *ctx;
	struct buffers b;
	unsigned int seed = 1;
	size_t o, s;
	bool ok;

	vt_parse_options(argc, argv, &opt);
	tap_plan(2 + 3 * nshapes);

	ctx = vt_open_device(opt.dev);
	if (!ctx || !tap_ok(vt_loopback_create(&lb, ctx, &opt) == 0,
			    "two RC QPs connected to each other"))
		tap_bail("no connected QP pair");
	if (!tap_ok(buffers_init(&b, lb.pd) == 0, "register two 256 KiB pinned MRs"))
		tap_bail("no memory regions");

	for (o = 0; o < VT_NTRANSFERS; o++) {
		for (s = 0; s < nshapes; s++) {
			buffers_reset(&b, seed++);
			if (ops[o].op == IBV_WR_SEND)
				ok = do_send(&lb, &b, shapes[s].soff, shapes[s].doff, shapes[s].len);
			else
				ok = do_rdma(&lb, &b, ops[o].op, shapes[s].soff, shapes[s].doff,
					     shapes[s].len);
			ok = ok && transferred(&b, shapes[s].soff, shapes[s].doff, shapes[s].len);
			tap_ok(ok, "%s: %s (%zu bytes)", ops[o].name, shapes[s].what,
			       shapes[s].len);
		}
	}

	buffers_fini(&b);
	vt_loopback_destroy(&lb);
	ibv_close_device(ctx);
	return tap_done();
}
