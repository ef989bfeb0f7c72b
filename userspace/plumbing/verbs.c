// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "verbs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VT_CQ_DEPTH 64

const struct vt_transfer vt_transfers[VT_NTRANSFERS] = {
	{ IBV_WR_SEND, "SEND/RECV" },
	{ IBV_WR_RDMA_WRITE, "RDMA WRITE" },
	{ IBV_WR_RDMA_READ, "RDMA READ" },
};

/* The options of this program beyond the common ones (vt_extra_options()). */
static const struct vt_extra_option *extra_opts;

void vt_extra_options(const struct vt_extra_option *extra)
{
	extra_opts = extra;
}

static void usage(const char *prog, int status)
{
	FILE *f = status ? stderr : stdout;
	const struct vt_extra_option *x;

	fprintf(f,
		"usage: %s [--dev NAME] [--port N] [--gid N]%s\n"
		"  --dev NAME  RDMA device (default: the first one)\n"
		"  --port N    port number (default: 1)\n"
		"  --gid N     GID index of a RoCEv2 IPv4-mapped GID (default: 1)\n",
		prog, extra_opts && extra_opts->name ? " [OPTIONS]" : "");
	for (x = extra_opts; x && x->name; x++) {
		int pad = 8 - (int)strlen(x->name);

		if (x->text)
			fprintf(f, "  --%s TEXT%*s%s%s%s\n", x->name, pad > 4 ? pad - 3 : 1, "",
				x->help, *x->text && **x->text ? ", default: " : "",
				*x->text ? *x->text : "");
		else
			fprintf(f, "  --%s N%*s%s (default: %ld)\n", x->name, pad > 1 ? pad : 1, "",
				x->help, *x->value);
	}
	fprintf(f, "Prints TAP; exits non-zero when a check fails.\n");
	exit(status);
}

long vt_parse_number(const char *prog, const char *opt, const char *s, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > max) {
		fprintf(stderr, "%s: --%s wants a number from 0 to %ld, not '%s' (see --help)\n",
			prog, opt, max, s);
		exit(2);
	}
	return v;
}

const struct option vt_device_longopts[VT_DEVICE_OPTIONS] = {
	{ "dev", required_argument, NULL, 'd' },
	{ "port", required_argument, NULL, 'p' },
	{ "gid", required_argument, NULL, 'g' },
};

void vt_options_init(struct vt_options *opt)
{
	opt->dev = NULL;
	opt->port = 1;
	opt->gid_index = 1;
	opt->qp_timeout = 14;
}

bool vt_device_option(const char *prog, int c, const char *arg, struct vt_options *opt)
{
	switch (c) {
	case 'd':
		opt->dev = arg;
		return true;
	case 'p':
		opt->port = (uint8_t)vt_parse_number(prog, "port", arg, 255);
		return true;
	case 'g':
		opt->gid_index = (int)vt_parse_number(prog, "gid", arg, 65535);
		return true;
	}
	return false;
}

#define VT_MAX_EXTRA_OPTIONS 8

void vt_parse_options(int argc, char **argv, struct vt_options *opt)
{
	struct option longopts[VT_DEVICE_OPTIONS + 1 + VT_MAX_EXTRA_OPTIONS + 1] = {
		[VT_DEVICE_OPTIONS] = { "help", no_argument, NULL, 'h' },
	};
	int c, n = 0, first = VT_DEVICE_OPTIONS + 1;
	const struct vt_extra_option *x;

	memcpy(longopts, vt_device_longopts, sizeof(vt_device_longopts));
	for (; extra_opts && extra_opts[n].name; n++) {
		if (n == VT_MAX_EXTRA_OPTIONS) {
			fprintf(stderr, "%s: more than %d options of its own\n", argv[0],
				VT_MAX_EXTRA_OPTIONS);
			exit(2);
		}
		longopts[first + n] = (struct option){ extra_opts[n].name, required_argument,
						       NULL, 256 + n };
	}
	vt_options_init(opt);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (vt_device_option(argv[0], c, optarg, opt))
			continue;
		if (c == 'h')
			usage(argv[0], 0);
		if (c < 256 || c >= 256 + n)
			usage(argv[0], 2);
		x = &extra_opts[c - 256];
		if (x->text)
			*x->text = optarg;
		else
			*x->value = vt_parse_number(argv[0], x->name, optarg, x->max);
	}
	if (optind != argc)
		usage(argv[0], 2);
}

struct ibv_context *vt_open_device(const char *name)
{
	struct ibv_device **list, *dev = NULL;
	struct ibv_context *ctx;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list) {
		fprintf(stderr, "ibv_get_device_list: %s (is the RDMA core loaded?)\n",
			strerror(errno));
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (!name || !strcmp(ibv_get_device_name(list[i]), name)) {
			dev = list[i];
			break;
		}
	}
	if (!dev) {
		fprintf(stderr, "no RDMA device %s among %d found (create one with 'rdma link add')\n",
			name ? name : "at all", n);
		ibv_free_device_list(list);
		return NULL;
	}
	ctx = ibv_open_device(dev);
	if (!ctx)
		fprintf(stderr, "ibv_open_device(%s): %s\n", ibv_get_device_name(dev),
			strerror(errno));
	ibv_free_device_list(list);
	return ctx;
}

int vt_connect_rc(struct ibv_qp *qp, const struct vt_rc_path *path)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = path->port,
		.qp_access_flags = path->access,
	};
	int ret;

	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS);
	if (ret) {
		fprintf(stderr, "ibv_modify_qp(qpn %u, INIT): %s\n", qp->qp_num, strerror(ret));
		return -1;
	}

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = IBV_MTU_1024;
	attr.dest_qp_num = path->remote_qpn;
	attr.rq_psn = path->rq_psn;
	attr.max_dest_rd_atomic = path->rd_atomic;
	attr.min_rnr_timer = 12;
	attr.ah_attr.is_global = 1;
	attr.ah_attr.port_num = path->port;
	attr.ah_attr.grh.dgid = path->dgid;
	attr.ah_attr.grh.sgid_index = path->gid_index;
	attr.ah_attr.grh.hop_limit = path->hop_limit;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER);
	if (ret) {
		fprintf(stderr, "ibv_modify_qp(qpn %u, RTR to qpn %u): %s\n", qp->qp_num,
			path->remote_qpn, strerror(ret));
		return -1;
	}

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = path->timeout;
	attr.retry_cnt = path->retry_cnt;
	attr.rnr_retry = path->rnr_retry;
	attr.sq_psn = path->sq_psn;
	attr.max_rd_atomic = path->rd_atomic;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (ret) {
		fprintf(stderr, "ibv_modify_qp(qpn %u, RTS): %s\n", qp->qp_num, strerror(ret));
		return -1;
	}
	return 0;
}

/* The path from one QP of a loopback pair to the other. */
static int loopback_connect(const struct vt_loopback *lb, struct ibv_qp *qp,
			    uint32_t remote_qpn)
{
	struct vt_rc_path path = {
		.port = lb->port,
		.gid_index = lb->gid_index,
		.dgid = lb->gid,
		.remote_qpn = remote_qpn,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | lb->extra_access,
		.hop_limit = 1,
		.rd_atomic = 4,
		.timeout = lb->qp_timeout,
		.retry_cnt = 7,
		.rnr_retry = 7,
	};

	return vt_connect_rc(qp, &path);
}

int vt_loopback_create(struct vt_loopback *lb, struct ibv_context *ctx,
		       const struct vt_options *opt)
{
	return vt_loopback_create_on(lb, ctx, opt, NULL);
}

int vt_loopback_create_on(struct vt_loopback *lb, struct ibv_context *ctx,
			  const struct vt_options *opt, struct ibv_pd *pd)
{
	return vt_loopback_create_ex(lb, ctx, opt, pd, 0, 0);
}

int vt_loopback_create_ex(struct vt_loopback *lb, struct ibv_context *ctx,
			  const struct vt_options *opt, struct ibv_pd *pd,
			  uint64_t send_ops_flags, int extra_access)
{
	struct ibv_qp_init_attr_ex init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 4,
			 .max_recv_sge = 4 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     (send_ops_flags ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0),
		.send_ops_flags = send_ops_flags,
	};
	int i, flags, ret;

	memset(lb, 0, sizeof(*lb));
	lb->ctx = ctx;
	lb->port = opt->port;
	lb->gid_index = opt->gid_index;
	lb->extra_access = extra_access;
	lb->qp_timeout = opt->qp_timeout;
	ret = ibv_query_gid(ctx, lb->port, lb->gid_index, &lb->gid);
	if (ret) {
		fprintf(stderr, "ibv_query_gid(port %u, index %d): %s\n", lb->port,
			lb->gid_index, strerror(errno));
		return -1;
	}
	lb->pd = pd;
	if (!lb->pd) {
		lb->pd = ibv_alloc_pd(ctx);
		if (!lb->pd) {
			fprintf(stderr, "ibv_alloc_pd: %s\n", strerror(errno));
			goto err;
		}
		lb->own_pd = true;
	}
	for (i = 0; i < 2; i++) {
		lb->channel[i] = ibv_create_comp_channel(ctx);
		if (!lb->channel[i]) {
			fprintf(stderr, "ibv_create_comp_channel: %s\n", strerror(errno));
			goto err;
		}
		/* Never blocks in ibv_get_cq_event(): vt_poll_one() has a time limit. */
		flags = fcntl(lb->channel[i]->fd, F_GETFL);
		if (flags < 0 || fcntl(lb->channel[i]->fd, F_SETFL, flags | O_NONBLOCK)) {
			fprintf(stderr, "fcntl(completion channel, O_NONBLOCK): %s\n",
				strerror(errno));
			goto err;
		}
	}
	lb->send_cq = ibv_create_cq(ctx, VT_CQ_DEPTH, NULL, lb->channel[0], 0);
	lb->recv_cq = ibv_create_cq(ctx, VT_CQ_DEPTH, NULL, lb->channel[1], 0);
	if (!lb->send_cq || !lb->recv_cq) {
		fprintf(stderr, "ibv_create_cq(%d entries): %s\n", VT_CQ_DEPTH, strerror(errno));
		goto err;
	}
	init.pd = lb->pd;
	init.send_cq = lb->send_cq;
	init.recv_cq = lb->recv_cq;
	for (i = 0; i < 2; i++) {
		lb->qp[i] = ibv_create_qp_ex(ctx, &init);
		if (!lb->qp[i]) {
			fprintf(stderr, "ibv_create_qp_ex(RC, send ops %#llx): %s\n",
				(unsigned long long)send_ops_flags, strerror(errno));
			goto err;
		}
	}
	if (loopback_connect(lb, lb->qp[0], lb->qp[1]->qp_num) ||
	    loopback_connect(lb, lb->qp[1], lb->qp[0]->qp_num))
		goto err;
	return 0;
err:
	vt_loopback_destroy(lb);
	return -1;
}

void vt_loopback_destroy(struct vt_loopback *lb)
{
	int i;

	for (i = 0; i < 2; i++)
		if (lb->qp[i] && ibv_destroy_qp(lb->qp[i]))
			fprintf(stderr, "ibv_destroy_qp: %s\n", strerror(errno));
	if (lb->send_cq && ibv_destroy_cq(lb->send_cq))
		fprintf(stderr, "ibv_destroy_cq: %s\n", strerror(errno));
	if (lb->recv_cq && ibv_destroy_cq(lb->recv_cq))
		fprintf(stderr, "ibv_destroy_cq: %s\n", strerror(errno));
	for (i = 0; i < 2; i++)
		if (lb->channel[i] && ibv_destroy_comp_channel(lb->channel[i]))
			fprintf(stderr, "ibv_destroy_comp_channel: %s\n", strerror(errno));
	if (lb->pd && lb->own_pd && ibv_dealloc_pd(lb->pd))
		fprintf(stderr, "ibv_dealloc_pd: %s\n", strerror(errno));
	memset(lb->qp, 0, sizeof(lb->qp));
	memset(lb->channel, 0, sizeof(lb->channel));
	lb->send_cq = NULL;
	lb->recv_cq = NULL;
	lb->pd = NULL;
}

long long vt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long long vt_now_ms(void)
{
	return vt_now_ns() / 1000000;
}

/*
 * A missing completion is rare and hard to reproduce: print the device's non-zero
 * hardware counters (RNR and retry counts, ODP faults and errors) beside it, so the
 * failure says whether the requester retried, was refused, or never ran.
 */
static void dump_hw_counters(struct ibv_context *ctx)
{
	const char *name = ibv_get_device_name(ctx->device);
	char path[512], line[64];
	struct dirent *e;
	FILE *f;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters", name);
	d = opendir(path);
	if (!d)
		return;
	fprintf(stderr, "%s counters:", name);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/%s",
			 name, e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) && strcmp(line, "0\n"))
			fprintf(stderr, " %s=%.*s", e->d_name, (int)strcspn(line, "\n"), line);
		fclose(f);
	}
	fprintf(stderr, "\n");
	closedir(d);
}

int vt_time_factor(void)
{
	const char *factor = getenv("VT_TIME_FACTOR");
	char *end;
	long f;

	if (!factor)
		return 1;
	f = strtol(factor, &end, 10);
	return *end || f < 1 || f > 100 ? 1 : (int)f;
}

int vt_wait_ms(void)
{
	static int ms;

	if (!ms)
		ms = 60000 * vt_time_factor();
	return ms;
}

/*
 * Completions sooner than this are waited for by spinning: latency tests stay exact.
 * Longer waits sleep until the completion's event, so that the waiting program leaves
 * the CPU to the kernel threads that do soft-RoCE's work and wakes when the completion
 * comes, not at the next timer tick (nanosleep() without high-resolution timers sleeps
 * whole ticks of 4 ms: on a 1 MiB message that is a quarter of its time).
 */
#define SPIN_NS		1000000
#define POLL_SLEEP_US	200

/*
 * Wait up to timeout_ms for the event of armed cq on its completion channel, whose fd
 * does not block. 0 when an event came, or the wait ended without one (a signal, the
 * time limit, another waiter took it): the caller polls again. -1 on error.
 */
static int wait_cq_event(struct ibv_cq *cq, int timeout_ms)
{
	struct pollfd pfd = { .fd = cq->channel->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int n;

	n = poll(&pfd, 1, timeout_ms);
	if (n < 0 && errno != EINTR) {
		fprintf(stderr, "poll(completion channel): %s\n", strerror(errno));
		return -1;
	}
	if (n <= 0)
		return 0;
	if (ibv_get_cq_event(cq->channel, &ev_cq, &ev_ctx)) {
		if (errno == EAGAIN)
			return 0;
		fprintf(stderr, "ibv_get_cq_event: %s\n", strerror(errno));
		return -1;
	}
	ibv_ack_cq_events(ev_cq, 1);
	return 0;
}

int vt_poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms)
{
	const struct timespec pause = { .tv_nsec = POLL_SLEEP_US * 1000 };
	long long start = vt_now_ns(), waited;
	bool armed = false;
	int n;

	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0) {
			fprintf(stderr, "ibv_poll_cq: error %d\n", n);
			return -1;
		}
		if (n == 1)
			return 0;
		waited = vt_now_ns() - start;
		if (waited >= timeout_ms * 1000000LL)
			break;
		if (waited < SPIN_NS)
			continue;
		if (!cq->channel) {
			nanosleep(&pause, NULL);
		} else if (!armed) {
			/* Poll once more after arming: a completion before it raises no event. */
			n = ibv_req_notify_cq(cq, 0);
			if (n) {
				fprintf(stderr, "ibv_req_notify_cq: %s\n", strerror(n));
				return -1;
			}
			armed = true;
		} else {
			if (wait_cq_event(cq, timeout_ms - (int)(waited / 1000000)))
				return -1;
			armed = false;
		}
	}
	fprintf(stderr, "no completion within %d ms\n", timeout_ms);
	dump_hw_counters(cq->context);
	return -1;
}

int vt_post_send_status(struct vt_loopback *lb, struct ibv_qp *qp, struct ibv_send_wr *wr,
			enum ibv_wc_status *status)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int ret;

	wr->send_flags |= IBV_SEND_SIGNALED;
	ret = ibv_post_send(qp, wr, &bad);
	if (ret) {
		fprintf(stderr, "ibv_post_send(opcode %d): %s\n", wr->opcode, strerror(ret));
		return -1;
	}
	if (vt_poll_one(lb->send_cq, &wc, VT_WAIT_MS))
		return -1;
	if (wc.wr_id != wr->wr_id) {
		fprintf(stderr, "completion of wr_id %llu instead of %llu\n",
			(unsigned long long)wc.wr_id, (unsigned long long)wr->wr_id);
		return -1;
	}
	*status = wc.status;
	return 0;
}

int vt_rdma(struct vt_loopback *lb, enum ibv_wr_opcode op, void *src, struct ibv_mr *src_mr,
	    void *dst, struct ibv_mr *dst_mr, size_t len, enum ibv_wc_status *status)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1, .opcode = op };
	struct ibv_qp *qp;

	if (op == IBV_WR_RDMA_WRITE) {
		sge = (struct ibv_sge){ (uintptr_t)src, (uint32_t)len, src_mr->lkey };
		wr.wr.rdma.remote_addr = (uintptr_t)dst;
		wr.wr.rdma.rkey = dst_mr->rkey;
		qp = lb->qp[0];
	} else {
		sge = (struct ibv_sge){ (uintptr_t)dst, (uint32_t)len, dst_mr->lkey };
		wr.wr.rdma.remote_addr = (uintptr_t)src;
		wr.wr.rdma.rkey = src_mr->rkey;
		qp = lb->qp[1];
	}
	return vt_post_send_status(lb, qp, &wr, status);
}

int vt_send_recv(struct vt_loopback *lb, void *src, struct ibv_mr *src_mr, void *dst,
		 struct ibv_mr *dst_mr, size_t len)
{
	struct ibv_sge rsge = { (uintptr_t)dst, (uint32_t)len, dst_mr->lkey };
	struct ibv_sge ssge = { (uintptr_t)src, (uint32_t)len, src_mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rsge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr swr = { .wr_id = 2, .sg_list = &ssge, .num_sge = 1,
				   .opcode = IBV_WR_SEND };
	struct ibv_wc wc;
	int ret;

	ret = ibv_post_recv(lb->qp[1], &rwr, &rbad);
	if (ret) {
		fprintf(stderr, "ibv_post_recv: %s\n", strerror(ret));
		return -1;
	}
	if (vt_post_send_wait(lb, lb->qp[0], &swr) || vt_poll_one(lb->recv_cq, &wc, VT_WAIT_MS))
		return -1;
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV || wc.byte_len != len) {
		fprintf(stderr, "receive completion: %s, opcode %d, %u bytes (expected %zu)\n",
			ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len, len);
		return -1;
	}
	return 0;
}

int vt_post_send_wait(struct vt_loopback *lb, struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	enum ibv_wc_status status;

	if (vt_post_send_status(lb, qp, wr, &status))
		return -1;
	if (status != IBV_WC_SUCCESS) {
		fprintf(stderr, "completion of wr_id %llu: %s\n",
			(unsigned long long)wr->wr_id, ibv_wc_status_str(status));
		return -1;
	}
	return 0;
}

