// SPDX-License-Identifier: GPL-2.0
/*
 * Memory windows on pinned, ODP and implicit ODP MRs: a peer given a window's rkey
 * reaches the bytes of the window and nothing else, and no order of teardown leaves
 * the kernel waiting for a window or freeing what a window still names.
 *
 * - Accesses: type 1, type 2 VA-based and type 2 zero-based windows over pages 1-2 of
 *   a 16 KiB MR; RDMA WRITE, RDMA READ, atomic fetch-and-add and FLUSH (global, of a
 *   range) at the window's first byte, its last byte (last 8 bytes for atomics), and
 *   just before and just past it.
 *   Inside, the bytes move and nothing else changes; outside, the request completes
 *   with a remote access error and the whole MR is as it was. rxe once checked only
 *   the MR behind a window: an 8 KiB WRITE 4 KiB past a window's end succeeded.
 * - Another QP: a type 2 window is reached only through the QP it is bound to, a
 *   type 1 window through any QP of its PD.
 * - Binding: a window outside its MR (its end wrapping past 2^64, one byte past the
 *   MR's end, a zero-based window starting past it) fails to bind.
 * - Invalidation: local (LOCAL_INV) and remote (SEND with invalidate) end the
 *   window's access and a rebind brings it back; a window not bound, or bound
 *   through another QP, cannot be invalidated (rxe once dereferenced the free
 *   window's missing QP, an oops any peer could cause).
 * - Teardown: QP pair, window, MR and PD destroyed in each of the 24 orders with a
 *   type 2 window bound, and a process that exits with everything bound; the only
 *   refusals are the MR while a window is bound to it and the PD while it has
 *   objects. rxe once waited 50 s in destroy_qp and then freed the QP under the
 *   window (a refcount underflow when the window went).
 * - An MR whose addresses wrap past 2^64 is refused; one that ends at 2^64 is not.
 *
 * The kernel log (the run's `checks`) must stay clean: no WARN, no refcount report.
 * About 20 s under TCG.
 *
 * vmtest-class: dma
 */
#include "lib/odp.h"
#include "lib/rxe_raw.h"
#include "tap.h"
#include "verbs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MR_SIZE		(16 * 1024)
#define WIN_OFF		4096		/* the window: pages 1 and 2 of the MR */
#define WIN_LEN		8192
#define MW_ACCESS	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_ATOMIC | VT_ACCESS_FLUSH_GLOBAL)
#define MR_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND | MW_ACCESS)

enum mr_kind { MR_PINNED, MR_ODP, MR_IMPLICIT, MR_KINDS };
static const char *const mr_names[MR_KINDS] = { "pinned", "ODP", "implicit ODP" };

enum win_kind { WIN_TYPE1, WIN_TYPE2, WIN_TYPE2_ZB, WIN_KINDS };
static const char *const win_names[WIN_KINDS] = {
	"type 1", "type 2", "type 2 zero-based"
};

struct test {
	struct ibv_context *ctx;
	struct vt_options opt;
	struct ibv_pd *pd;
	unsigned char *buf[MR_KINDS];	/* the memory behind each kind of MR */
	struct ibv_mr *mr[MR_KINDS];
	bool have[MR_KINDS];
	unsigned char *loc;		/* the requester's side: pinned */
	struct ibv_mr *loc_mr;
	unsigned int seed;
};

/* A window bound through lb->qp[1], the QP that answers lb->qp[0]'s requests. */
struct window {
	struct ibv_mw *mw;
	enum win_kind kind;
	uint32_t rkey;
	uint64_t base;		/* the peer's address of the window's first byte */
};

static enum ibv_mw_type mw_type(enum win_kind kind)
{
	return kind == WIN_TYPE1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2;
}

/*
 * Bind w over [addr, addr + len) of mr through qp: 0 with *status the bind's
 * completion, or -1 when it could not be posted or did not complete.
 */
static int bind_status(struct vt_loopback *lb, struct ibv_qp *qp, struct window *w,
		       struct ibv_mr *mr, uint64_t addr, uint64_t len,
		       enum ibv_wc_status *status)
{
	struct ibv_mw_bind_info info = {
		.mr = mr, .addr = addr, .length = len,
		.mw_access_flags = MW_ACCESS | (w->kind == WIN_TYPE2_ZB ?
						IBV_ACCESS_ZERO_BASED : 0),
	};
	struct ibv_wc wc;

	if (w->kind == WIN_TYPE1) {
		struct ibv_mw_bind mb = { .wr_id = 7, .send_flags = IBV_SEND_SIGNALED,
					  .bind_info = info };
		int ret = ibv_bind_mw(qp, w->mw, &mb);

		if (ret) {
			/* The provider refuses some binds itself: that is a refusal too. */
			tap_diag("ibv_bind_mw: %s", strerror(ret));
			*status = IBV_WC_MW_BIND_ERR;
			return 0;
		}
		if (vt_poll_one(lb->send_cq, &wc, VT_WAIT_MS))
			return -1;
		*status = wc.status;
		w->rkey = w->mw->rkey;
	} else {
		struct ibv_send_wr wr = { .wr_id = 7, .opcode = IBV_WR_BIND_MW };

		wr.bind_mw.mw = w->mw;
		wr.bind_mw.rkey = ibv_inc_rkey(w->mw->rkey);
		wr.bind_mw.bind_info = info;
		if (vt_post_send_status(lb, qp, &wr, status))
			return -1;
		if (*status == IBV_WC_SUCCESS)
			w->rkey = w->mw->rkey = wr.bind_mw.rkey;
	}
	w->base = w->kind == WIN_TYPE2_ZB ? 0 : addr;
	return 0;
}

/* Allocate a window of kind and bind it over the window of mr through lb->qp[1]. */
static bool window_open(struct test *t, struct vt_loopback *lb, struct window *w,
			enum win_kind kind, enum mr_kind m)
{
	enum ibv_wc_status status;

	memset(w, 0, sizeof(*w));
	w->kind = kind;
	w->mw = ibv_alloc_mw(t->pd, mw_type(kind));
	if (!w->mw) {
		tap_diag("ibv_alloc_mw(%s): %s", win_names[kind], strerror(errno));
		return false;
	}
	if (bind_status(lb, lb->qp[1], w, t->mr[m], (uintptr_t)t->buf[m] + WIN_OFF, WIN_LEN,
			&status))
		return false;
	if (status != IBV_WC_SUCCESS) {
		tap_diag("bind of a %s window: %s", win_names[kind], ibv_wc_status_str(status));
		return false;
	}
	return true;
}

static void window_close(struct window *w)
{
	if (w->mw && ibv_dealloc_mw(w->mw))
		tap_diag("ibv_dealloc_mw: %s", strerror(errno));
	w->mw = NULL;
}

enum op { OP_WRITE, OP_READ, OP_ATOMIC, OP_FLUSH, OPS };
static const char *const op_names[OPS] = {
	"RDMA WRITE", "RDMA READ", "fetch-and-add", "FLUSH"
};

/* A loopback pair whose QPs may FLUSH, and qp[0]'s send queue to post FLUSH on. */
struct pair {
	struct vt_loopback lb;
	void *sq;
};

static bool pair_open(struct test *t, struct pair *p)
{
	struct vt_rxe_maps before;

	if (vt_rxe_maps_read(t->ctx, &before) ||
	    vt_loopback_create_ex(&p->lb, t->ctx, &t->opt, t->pd, 0, VT_ACCESS_FLUSH_GLOBAL))
		return false;
	p->sq = vt_rxe_sq_of_loopback(t->ctx, &before);
	if (!p->sq) {
		vt_loopback_destroy(&p->lb);
		return false;
	}
	return true;
}

/*
 * Post op of len bytes at window offset off (the peer's address w->base + off) from
 * qp, its local side at t->loc; 0 with *status, or -1.
 */
static int access_status(struct test *t, struct vt_loopback *lb, struct ibv_qp *qp,
			 const struct window *w, enum op op, int64_t off, uint32_t len,
			 enum ibv_wc_status *status, void *sq)
{
	struct ibv_sge sge = { (uintptr_t)t->loc, len, t->loc_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 };
	uint64_t raddr = w->base + (uint64_t)off;

	switch (op) {
	case OP_WRITE:
	case OP_READ:
		wr.opcode = op == OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = w->rkey;
		break;
	case OP_ATOMIC:
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = w->rkey;
		wr.wr.atomic.compare_add = 1;
		break;
	case OP_FLUSH: {
		struct ibv_wc wc;

		/* qp is lb->qp[0], whose send queue sq is. */
		if (vt_rxe_post_flush(qp, sq, 9, raddr, len, w->rkey, VT_FLUSH_GLOBAL,
				      VT_FLUSH_RANGE) ||
		    vt_poll_one(lb->send_cq, &wc, VT_WAIT_MS))
			return -1;
		*status = wc.status;
		return 0;
	}
	default:
		return -1;
	}
	return vt_post_send_status(lb, qp, &wr, status);
}

/* Where in the MR an access lands and what it should leave there. */
static bool mr_as_expected(const unsigned char *buf, const unsigned char *before,
			   const unsigned char *loc, enum op op, bool inside, size_t at,
			   size_t len)
{
	uint64_t old, now;
	size_t i;

	for (i = 0; i < MR_SIZE; i++) {
		bool target = inside && op != OP_FLUSH && i >= at && i < at + len;

		if (!target && buf[i] != before[i]) {
			tap_diag("byte %zu of the MR changed (window: %d..%d)", i, WIN_OFF,
				 WIN_OFF + WIN_LEN - 1);
			return false;
		}
	}
	if (!inside)
		return true;
	switch (op) {
	case OP_WRITE:
		if (memcmp(buf + at, loc, len)) {
			tap_diag("the written bytes at %zu differ from the source", at);
			return false;
		}
		return true;
	case OP_READ:
		if (memcmp(loc, buf + at, len)) {
			tap_diag("the bytes read differ from the MR's at %zu", at);
			return false;
		}
		return true;
	case OP_FLUSH:
		return true;	/* nothing moves, inside or out */
	case OP_ATOMIC:
		memcpy(&old, before + at, 8);
		memcpy(&now, buf + at, 8);
		if (now != old + 1 || memcmp(loc, &old, 8)) {
			tap_diag("fetch-and-add at %zu: %#llx became %#llx", at,
				 (unsigned long long)old, (unsigned long long)now);
			return false;
		}
		return true;
	default:
		return false;
	}
}

/* One access through a fresh window on a fresh QP pair, its outcome checked. */
static bool try_access(struct test *t, enum mr_kind m, enum win_kind kind, enum op op,
		       int64_t off, uint32_t len, bool other_qp)
{
	bool inside = off >= 0 && off + len <= WIN_LEN;
	bool reach = inside && !(other_qp && kind != WIN_TYPE1);
	struct pair p, p2;
	struct vt_loopback *lb = &p.lb;
	enum ibv_wc_status status;
	static unsigned char before[MR_SIZE];
	struct window w;
	bool ok = false;

	vt_fill(t->buf[m], MR_SIZE, t->seed++);
	vt_fill(t->loc, MR_SIZE, t->seed++);
	memcpy(before, t->buf[m], MR_SIZE);
	memset(&w, 0, sizeof(w));
	if (!pair_open(t, &p))
		return false;
	if (other_qp && !pair_open(t, &p2)) {
		vt_loopback_destroy(lb);
		return false;
	}
	if (!window_open(t, lb, &w, kind, m))
		goto out;
	if (other_qp)
		lb = &p2.lb;
	if (access_status(t, lb, lb->qp[0], &w, op, off, len, &status, other_qp ? p2.sq : p.sq))
		goto out;
	if (status != (reach ? IBV_WC_SUCCESS : IBV_WC_REM_ACCESS_ERR)) {
		tap_diag("completion: %s (expected %s)", ibv_wc_status_str(status),
			 reach ? "success" : "remote access error");
		goto out;
	}
	ok = mr_as_expected(t->buf[m], before, t->loc, op, reach, WIN_OFF + off, len);
out:
	window_close(&w);
	if (other_qp)
		vt_loopback_destroy(&p2.lb);
	vt_loopback_destroy(&p.lb);
	return ok;
}

static void check_accesses(struct test *t)
{
	static const struct {
		const char *what;
		int64_t off;	/* from the window's first byte; len 0: the op's size */
		uint32_t len;
	} where[] = {
		{ "its first byte", 0, 0 },
		{ "its last byte", -1, 0 },	/* -1: WIN_LEN minus the op's size */
		{ "just before it", -2, 0 },	/* -2: minus the op's size */
		{ "just past it", WIN_LEN, 0 },
	};
	int m, k, o;
	size_t p;

	for (m = 0; m < MR_KINDS; m++) {
		for (k = 0; k < WIN_KINDS; k++) {
			for (o = 0; o < OPS; o++) {
				uint32_t len = o == OP_ATOMIC ? 8 : 1;

				for (p = 0; p < sizeof(where) / sizeof(where[0]); p++) {
					int64_t off = where[p].off == -1 ? WIN_LEN - len :
						      where[p].off == -2 ? -(int64_t)len :
						      where[p].off;

					if (!t->have[m]) {
						tap_skip("no ODP", "%s MR, %s window: %s at %s",
							 mr_names[m], win_names[k], op_names[o],
							 where[p].what);
						continue;
					}
					tap_ok(try_access(t, m, k, o, off, len, false),
					       "%s MR, %s window: %s at %s %s", mr_names[m],
					       win_names[k], op_names[o], where[p].what,
					       off >= 0 && off + len <= WIN_LEN ?
					       "moves the right bytes" : "fails, MR untouched");
				}
			}
			/* The report that found it: 8 KiB from the window's second page. */
			if (t->have[m])
				tap_ok(try_access(t, m, k, OP_WRITE, 4096, 8192, false),
				       "%s MR, %s window: an 8 KiB WRITE 4 KiB past its end fails, MR untouched",
				       mr_names[m], win_names[k]);
			else
				tap_skip("no ODP", "%s MR, %s window: 8 KiB WRITE past its end",
					 mr_names[m], win_names[k]);
			if (t->have[m])
				tap_ok(try_access(t, m, k, OP_WRITE, 0, WIN_LEN, true),
				       "%s MR, %s window: a WRITE of the whole window through another QP %s",
				       mr_names[m], win_names[k],
				       k == WIN_TYPE1 ? "succeeds" : "fails");
			else
				tap_skip("no ODP", "%s MR, %s window: through another QP",
					 mr_names[m], win_names[k]);
		}
	}
}

/* A bind outside the MR must complete with an error (or be refused at posting). */
static void check_binds(struct test *t)
{
	static const struct {
		const char *what;
		enum win_kind kind;
		int64_t addr;		/* from the MR's start, or absolute when abs */
		uint64_t len;
		bool abs;
	} bad[] = {
		{ "type 2 window whose end wraps past 2^64", WIN_TYPE2, -1024, 1024, true },
		{ "type 1 window whose end wraps past 2^64", WIN_TYPE1, -1024, 1024, true },
		{ "type 2 window one byte past the MR's end", WIN_TYPE2, 4096, MR_SIZE - 4096 + 1,
		  false },
		{ "type 2 zero-based window one byte past the MR's end", WIN_TYPE2_ZB, 4096,
		  MR_SIZE - 4096 + 1, false },
		{ "type 2 zero-based window starting past the MR", WIN_TYPE2_ZB, MR_SIZE, 1,
		  false },
		{ "type 2 window starting before the MR", WIN_TYPE2, -1, 2, false },
	};
	struct vt_loopback lb;
	enum ibv_wc_status status;
	struct window w;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t addr = bad[i].abs ? (uint64_t)bad[i].addr :
					     (uintptr_t)t->buf[MR_PINNED] + bad[i].addr;
		bool ok = false;

		memset(&w, 0, sizeof(w));
		w.kind = bad[i].kind;
		if (vt_loopback_create_on(&lb, t->ctx, &t->opt, t->pd) == 0) {
			w.mw = ibv_alloc_mw(t->pd, mw_type(w.kind));
			if (!w.mw)
				tap_diag("ibv_alloc_mw: %s", strerror(errno));
			else if (bind_status(&lb, lb.qp[1], &w, t->mr[MR_PINNED], addr, bad[i].len,
					     &status) == 0) {
				ok = status != IBV_WC_SUCCESS;
				if (!ok)
					tap_diag("bound at %#llx, %llu bytes",
						 (unsigned long long)addr,
						 (unsigned long long)bad[i].len);
			}
			window_close(&w);
			vt_loopback_destroy(&lb);
		}
		tap_ok(ok, "bind of a %s on a 16 KiB MR fails", bad[i].what);
	}
}

/* Post a LOCAL_INV of rkey on qp: 0 with *status, or -1. */
static int local_inv(struct vt_loopback *lb, struct ibv_qp *qp, uint32_t rkey,
		     enum ibv_wc_status *status)
{
	struct ibv_send_wr wr = { .wr_id = 11, .opcode = IBV_WR_LOCAL_INV,
				  .invalidate_rkey = rkey };

	return vt_post_send_status(lb, qp, &wr, status);
}

/* A SEND with invalidate of rkey from lb->qp[0] into a receive on lb->qp[1]. */
static bool send_inv(struct test *t, struct vt_loopback *lb, uint32_t rkey, bool expect_ok)
{
	struct ibv_sge sge = { (uintptr_t)t->loc, 64, t->loc_mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 12, .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr swr = { .wr_id = 13, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND_WITH_INV, .invalidate_rkey = rkey };
	enum ibv_wc_status status;
	struct ibv_wc wc;
	int ret;

	ret = ibv_post_recv(lb->qp[1], &rwr, &rbad);
	if (ret) {
		tap_diag("ibv_post_recv: %s", strerror(ret));
		return false;
	}
	if (vt_post_send_status(lb, lb->qp[0], &swr, &status))
		return false;
	if (expect_ok && status != IBV_WC_SUCCESS) {
		tap_diag("SEND with invalidate: %s", ibv_wc_status_str(status));
		return false;
	}
	/*
	 * The receive says whether the rkey was invalidated. A refused invalidation
	 * (class J) fails the receive, while the SEND itself may have been acknowledged.
	 * rxe reports the invalidation in the kernel's flag value (IB_WC_WITH_INVALIDATE,
	 * bit 2), which libibverbs reads as IBV_WC_IP_CSUM_OK: the rkey is what is checked.
	 */
	if (vt_poll_one(lb->recv_cq, &wc, VT_WAIT_MS))
		return false;
	if (!expect_ok) {
		if (wc.status == IBV_WC_SUCCESS)
			tap_diag("SEND with invalidate of %#x: the receive succeeded", rkey);
		return wc.status != IBV_WC_SUCCESS;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.invalidated_rkey != rkey) {
		tap_diag("receive: %s, flags %#x, invalidated rkey %#x (expected %#x)",
			 ibv_wc_status_str(wc.status), wc.wc_flags, wc.invalidated_rkey, rkey);
		return false;
	}
	return true;
}

/* An access of the whole window by lb->qp[0]: whether it completed as expected. */
static bool reaches(struct test *t, struct vt_loopback *lb, const struct window *w,
		    bool expect)
{
	enum ibv_wc_status status;

	if (access_status(t, lb, lb->qp[0], w, OP_WRITE, 0, WIN_LEN, &status, NULL))
		return false;
	if ((status == IBV_WC_SUCCESS) != expect)
		tap_diag("WRITE through the window: %s", ibv_wc_status_str(status));
	return (status == IBV_WC_SUCCESS) == expect;
}

static void check_invalidation(struct test *t)
{
	struct vt_loopback lb, lb2;
	enum ibv_wc_status status;
	struct window w;
	int m;

	for (m = MR_PINNED; m <= MR_ODP; m++) {
		const char *mr = mr_names[m];
		bool ok;

		if (!t->have[m]) {
			tap_skip("no ODP", "%s MR: invalidation checks", mr);
			continue;
		}
		/* Local invalidation, then a rebind on a fresh pair. */
		ok = vt_loopback_create_on(&lb, t->ctx, &t->opt, t->pd) == 0;
		ok = ok && window_open(t, &lb, &w, WIN_TYPE2, m) && reaches(t, &lb, &w, true) &&
		     local_inv(&lb, lb.qp[1], w.rkey, &status) == 0;
		if (ok && status != IBV_WC_SUCCESS) {
			tap_diag("LOCAL_INV: %s", ibv_wc_status_str(status));
			ok = false;
		}
		ok = ok && reaches(t, &lb, &w, false);
		tap_ok(ok, "%s MR: a type 2 window invalidated by LOCAL_INV reaches nothing", mr);
		vt_loopback_destroy(&lb);
		ok = vt_loopback_create_on(&lb, t->ctx, &t->opt, t->pd) == 0 &&
		     bind_status(&lb, lb.qp[1], &w, t->mr[m], (uintptr_t)t->buf[m] + WIN_OFF,
				 WIN_LEN, &status) == 0 && status == IBV_WC_SUCCESS &&
		     reaches(t, &lb, &w, true);
		tap_ok(ok, "%s MR: the invalidated window binds again, through another QP, and reaches its bytes",
		       mr);
		/* Remote invalidation by the peer. */
		ok = send_inv(t, &lb, w.rkey, true) && reaches(t, &lb, &w, false);
		tap_ok(ok, "%s MR: SEND with invalidate ends the window's access", mr);
		window_close(&w);
		vt_loopback_destroy(&lb);

		/* Invalidation through a QP the window is not bound to. */
		ok = vt_loopback_create_on(&lb, t->ctx, &t->opt, t->pd) == 0 &&
		     vt_loopback_create_on(&lb2, t->ctx, &t->opt, t->pd) == 0 &&
		     window_open(t, &lb, &w, WIN_TYPE2, m) &&
		     local_inv(&lb2, lb2.qp[1], w.rkey, &status) == 0;
		if (ok && status == IBV_WC_SUCCESS) {
			tap_diag("LOCAL_INV through another QP succeeded");
			ok = false;
		}
		ok = ok && reaches(t, &lb, &w, true);
		tap_ok(ok, "%s MR: LOCAL_INV of a type 2 window through another QP fails, the window still works",
		       mr);
		vt_loopback_destroy(&lb2);
		ok = vt_loopback_create_on(&lb2, t->ctx, &t->opt, t->pd) == 0 &&
		     send_inv(t, &lb2, w.rkey, false) && reaches(t, &lb, &w, true);
		tap_ok(ok, "%s MR: a peer's SEND with invalidate on another QP fails, the window still works",
		       mr);
		window_close(&w);
		vt_loopback_destroy(&lb2);
		vt_loopback_destroy(&lb);
	}

	/* A type 2 window allocated but never bound: nothing to invalidate. */
	memset(&w, 0, sizeof(w));
	w.kind = WIN_TYPE2;
	w.mw = ibv_alloc_mw(t->pd, IBV_MW_TYPE_2);
	{
		bool ok = w.mw && vt_loopback_create_on(&lb, t->ctx, &t->opt, t->pd) == 0 &&
			  local_inv(&lb, lb.qp[1], w.mw->rkey, &status) == 0 &&
			  status != IBV_WC_SUCCESS;

		tap_ok(ok, "LOCAL_INV of a type 2 window never bound fails");
		vt_loopback_destroy(&lb);
		ok = w.mw && vt_loopback_create_on(&lb, t->ctx, &t->opt, t->pd) == 0 &&
		     send_inv(t, &lb, w.mw->rkey, false);
		tap_ok(ok, "a peer's SEND with invalidate of a type 2 window never bound fails");
		vt_loopback_destroy(&lb);
	}
	window_close(&w);
}

/* The four objects of a teardown, a type 2 window bound over the MR through the QPs. */
enum obj { OBJ_QP, OBJ_MW, OBJ_MR, OBJ_PD, OBJS };
static const char *const obj_names[OBJS] = { "QP", "MW", "MR", "PD" };

struct objs {
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct vt_loopback lb;
	struct window w;
	unsigned char *mem;
	bool alive[OBJS];
};

static bool objs_make(struct test *t, struct objs *s, enum mr_kind m)
{
	int access = MR_ACCESS | (m == MR_ODP ? IBV_ACCESS_ON_DEMAND : 0);
	enum ibv_wc_status status;

	memset(s, 0, sizeof(*s));
	s->mem = vt_map_anon(MR_SIZE, PROT_READ | PROT_WRITE, 0);
	s->pd = ibv_alloc_pd(t->ctx);
	if (!s->mem || !s->pd) {
		tap_diag("ibv_alloc_pd: %s", strerror(errno));
		return false;
	}
	s->alive[OBJ_PD] = true;
	s->mr = ibv_reg_mr(s->pd, s->mem, MR_SIZE, access);
	if (!s->mr) {
		tap_diag("ibv_reg_mr(%s): %s", mr_names[m], strerror(errno));
		return false;
	}
	s->alive[OBJ_MR] = true;
	if (vt_loopback_create_on(&s->lb, t->ctx, &t->opt, s->pd))
		return false;
	s->alive[OBJ_QP] = true;
	s->w.kind = WIN_TYPE2;
	s->w.mw = ibv_alloc_mw(s->pd, IBV_MW_TYPE_2);
	if (!s->w.mw) {
		tap_diag("ibv_alloc_mw: %s", strerror(errno));
		return false;
	}
	s->alive[OBJ_MW] = true;
	if (bind_status(&s->lb, s->lb.qp[1], &s->w, s->mr, (uintptr_t)s->mem + WIN_OFF,
			WIN_LEN, &status) || status != IBV_WC_SUCCESS) {
		tap_diag("bind: %s", ibv_wc_status_str(status));
		return false;
	}
	return true;
}

/* Destroy one object: 0, or the errno of a refusal. */
static int objs_destroy(struct objs *s, enum obj o)
{
	int ret = 0, i;

	switch (o) {
	case OBJ_QP:
		/* The QPs first, then what only they used: their CQs and channels. */
		for (i = 0; i < 2; i++) {
			if (s->lb.qp[i] && ibv_destroy_qp(s->lb.qp[i]))
				return errno;
			s->lb.qp[i] = NULL;
		}
		vt_loopback_destroy(&s->lb);
		break;
	case OBJ_MW:
		ret = ibv_dealloc_mw(s->w.mw) ? errno : 0;
		break;
	case OBJ_MR:
		ret = ibv_dereg_mr(s->mr) ? errno : 0;
		break;
	case OBJ_PD:
		ret = ibv_dealloc_pd(s->pd) ? errno : 0;
		break;
	default:
		return EINVAL;
	}
	if (!ret)
		s->alive[o] = false;
	return ret;
}

/*
 * Tear s down in the order of perm, then again for what refused, until all is
 * gone; a refusal is allowed only for the MR while the window is bound to it and
 * for the PD while it has objects.
 */
static bool objs_teardown(struct objs *s, const enum obj *perm)
{
	int pass, i, ret;
	bool progress = true;

	for (pass = 0; progress; pass++) {
		progress = false;
		for (i = 0; i < OBJS; i++) {
			enum obj o = perm[i];

			if (!s->alive[o])
				continue;
			ret = objs_destroy(s, o);
			if (!ret) {
				progress = true;
				continue;
			}
			if ((o == OBJ_MR && s->alive[OBJ_MW] && s->alive[OBJ_QP]) ||
			    (o == OBJ_PD && (s->alive[OBJ_MR] || s->alive[OBJ_MW] ||
					     s->alive[OBJ_QP])))
				continue;
			tap_diag("destroying the %s failed: %s", obj_names[o], strerror(ret));
			return false;
		}
	}
	for (i = 0; i < OBJS; i++) {
		if (s->alive[i]) {
			tap_diag("the %s is still there", obj_names[i]);
			return false;
		}
	}
	return true;
}

static void check_teardown(struct test *t)
{
	enum obj perm[OBJS];
	int m, n, i, j, k;
	char order[64];

	for (m = MR_PINNED; m <= MR_ODP; m++) {
		/* Every permutation of the four, in lexicographic order (Heap's would do). */
		for (n = 0; n < 24; n++) {
			int rest[OBJS] = { 0, 1, 2, 3 }, left = OBJS, f = 6, r = n;
			struct objs s;
			bool ok;

			for (i = 0; i < OBJS; i++) {
				k = r / f;
				r %= f;
				perm[i] = rest[k];
				for (j = k; j < left - 1; j++)
					rest[j] = rest[j + 1];
				left--;
				f = left > 1 ? f / left : 1;
			}
			snprintf(order, sizeof(order), "%s, %s, %s, %s", obj_names[perm[0]],
				 obj_names[perm[1]], obj_names[perm[2]], obj_names[perm[3]]);
			if (!t->have[m]) {
				tap_skip("no ODP", "%s MR: teardown %s", mr_names[m], order);
				continue;
			}
			ok = objs_make(t, &s, m);
			ok = objs_teardown(&s, perm) && ok;
			munmap(s.mem, MR_SIZE);
			tap_ok(ok, "%s MR, type 2 window bound: teardown in the order %s",
			       mr_names[m], order);
		}
	}
}

/* A child that binds a window of each type, then exits with everything in place. */
static void check_exit(struct test *t)
{
	int m, status;
	pid_t pid;

	for (m = MR_PINNED; m <= MR_ODP; m++) {
		if (!t->have[m]) {
			tap_skip("no ODP", "%s MR: exit with windows bound", mr_names[m]);
			continue;
		}
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			struct ibv_context *ctx = vt_open_device(t->opt.dev);
			struct test c = *t;
			struct objs s;
			struct window w1;

			/* Its own context: a forked child does not use its parent's. */
			if (!ctx)
				_exit(2);
			c.ctx = ctx;
			if (!objs_make(&c, &s, m))
				_exit(3);
			w1.kind = WIN_TYPE1;
			w1.mw = ibv_alloc_mw(s.pd, IBV_MW_TYPE_1);
			c.pd = s.pd;
			c.mr[m] = s.mr;
			c.buf[m] = s.mem;
			if (!w1.mw || !window_open(&c, &s.lb, &w1, WIN_TYPE1, m))
				_exit(4);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid) {
			tap_ok(false, "%s MR: fork/waitpid: %s", mr_names[m], strerror(errno));
			continue;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			tap_diag("the child ended with status %#x", status);
		tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		       "%s MR: a process exits with type 1 and type 2 windows bound", mr_names[m]);
	}
}

/* Registrations whose addresses wrap past 2^64 are refused, one ending at 2^64 is not. */
static void check_wrapping_mr(struct test *t)
{
	unsigned char *p = vt_map_anon(2 * 4096, PROT_READ | PROT_WRITE, 0);
	int m;

	for (m = MR_PINNED; m <= MR_ODP; m++) {
		int access = MR_ACCESS | (m == MR_ODP ? IBV_ACCESS_ON_DEMAND : 0);
		struct ibv_mr *mr;

		if (!t->have[m] || !p) {
			tap_skip(p ? "no ODP" : "no memory", "%s MR: wrapping iova", mr_names[m]);
			tap_skip(p ? "no ODP" : "no memory", "%s MR: iova ending at 2^64",
				 mr_names[m]);
			continue;
		}
		errno = 0;
		mr = ibv_reg_mr_iova2(t->pd, p, 2 * 4096, 0xfffffffffffff000ull, access);
		tap_ok(!mr && errno == EINVAL,
		       "%s MR of 8 KiB at iova 0xfffffffffffff000 (wraps past 2^64) is refused with EINVAL (%s)",
		       mr_names[m], mr ? "registered" : strerror(errno));
		if (mr)
			ibv_dereg_mr(mr);
		mr = ibv_reg_mr_iova2(t->pd, p, 2 * 4096, 0xffffffffffffe000ull, access);
		tap_ok(mr != NULL, "%s MR of 8 KiB ending at 2^64 registers (%s)", mr_names[m],
		       mr ? "ok" : strerror(errno));
		if (mr)
			ibv_dereg_mr(mr);
	}
	if (p)
		munmap(p, 2 * 4096);
}

static bool setup(struct test *t)
{
	struct ibv_device_attr_ex attr;
	int m;

	if (ibv_query_device_ex(t->ctx, NULL, &attr)) {
		tap_diag("ibv_query_device_ex: %s", strerror(errno));
		return false;
	}
	t->pd = ibv_alloc_pd(t->ctx);
	t->loc = vt_map_anon(MR_SIZE, PROT_READ | PROT_WRITE, 0);
	if (!t->pd || !t->loc)
		return false;
	t->loc_mr = ibv_reg_mr(t->pd, t->loc, MR_SIZE, VT_PINNED_ACCESS);
	if (!t->loc_mr) {
		tap_diag("ibv_reg_mr: %s", strerror(errno));
		return false;
	}
	t->have[MR_PINNED] = true;
	t->have[MR_ODP] = attr.odp_caps.general_caps & IBV_ODP_SUPPORT;
	t->have[MR_IMPLICIT] = attr.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT;
	for (m = 0; m < MR_KINDS; m++) {
		if (!t->have[m])
			continue;
		t->buf[m] = vt_map_anon(MR_SIZE, PROT_READ | PROT_WRITE, 0);
		if (!t->buf[m])
			return false;
		if (m == MR_IMPLICIT)
			t->mr[m] = ibv_reg_mr(t->pd, NULL, SIZE_MAX,
					      MR_ACCESS | IBV_ACCESS_ON_DEMAND);
		else
			t->mr[m] = ibv_reg_mr(t->pd, t->buf[m], MR_SIZE,
					      MR_ACCESS | (m == MR_ODP ? IBV_ACCESS_ON_DEMAND : 0));
		if (!t->mr[m]) {
			tap_diag("ibv_reg_mr(%s, MW_BIND): %s", mr_names[m], strerror(errno));
			return false;
		}
	}
	return true;
}

int main(int argc, char **argv)
{
	struct test t = { .seed = 1 };
	int m;

	vt_parse_options(argc, argv, &t.opt);
	t.ctx = vt_open_device(t.opt.dev);
	if (!t.ctx)
		tap_bail("no RDMA device");
	if (!tap_ok(setup(&t), "a PD, pinned, ODP and implicit ODP MRs with MW_BIND"))
		tap_bail("no memory regions");

	check_accesses(&t);
	check_binds(&t);
	check_invalidation(&t);
	check_teardown(&t);
	check_exit(&t);
	check_wrapping_mr(&t);

	for (m = 0; m < MR_KINDS; m++) {
		if (t.mr[m] && ibv_dereg_mr(t.mr[m]))
			tap_diag("ibv_dereg_mr(%s): %s", mr_names[m], strerror(errno));
		if (t.buf[m])
			munmap(t.buf[m], MR_SIZE);
	}
	ibv_dereg_mr(t.loc_mr);
	munmap(t.loc, MR_SIZE);
	ibv_dealloc_pd(t.pd);
	ibv_close_device(t.ctx);
	return tap_done();
}
