// SPDX-License-Identifier: GPL-2.0
/*
 * MRs registered at an iova that is not their address (ibv_reg_mr_iova2(), as a
 * zero-based or a relocated registration does): every access names the MR's iova, and
 * the device must find the byte at the same distance from the MR's start in memory.
 * For pinned MRs and for ODP MRs, at iova 0, far above the address and ending at 2^64:
 *  - RDMA WRITE and READ, unaligned and across pages, both sides' addresses in iova
 *    space (the local SGE as well as the remote address), and SEND/RECV;
 *  - fetch-and-add and compare-and-swap on the remote MR;
 *  - ibv_advise_mr() of ODP MRs, whose SGEs name iovas as well;
 *  - the MR's own address, outside its iova range, and an access past its end: a
 *    remote access error with memory untouched.
 * Each check compares the bytes at the virtual address behind the iova with a pattern
 * without period, so a page found at the wrong index cannot pass. Linux 7.3's rxe ODP
 * looks pages up by iova as if it were the address: there the ODP half fails.
 *
 * vmtest-class: dma
 */
#include "tap.h"
#include "lib/odp.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NPAGES	16
#define NCHECKS	9	/* per kind of MR and iova */

enum kind { PINNED, ODP, NKINDS };
static const char *const kind_names[NKINDS] = { "pinned", "ODP" };

static size_t page_size, buf_size;
static struct vt_options opt;
static struct ibv_context *ctx;

/* A buffer registered at an iova of its own; @p is where the device's bytes land. */
struct iova_buf {
	unsigned char *p;
	uint64_t iova;
	struct ibv_mr *mr;
};

static bool iova_buf_init(struct iova_buf *b, struct ibv_pd *pd, enum kind k, uint64_t iova)
{
	int access = k == ODP ? VT_ODP_ACCESS : VT_PINNED_ACCESS | IBV_ACCESS_REMOTE_ATOMIC;

	b->iova = iova;
	b->mr = NULL;
	b->p = vt_map_anon(buf_size, PROT_READ | PROT_WRITE, 0);
	if (!b->p)
		return false;
	b->mr = ibv_reg_mr_iova2(pd, b->p, buf_size, iova, access);
	if (!b->mr)
		tap_diag("%s MR of %zu bytes at iova %#llx: ibv_reg_mr_iova2: %s",
			 kind_names[k], buf_size, (unsigned long long)iova, strerror(errno));
	return b->mr != NULL;
}

static void iova_buf_fini(struct iova_buf *b)
{
	if (b->mr)
		ibv_dereg_mr(b->mr);
	if (b->p)
		munmap(b->p, buf_size);
	b->p = NULL;
	b->mr = NULL;
}

/* The iova @off bytes into @b, as the void * the plumbing's helpers take. */
static void *at(const struct iova_buf *b, size_t off)
{
	return (void *)(uintptr_t)(b->iova + off);
}

/* dst->p[doff, +len) holds seed's pattern at [soff, +len), and nothing else is written. */
static bool landed(const struct iova_buf *dst, size_t doff, unsigned char *want, size_t soff,
		   size_t len)
{
	size_t i;

	for (i = 0; i < buf_size; i++) {
		bool inside = i >= doff && i < doff + len;

		if (dst->p[i] != (inside ? want[soff + i - doff] : 0)) {
			tap_diag("byte %zu of the MR (%s the transfer at %zu, %zu bytes) is %#x",
				 i, inside ? "inside" : "outside", doff, len, dst->p[i]);
			return false;
		}
	}
	return true;
}

static const struct {
	size_t soff, doff, len;
	const char *what;
} shapes[] = {
	{ 7, 13, 5000, "unaligned, across a page boundary" },
	{ 4095, 1, 3 * 4096 + 2, "from the last byte of a page over five pages" },
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* RDMA WRITE src -> dst, then RDMA READ dst -> back, in each shape: 2 * NSHAPES checks. */
static void write_then_read(struct vt_loopback *lb, enum kind k, uint64_t iova, const char *where)
{
	struct iova_buf src = { 0 }, dst = { 0 }, back = { 0 };
	unsigned int s;

	for (s = 0; s < NSHAPES; s++) {
		size_t soff = shapes[s].soff, doff = shapes[s].doff, len = shapes[s].len;
		bool ok;

		ok = iova_buf_init(&src, lb->pd, k, iova) && iova_buf_init(&dst, lb->pd, k, iova) &&
		     iova_buf_init(&back, lb->pd, k, iova);
		if (ok)
			vt_fill(src.p, buf_size, 100 + s);
		tap_ok(ok && vt_move(lb, IBV_WR_RDMA_WRITE, at(&src, soff), src.mr,
				     at(&dst, doff), dst.mr, len) &&
		       landed(&dst, doff, src.p, soff, len),
		       "%s MRs at %s: RDMA WRITE %s (%zu bytes)", kind_names[k], where,
		       shapes[s].what, len);
		/* READ it back to where it came from in the source, into an untouched MR. */
		tap_ok(ok && vt_move(lb, IBV_WR_RDMA_READ, at(&dst, doff), dst.mr,
				     at(&back, soff), back.mr, len) &&
		       landed(&back, soff, src.p, soff, len),
		       "%s MRs at %s: RDMA READ %s (%zu bytes)", kind_names[k], where,
		       shapes[s].what, len);
		iova_buf_fini(&src);
		iova_buf_fini(&dst);
		iova_buf_fini(&back);
	}
}

/* SEND/RECV, both SGEs in iova space: 1 check. */
static void send_recv(struct vt_loopback *lb, enum kind k, uint64_t iova, const char *where)
{
	struct iova_buf src = { 0 }, dst = { 0 };
	bool ok;

	ok = iova_buf_init(&src, lb->pd, k, iova) && iova_buf_init(&dst, lb->pd, k, iova);
	if (ok)
		vt_fill(src.p, buf_size, 110);
	tap_ok(ok && vt_move(lb, IBV_WR_SEND, at(&src, 9), src.mr, at(&dst, 4093), dst.mr,
			     2 * page_size) &&
	       landed(&dst, 4093, src.p, 9, 2 * page_size),
	       "%s MRs at %s: SEND/RECV, unaligned, across pages", kind_names[k], where);
	iova_buf_fini(&src);
	iova_buf_fini(&dst);
}

static bool atomic(struct vt_loopback *lb, struct iova_buf *target, size_t off,
		   enum ibv_wr_opcode op, uint64_t compare_add, uint64_t swap,
		   struct iova_buf *result, uint64_t *old)
{
	struct ibv_sge sge = { (uintptr_t)at(result, 0), 8, result->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 11, .sg_list = &sge, .num_sge = 1, .opcode = op };
	enum ibv_wc_status status;

	wr.wr.atomic.remote_addr = target->iova + off;
	wr.wr.atomic.rkey = target->mr->rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	if (vt_post_send_status(lb, lb->qp[0], &wr, &status))
		return false;
	if (status != IBV_WC_SUCCESS) {
		tap_diag("atomic at iova %#llx: %s", (unsigned long long)(target->iova + off),
			 ibv_wc_status_str(status));
		return false;
	}
	memcpy(old, result->p, 8);
	return true;
}

/* Fetch-and-add, then compare-and-swap, on an untouched page of the target: 2 checks. */
static void atomics(struct vt_loopback *lb, enum kind k, uint64_t iova, const char *where)
{
	static const struct {
		enum ibv_wr_opcode op;
		uint64_t compare_add, swap, old, now;
		const char *name;
	} steps[] = {
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, 5, 0, 0, 5, "fetch-and-add" },
		{ IBV_WR_ATOMIC_CMP_AND_SWP, 5, 77, 5, 77, "compare-and-swap" },
	};
	const size_t off = 3 * page_size + 8;
	struct iova_buf target = { 0 }, result = { 0 };
	uint64_t old = 1, now = 0;
	unsigned int i;
	bool ok;

	ok = iova_buf_init(&target, lb->pd, k, iova) && iova_buf_init(&result, lb->pd, k, iova);
	for (i = 0; i < 2; i++) {
		ok = ok && atomic(lb, &target, off, steps[i].op, steps[i].compare_add,
				  steps[i].swap, &result, &old);
		if (ok)
			memcpy(&now, target.p + off, 8);
		tap_ok(ok && old == steps[i].old && now == steps[i].now,
		       "%s MR at %s: %s returns %llu and leaves %llu at its offset (want %llu)",
		       kind_names[k], where, steps[i].name, (unsigned long long)old,
		       (unsigned long long)now, (unsigned long long)steps[i].now);
	}
	iova_buf_fini(&target);
	iova_buf_fini(&result);
}

/*
 * ibv_advise_mr() names memory by iova too: a synchronous PREFETCH_WRITE of the whole
 * MR works (and a WRITE after it lands), one at the MR's address is refused with EINVAL,
 * as any range outside the MR: 2 checks, ODP MRs only.
 */
static void prefetch(struct vt_loopback *lb, uint64_t iova, const char *where)
{
	struct iova_buf src = { 0 }, dst = { 0 };
	struct ibv_sge sge;
	int ret = -1;
	bool ok;

	ok = iova_buf_init(&src, lb->pd, ODP, iova) && iova_buf_init(&dst, lb->pd, ODP, iova);
	if (ok) {
		sge = (struct ibv_sge){ iova, (uint32_t)buf_size, dst.mr->lkey };
		ret = vt_advise_mr(lb->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1, NULL);
		vt_fill(src.p, buf_size, 130);
	}
	tap_ok(ok && ret == 0 &&
	       vt_move(lb, IBV_WR_RDMA_WRITE, at(&src, 0), src.mr, at(&dst, 0), dst.mr, buf_size) &&
	       landed(&dst, 0, src.p, 0, buf_size),
	       "ODP MR at %s: PREFETCH_WRITE of its iova range: %s, then a WRITE lands", where,
	       ret < 0 ? "not run" : ret ? strerror(ret) : "ok");
	ret = -1;
	if (ok) {
		sge = (struct ibv_sge){ (uintptr_t)dst.p, (uint32_t)page_size, dst.mr->lkey };
		ret = vt_advise_mr(lb->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1, NULL);
	}
	tap_ok(ret == EINVAL, "ODP MR at %s: PREFETCH_WRITE at its address, not an iova: %s",
	       where, ret < 0 ? "not run" : ret ? strerror(ret) : "accepted");
	iova_buf_fini(&src);
	iova_buf_fini(&dst);
}

/*
 * An RDMA WRITE that must fail with a remote access error and leave the target's memory
 * untouched: 8 bytes at the target's own address (outside its iova range: iova 0 and
 * 2^52 lie below the first mapping or above user space, the last one in kernel space),
 * or 16 across its end. Then fresh QPs, as the pair is in error: 1 check.
 */
static void refused(struct vt_loopback *lb, struct ibv_pd *pd, enum kind k, uint64_t iova,
		    bool own_address, const char *where)
{
	struct iova_buf src = { 0 }, dst = { 0 };
	enum ibv_wc_status status = IBV_WC_SUCCESS;
	size_t len = own_address ? 8 : 16;
	bool ok;

	ok = iova_buf_init(&src, pd, k, iova) && iova_buf_init(&dst, pd, k, iova);
	if (ok) {
		uint64_t raddr = own_address ? (uintptr_t)dst.p : iova + buf_size - 8;

		vt_fill(src.p, buf_size, 120);
		ok = vt_rdma(lb, IBV_WR_RDMA_WRITE, at(&src, 0), src.mr, (void *)(uintptr_t)raddr,
			     dst.mr, len, &status) == 0;
	}
	tap_ok(ok && status == IBV_WC_REM_ACCESS_ERR && landed(&dst, 0, src.p, 0, 0),
	       "%s MR at %s: RDMA WRITE %s: %s, memory untouched", kind_names[k], where,
	       own_address ? "at the MR's address, not an iova of it" : "across the MR's end",
	       ok ? ibv_wc_status_str(status) : "no completion");
	iova_buf_fini(&src);
	iova_buf_fini(&dst);
	vt_loopback_destroy(lb);
	if (vt_loopback_create_on(lb, ctx, &opt, pd))
		tap_bail("no connected QP pair");
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	struct vt_loopback lb;
	struct ibv_pd *pd;
	enum kind k;
	unsigned int i;
	struct {
		uint64_t iova;
		const char *where;
	} places[3];

	page_size = sysconf(_SC_PAGESIZE);
	buf_size = NPAGES * page_size;
	places[0].iova = 0;
	places[0].where = "iova 0";
	places[1].iova = 1ULL << 52;
	places[1].where = "iova 2^52";
	places[2].iova = -(uint64_t)buf_size;
	places[2].where = "an iova ending at 2^64";

	ctx = vt_odp_start(argc, argv, &opt, NKINDS * 3 * NCHECKS + 3 * 2, VT_NEED_ODP,
			   "MRs at an iova", &attr);
	pd = ibv_alloc_pd(ctx);
	if (!pd || vt_loopback_create_on(&lb, ctx, &opt, pd))
		tap_bail("no connected QP pair");
	for (k = PINNED; k < NKINDS; k++) {
		for (i = 0; i < 3; i++) {
			write_then_read(&lb, k, places[i].iova, places[i].where);
			send_recv(&lb, k, places[i].iova, places[i].where);
			atomics(&lb, k, places[i].iova, places[i].where);
			refused(&lb, pd, k, places[i].iova, true, places[i].where);
			refused(&lb, pd, k, places[i].iova, false, places[i].where);
			if (k == ODP)
				prefetch(&lb, places[i].iova, places[i].where);
		}
	}
	vt_loopback_destroy(&lb);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_done();
}
