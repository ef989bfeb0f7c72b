// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA READs retried while their responses are still on their way, and the READ after
 * them. The QPs' ACK timeout is the shortest there is (one jiffy): the requester
 * retries a 1 MiB READ whenever its responses pause, and the responder replays the READ
 * for each retry, also after the requester has completed it. Each round deregisters the
 * MR read from as soon as its READ completes, while replays may still be queued for it;
 * the next round's READ, on the same QP pair, must complete with the right bytes.
 *
 * Where rxe has its ODP test hook (odp_test_widen_hold), the pause is made for certain:
 * the source is an ODP MR on a transparent huge page, the hook holds the responder's
 * first fault until the requester has retried twice, and every round has late replays.
 * Elsewhere the rounds rely on the pauses that happen, and go on until some did.
 *
 * vmtest-class: dma
 */
#include "lib/odp.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define READ_SIZE	(1UL << 20)
#define HOLD_PARAM	VT_RXE_PARAMS "odp_test_widen_hold"
/* Held rounds; without the hook, rounds go on until MIN_REPLAYS, within MAX_ROUNDS. */
#define HELD_ROUNDS	4
#define MIN_ROUNDS	16
#define MIN_REPLAYS	1
#define MAX_ROUNDS	1000
/* Retries the requester makes while the responder is held. */
#define HELD_RETRIES	2
/* IBV_QP_TIMEOUT 1: 8 us, which rxe rounds up to one jiffy. */
#define SHORT_TIMEOUT	1

static struct vt_options opt;
static struct ibv_context *ctx;

static long hw_counter(const char *name)
{
	return vt_hw_counter(ctx, opt.port, name);
}

/* With the hook armed: wait until it holds the fault and the requester retried. */
static bool wait_held_and_retried(long retry_before)
{
	long long deadline = vt_now_ms() + VT_WAIT_MS;

	while (vt_now_ms() < deadline) {
		if (vt_read_long(HOLD_PARAM) == 2 &&
		    hw_counter("completer_retry_err") - retry_before >= HELD_RETRIES)
			return true;
		usleep(1000);
	}
	tap_diag("the hook held no fault, or the requester did not retry, within %d ms",
		 VT_WAIT_MS);
	return false;
}

/* A READ of all of src into dst; with @held, the responder's first fault is held. */
static bool read_all(struct vt_loopback *lb, unsigned char *src, struct ibv_mr *src_mr,
		     unsigned char *dst, struct ibv_mr *dst_mr, bool held)
{
	struct ibv_sge sge = { .addr = (uintptr_t)dst, .length = READ_SIZE,
			       .lkey = dst_mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)src, .rkey = src_mr->rkey },
	}, *bad;
	long retry_before = hw_counter("completer_retry_err");
	bool released = true;
	struct ibv_wc wc;
	int ret;

	if (held && !vt_write_str(HOLD_PARAM, "1")) {
		tap_diag("cannot arm %s: %s", HOLD_PARAM, strerror(errno));
		return false;
	}
	ret = ibv_post_send(lb->qp[0], &wr, &bad);
	if (ret) {
		tap_diag("ibv_post_send(RDMA READ): %s", strerror(ret));
		if (held)
			vt_write_str(HOLD_PARAM, "0");
		return false;
	}
	if (held) {
		released = wait_held_and_retried(retry_before);
		/* Never leave the hook armed: the next ODP fault of anyone would wait. */
		vt_write_str(HOLD_PARAM, "0");
	}
	if (vt_poll_one(lb->send_cq, &wc, VT_WAIT_MS))
		return false;
	if (wc.status != IBV_WC_SUCCESS) {
		tap_diag("RDMA READ of %lu bytes: %s", READ_SIZE, ibv_wc_status_str(wc.status));
		return false;
	}
	return released;
}

/* One round: a fresh source MR, a READ of all of it, the MR deregistered at once. */
static bool read_round(struct vt_loopback *lb, int access, unsigned char *dst,
		       struct ibv_mr *dst_mr, unsigned int seed, bool held)
{
	struct ibv_mr *src_mr = NULL;
	struct vt_thp_range r = { 0 };
	/*
	 * Held: the MR covers the whole huge page, more than the READ, so
	 * that the responder's fault of the READ widens to the rest of the
	 * huge page: the step the hook holds.
	 */
	size_t mr_size = held ? VT_THP_SIZE : READ_SIZE;
	unsigned char *src;
	bool ok = false;
	long bad;

	if (held) {
		if (!vt_thp_map(&r))
			return false;
		src = r.p;
	} else {
		src = vt_map_anon(READ_SIZE, PROT_READ | PROT_WRITE, 0);
		if (!src)
			return false;
	}
	vt_fill(src, READ_SIZE, seed);
	memset(dst, 0, READ_SIZE);
	src_mr = ibv_reg_mr(lb->pd, src, mr_size, access);
	if (!src_mr) {
		tap_diag("ibv_reg_mr(%zu bytes): %s", mr_size, strerror(errno));
	} else if (read_all(lb, src, src_mr, dst, dst_mr, held)) {
		bad = vt_check(dst, READ_SIZE, seed);
		if (bad >= 0)
			tap_diag("byte %ld of %lu differs", bad, READ_SIZE);
		ok = bad < 0;
	}
	if (src_mr)
		ibv_dereg_mr(src_mr);
	if (held)
		vt_thp_unmap(&r);
	else
		munmap(src, READ_SIZE);
	return ok;
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr = { 0 };
	long dup_before, dup = 0, retry_before, retry = 0;
	struct vt_odp_buf dst;
	struct vt_loopback lb;
	bool odp, held, ok = true;
	int rounds = 0;

	vt_parse_options(argc, argv, &opt);
	opt.qp_timeout = SHORT_TIMEOUT;
	tap_plan(2);
	ctx = vt_open_device(opt.dev);
	if (!ctx)
		tap_bail("cannot open the RDMA device");
	if (ibv_query_device_ex(ctx, NULL, &attr))
		tap_bail("ibv_query_device_ex: %s", strerror(errno));
	odp = (attr.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
	      (attr.odp_caps.per_transport_caps.rc_odp_caps & IBV_ODP_SUPPORT_READ);
	held = odp && vt_read_long(HOLD_PARAM) >= 0;
	if (vt_loopback_create(&lb, ctx, &opt))
		tap_bail("no connected QP pair");
	if (!vt_odp_buf_init(&dst, lb.pd, READ_SIZE, 0, VT_PINNED_ACCESS))
		tap_bail("cannot register a pinned MR");

	dup_before = hw_counter("duplicate_request");
	retry_before = hw_counter("completer_retry_err");
	if (dup_before < 0 || retry_before < 0)
		tap_bail("cannot read the device's duplicate_request and completer_retry_err counters");
	/* A READ that never completes leaves the QP pair unusable: stop there. */
	while (ok && (held ? rounds < HELD_ROUNDS :
		      rounds < MAX_ROUNDS && (rounds < MIN_ROUNDS || dup < MIN_REPLAYS))) {
		ok = read_round(&lb, odp ? VT_ODP_ACCESS : VT_PINNED_ACCESS, dst.p, dst.mr,
				0x5e000 + rounds, held);
		rounds++;
		vt_hw_counters_settle();
		dup = hw_counter("duplicate_request") - dup_before;
		retry = hw_counter("completer_retry_err") - retry_before;
		if (!ok)
			tap_diag("round %d failed (%ld retries, %ld duplicate requests so far)",
				 rounds, retry, dup);
	}
	tap_ok(ok, "%d READs of 1 MiB, each from a fresh %s MR deregistered as soon as its READ completed%s: %s",
	       rounds, odp ? "ODP" : "pinned",
	       held ? ", the responder held until the requester retried" : "",
	       ok ? "all completed, data right" : "one failed");
	/* Without replays the rounds prove nothing. */
	tap_ok(dup >= (held ? rounds * HELD_RETRIES : MIN_REPLAYS),
	       "the requester retried (%ld retries) and the responder replayed (%ld duplicate requests)",
	       retry, dup);

	vt_odp_buf_fini(&dst);
	vt_loopback_destroy(&lb);
	ibv_close_device(ctx);
	return tap_done();
}
