/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The verbs plumbing of the tools, the library's tests, tests/verbs and tests/bench:
 * option parsing, opening a device by name, a pair of RC QPs connected to each other
 * through one port (loopback), and posting a work request and waiting for its
 * completion. Every failure prints what was attempted and
 * errno to stderr and returns -1 (or NULL), so a test can report it and go on.
 */
#ifndef VT_VERBS_H
#define VT_VERBS_H

#include <getopt.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pattern.h"

struct vt_options {
	const char *dev;	/* RDMA device name; NULL: the first one */
	uint8_t port;
	int gid_index;		/* RoCEv2 IPv4-mapped GID of the guest's address */
	uint8_t qp_timeout;	/* the loopback QPs' local ACK timeout, 4.096 us * 2^n */
};

/* An option of one program, beyond the ones every program takes: a number or a text. */
struct vt_extra_option {
	const char *name;	/* --name N, or --name TEXT when text is set */
	const char *help;
	long max;		/* N from 0 to max */
	long *value;		/* the default before parsing, the value after */
	const char **text;	/* a text option: its default before parsing, its value after */
};

/* The options vt_parse_options() takes besides its own: an array ending with { 0 }. */
void vt_extra_options(const struct vt_extra_option *extra);

/* Parse --dev NAME, --port N, --gid N; prints usage and exits on bad input. */
void vt_parse_options(int argc, char **argv, struct vt_options *opt);

/*
 * For a program with a parser of its own (the tools): the getopt_long() entries of the
 * options every program takes (--dev, --port, --gid, returning 'd', 'p', 'g'), the
 * defaults, and taking one of them: false when @c is none of them. A bad value is said
 * ("PROG: --port wants a number from 0 to 255, not 'x' (see --help)") with exit(2).
 */
#define VT_DEVICE_OPTIONS 3
extern const struct option vt_device_longopts[VT_DEVICE_OPTIONS];
void vt_options_init(struct vt_options *opt);
bool vt_device_option(const char *prog, int c, const char *arg, struct vt_options *opt);
/* A number from 0 to @max for option --@opt, said and exit(2) when it is not. */
long vt_parse_number(const char *prog, const char *opt, const char *s, long max);

struct ibv_context *vt_open_device(const char *name);

/* Where an RC QP sends to and how it behaves on the way; see vt_connect_rc(). */
struct vt_rc_path {
	uint8_t port;
	int gid_index;		/* the local GID the QP sends from */
	union ibv_gid dgid;	/* the remote QP's GID */
	uint32_t remote_qpn;
	int access;		/* IBV_ACCESS_* the remote side may use on this QP */
	uint32_t sq_psn, rq_psn;
	uint8_t hop_limit;
	uint8_t rd_atomic;	/* READ/atomic requests in flight, each way */
	uint8_t timeout;	/* local ACK timeout, 4.096 us * 2^n */
	uint8_t retry_cnt, rnr_retry;
};

/* Move a new RC QP through INIT and RTR to RTS along path: 0, or -1 said on stderr. */
int vt_connect_rc(struct ibv_qp *qp, const struct vt_rc_path *path);

/* Two RC QPs on one device and port, each connected to the other. */
struct vt_loopback {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *send_cq;	/* completions of posted sends, both QPs */
	struct ibv_cq *recv_cq;	/* completions of posted receives, both QPs */
	struct ibv_comp_channel *channel[2];	/* the events of send_cq and recv_cq */
	struct ibv_qp *qp[2];
	union ibv_gid gid;
	uint8_t port;
	int gid_index;
	bool own_pd;		/* pd was allocated by vt_loopback_create */
	int extra_access;	/* QP access flags beyond local/remote write, read, atomic */
	uint8_t qp_timeout;	/* from vt_options */
};

int vt_loopback_create(struct vt_loopback *lb, struct ibv_context *ctx,
		       const struct vt_options *opt);
/* The same on an existing PD, which vt_loopback_destroy() then leaves alone. */
int vt_loopback_create_on(struct vt_loopback *lb, struct ibv_context *ctx,
			  const struct vt_options *opt, struct ibv_pd *pd);
/*
 * The same with QPs made by ibv_create_qp_ex() for the extended send operations
 * send_ops_flags (IBV_QP_EX_WITH_*), and extra_access in the QPs' access flags.
 */
int vt_loopback_create_ex(struct vt_loopback *lb, struct ibv_context *ctx,
			  const struct vt_options *opt, struct ibv_pd *pd,
			  uint64_t send_ops_flags, int extra_access);
void vt_loopback_destroy(struct vt_loopback *lb);

/*
 * How long a completion may take before it counts as missing: long, since a machine
 * that is busy with other work makes completions slow, not wrong; 60 s times the
 * profile's slowness (VT_TIME_FACTOR in the environment, the debug kernel's 3).
 */
#define VT_WAIT_MS vt_wait_ms()
int vt_wait_ms(void);

/* How much slower this profile's kernel runs: VT_TIME_FACTOR (1 to 100), else 1. */
int vt_time_factor(void);

/*
 * The one clock of every program here, CLOCK_MONOTONIC: in nanoseconds for measuring,
 * in milliseconds for deadlines and for saying how long a wait took.
 */
long long vt_now_ns(void);
long long vt_now_ms(void);

/*
 * Wait up to timeout_ms for one completion on cq. 0 on success, -1 on error or timeout.
 * It spins for the first millisecond, then sleeps until the CQ's completion event when
 * cq has a completion channel (vt_loopback's have one), else between polls, leaving the
 * CPU to the kernel threads that do soft-RoCE's work.
 */
int vt_poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms);

/*
 * Post wr on qp and wait for its completion on the send CQ; the completion must be
 * IBV_WC_SUCCESS.
 */
int vt_post_send_wait(struct vt_loopback *lb, struct ibv_qp *qp, struct ibv_send_wr *wr);

/*
 * Post wr on qp and wait for its completion on the send CQ, whatever its status:
 * 0 with *status set, or -1 when posting failed or nothing completed.
 */
int vt_post_send_status(struct vt_loopback *lb, struct ibv_qp *qp, struct ibv_send_wr *wr,
			enum ibv_wc_status *status);

/*
 * RDMA WRITE of len bytes from src (qp[0]'s side) to dst, or RDMA READ by qp[1] of src
 * into dst, and wait for its completion: 0 with *status set, or -1 as above.
 */
int vt_rdma(struct vt_loopback *lb, enum ibv_wr_opcode op, void *src, struct ibv_mr *src_mr,
	    void *dst, struct ibv_mr *dst_mr, size_t len, enum ibv_wc_status *status);

/*
 * SEND of len bytes from src on qp[0] into a receive of dst posted on qp[1]; both
 * completions must succeed and the receive must have len bytes. 0 or -1.
 */
int vt_send_recv(struct vt_loopback *lb, void *src, struct ibv_mr *src_mr, void *dst,
		 struct ibv_mr *dst_mr, size_t len);

/* The three ways the tests move data, with their names for test lines. */
struct vt_transfer {
	enum ibv_wr_opcode op;	/* IBV_WR_SEND stands for SEND/RECV */
	const char *name;
};
#define VT_NTRANSFERS 3
extern const struct vt_transfer vt_transfers[VT_NTRANSFERS];

#endif
