// SPDX-License-Identifier: GPL-2.0
/*
 * Secret memory (memfd_secret(2)) under MRs. Its pages are gone from the kernel's direct
 * map, and no device may reach them. Pinned registration is refused (GUP refuses secret
 * memory). An ODP MR over it registers, since nothing is faulted then, but every access
 * through it must fail cleanly: RDMA WRITE from it, RDMA READ into it, both as the
 * remote side, an atomic, an ATOMIC WRITE, SEND and RECV, through an implicit MR, and
 * prefetch. Each such
 * operation completes with an error, the secret bytes stay as the process wrote them,
 * nothing of them reaches the other buffer, the ODP fault path counts the refusal, and
 * the device keeps working. A persistent FLUSH over it fails (it is not persistent memory)
 * without taking a page. Kernels before the fix oops in rxe's copy (the worker dies
 * holding the MR's lock), which the harness sees on the console.
 *
 * The suite also runs this program as an unprivileged user: memfd_secret() needs no
 * privilege, so neither may the attack.
 *
 * vmtest-class: dma
 */
#include "lib/odp.h"
#include "lib/rxe_raw.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

#define SECRET_PAGES	4
#define SECRET_SEED	91
#define OTHER_SEED	92
/* One packet at any MTU, so that a refused access faults exactly once. */
#define OP_LEN		256
#define TESTS		19

static struct vt_options opt;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static long page_size;
static bool have_implicit;
/* The completion of a request whose source the requester cannot fault (measured). */
static enum ibv_wc_status source_fault_status;

struct secret {
	int fd;
	unsigned char *p;
	size_t size;
	struct ibv_mr *mr;	/* ODP MR over p */
};

/* A pinned buffer on the other side of each operation. */
static struct vt_odp_buf other;

static bool secret_intact(const struct secret *s)
{
	long at = vt_check(s->p, s->size, SECRET_SEED);

	if (at >= 0)
		tap_diag("secret byte %ld changed", at);
	return at < 0;
}

static bool other_intact(void)
{
	long at = vt_check(other.p, other.size, OTHER_SEED);

	if (at >= 0)
		tap_diag("byte %ld of the other buffer changed", at);
	return at < 0;
}

/*
 * Why the ODP counters cannot be read (a kernel without rxe's); NULL when they can.
 * Without them the checks judge completions and bytes only, which still shows a
 * kernel that hands secret memory to the device.
 */
static const char *no_counters;

static bool counters(long *c)
{
	if (no_counters) {
		memset(c, 0, VT_ODP_NCOUNTERS * sizeof(*c));
		return true;
	}
	return vt_odp_snapshot(ctx, opt.port, c);
}

/* The port's ODP fault error counter: each refused fault counts once. */
static bool fault_errors(long *v)
{
	long c[VT_ODP_NCOUNTERS];

	if (!counters(c))
		return false;
	*v = c[VT_ODP_FAULT_ERRORS];
	return true;
}

/*
 * The counter after a refused access: read again until it moves past @before, for at
 * most 2 s. The kernel serves it from a cache that lives some jiffies, and under
 * emulation jiffies can lag the time the test waited: one read may still be the old
 * value. What it moved to is judged by the caller.
 */
static bool fault_errors_after(long before, long *v)
{
	int i;

	for (i = 0; i < 100; i++) {
		if (!fault_errors(v))
			return false;
		if (no_counters || *v > before)
			break;
	}
	return true;
}

/*
 * Post one RDMA operation on a fresh QP pair (a refused access leaves its pair in the
 * error state) and check it was refused with want, left both buffers alone and counted
 * one ODP fault error.
 */
static void expect_refused(const char *what, enum ibv_wr_opcode op, void *src,
			   struct ibv_mr *src_mr, void *dst, struct ibv_mr *dst_mr,
			   const struct secret *s, enum ibv_wc_status want)
{
	enum ibv_wc_status status = IBV_WC_SUCCESS;
	struct vt_loopback lb;
	long before = 0, after = 0;
	bool posted;

	if (vt_loopback_create_on(&lb, ctx, &opt, pd)) {
		tap_ok(false, "%s: no QP pair", what);
		return;
	}
	posted = fault_errors(&before) &&
		 !vt_rdma(&lb, op, src, src_mr, dst, dst_mr, OP_LEN, &status) &&
		 fault_errors_after(before, &after);
	tap_ok(posted && status == want && secret_intact(s) && other_intact() &&
	       (no_counters || after - before == 1),
	       "%s: %s (want %s), secret and other buffer unchanged, %ld ODP fault error(s)",
	       what, posted ? ibv_wc_status_str(status) : "no completion",
	       ibv_wc_status_str(want), posted ? after - before : 0L);
	vt_loopback_destroy(&lb);
}

/*
 * What the requester completes with when its own ODP fault fails: an RDMA WRITE from a
 * page the process cannot read (PROT_NONE). A request sourced from secret memory must
 * fail the same way. -1 when it cannot be measured.
 */
static int unreadable_source_status(void)
{
	enum ibv_wc_status status = IBV_WC_SUCCESS;
	struct vt_loopback lb;
	struct ibv_mr *mr = NULL;
	unsigned char *p;
	int ret = -1;

	p = vt_map_anon(page_size, PROT_NONE, 0);
	if (p)
		mr = ibv_reg_mr(pd, p, page_size, VT_ODP_ACCESS);
	if (mr && !vt_loopback_create_on(&lb, ctx, &opt, pd)) {
		if (!vt_rdma(&lb, IBV_WR_RDMA_WRITE, p, mr, other.p, other.mr, OP_LEN, &status) &&
		    status != IBV_WC_SUCCESS)
			ret = status;
		vt_loopback_destroy(&lb);
	}
	if (mr)
		ibv_dereg_mr(mr);
	if (p)
		munmap(p, page_size);
	if (ret < 0)
		tap_diag("RDMA WRITE from a PROT_NONE ODP page did not fail: %s",
			 ibv_wc_status_str(status));
	return ret;
}

/* An atomic fetch-and-add on the secret memory as the remote side. */
static void test_atomic(const struct secret *s)
{
	struct ibv_sge sge = { (uintptr_t)other.p, 8, other.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
	enum ibv_wc_status status = IBV_WC_SUCCESS;
	struct vt_loopback lb;
	long before = 0, after = 0;
	bool posted;

	wr.wr.atomic.remote_addr = (uintptr_t)s->p;
	wr.wr.atomic.rkey = s->mr->rkey;
	wr.wr.atomic.compare_add = 1;
	if (vt_loopback_create_on(&lb, ctx, &opt, pd)) {
		tap_ok(false, "atomic on secret memory: no QP pair");
		return;
	}
	posted = fault_errors(&before) && !vt_post_send_status(&lb, lb.qp[0], &wr, &status) &&
		 fault_errors_after(before, &after);
	tap_ok(posted && status == IBV_WC_REM_ACCESS_ERR && secret_intact(s) && other_intact() &&
	       (no_counters || after - before == 1),
	       "ATOMIC FETCH_AND_ADD on remote secret memory: %s (want %s), both unchanged, %ld ODP fault error(s)",
	       posted ? ibv_wc_status_str(status) : "no completion",
	       ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), posted ? after - before : 0L);
	vt_loopback_destroy(&lb);
}

/*
 * SEND from secret memory (the requester's fault), and a RECV posted on secret memory
 * (the responder's): both complete with errors on the side that faulted.
 */
static void test_send_recv(const struct secret *s)
{
	static const struct {
		const char *what;
		bool secret_sends;
		enum ibv_wc_status send_want, recv_want;
	} cases[] = {
		{ "SEND from secret memory", true, IBV_WC_GENERAL_ERR, IBV_WC_GENERAL_ERR },
		{ "RECV into secret memory", false, IBV_WC_REM_OP_ERR, IBV_WC_LOC_QP_OP_ERR },
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool out = cases[i].secret_sends;
		struct ibv_sge ssge = { out ? (uintptr_t)s->p : (uintptr_t)other.p, OP_LEN,
					out ? s->mr->lkey : other.mr->lkey };
		struct ibv_sge rsge = { out ? (uintptr_t)other.p : (uintptr_t)s->p, OP_LEN,
					out ? other.mr->lkey : s->mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rsge, .num_sge = 1 }, *rbad;
		struct ibv_send_wr swr = { .wr_id = 2, .sg_list = &ssge, .num_sge = 1,
					   .opcode = IBV_WR_SEND };
		enum ibv_wc_status send_want = out ? source_fault_status : cases[i].send_want;
		enum ibv_wc_status send_status = IBV_WC_SUCCESS;
		struct ibv_wc rwc = { .status = IBV_WC_SUCCESS };
		long before = 0, after = 0;
		struct vt_loopback lb;
		bool posted;

		if (vt_loopback_create_on(&lb, ctx, &opt, pd)) {
			tap_ok(false, "%s: no QP pair", cases[i].what);
			continue;
		}
		posted = fault_errors(&before) && !ibv_post_recv(lb.qp[1], &rwr, &rbad) &&
			 !vt_post_send_status(&lb, lb.qp[0], &swr, &send_status);
		/* The receive completes too: with the error, or flushed when the QP went down. */
		if (posted && !out)
			posted = !vt_poll_one(lb.recv_cq, &rwc, VT_WAIT_MS);
		posted = posted && fault_errors_after(before, &after);
		tap_ok(posted && send_status == send_want &&
		       (out || rwc.status == cases[i].recv_want) && secret_intact(s) &&
		       other_intact() && (no_counters || after - before == 1),
		       "%s: send %s, receive %s (want %s, %s), both unchanged, %ld ODP fault error(s)",
		       cases[i].what, posted ? ibv_wc_status_str(send_status) : "no completion",
		       out ? "not checked" : ibv_wc_status_str(rwc.status),
		       ibv_wc_status_str(send_want),
		       out ? "-" : ibv_wc_status_str(cases[i].recv_want), posted ? after - before : 0L);
		vt_loopback_destroy(&lb);
	}
}

/* Prefetch: the faulting advices fail with EFAULT, PREFETCH_NO_FAULT takes nothing. */
static void test_prefetch(const struct secret *s)
{
	static const struct {
		enum ibv_advise_mr_advice advice;
		const char *name;
		int want;
	} cases[] = {
		{ IBV_ADVISE_MR_ADVICE_PREFETCH, "PREFETCH", EFAULT },
		{ IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, "PREFETCH_WRITE", EFAULT },
		{ IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, "PREFETCH_NO_FAULT", 0 },
	};
	struct ibv_sge sge = { (uintptr_t)s->p, (uint32_t)s->size, s->mr->lkey };
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	unsigned int i;
	int err = 0;
	bool ok;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ok = counters(b);
		err = vt_advise_mr(pd, cases[i].advice, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1, NULL);
		ok = ok && counters(a);
		vt_odp_delta(b, a, d);
		tap_ok(ok && err == cases[i].want && d[VT_ODP_PAGES_FAULTED] == 0 &&
		       d[VT_ODP_PAGES_LINKED] == 0 && secret_intact(s),
		       "synchronous %s of secret memory: %s (want %s), %ld pages faulted, %ld linked",
		       cases[i].name, err ? strerror(err) : "success",
		       cases[i].want ? strerror(cases[i].want) : "success", d[VT_ODP_PAGES_FAULTED],
		       d[VT_ODP_PAGES_LINKED]);
	}
}

/* ATOMIC WRITE into secret memory: rxe's other way of writing through a page. */
static void test_atomic_write(const struct secret *s)
{
	enum ibv_wc_status status = IBV_WC_GENERAL_ERR;
	uint64_t value = 0x5a5a5a5a5a5a5a5aULL;
	long before = 0, after = 0;
	struct vt_loopback lb;
	struct ibv_qp_ex *qpx;
	struct ibv_wc wc;
	bool posted;

	if (vt_loopback_create_ex(&lb, ctx, &opt, pd, IBV_QP_EX_WITH_ATOMIC_WRITE, 0)) {
		tap_skip("the provider cannot make QPs with ATOMIC WRITE",
			 "ATOMIC WRITE into remote secret memory");
		return;
	}
	qpx = ibv_qp_to_qp_ex(lb.qp[0]);
	posted = fault_errors(&before);
	ibv_wr_start(qpx);
	qpx->wr_id = 8;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qpx, s->mr->rkey, (uintptr_t)s->p, &value);
	posted = !ibv_wr_complete(qpx) && posted && !vt_poll_one(lb.send_cq, &wc, VT_WAIT_MS) &&
		 fault_errors_after(before, &after);
	if (posted)
		status = wc.status;
	tap_ok(posted && status == IBV_WC_REM_ACCESS_ERR && secret_intact(s) &&
	       (no_counters || after - before == 1),
	       "ATOMIC WRITE into remote secret memory: %s (want %s), secret unchanged, %ld ODP fault error(s)",
	       posted ? ibv_wc_status_str(status) : "no completion",
	       ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), posted ? after - before : 0L);
	vt_loopback_destroy(&lb);
}

/*
 * A persistent FLUSH of secret memory: refused with a remote access error, since secret
 * memory is not persistent memory, and without taking a page. rxe writes caches back
 * through the direct map, so taking one would oops.
 */
static void test_flush(const struct secret *s)
{
	const int flush_access = VT_ACCESS_FLUSH_GLOBAL | VT_ACCESS_FLUSH_PERSISTENT;
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	enum ibv_wc_status status = IBV_WC_GENERAL_ERR;
	struct vt_rxe_maps maps;
	struct vt_loopback lb;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	bool ok;
	void *sq;

	mr = ibv_reg_mr(pd, s->p, s->size, VT_ODP_ACCESS | flush_access);
	if (!mr) {
		tap_ok(false, "ODP MR with FLUSH access over secret memory: %s", strerror(errno));
		return;
	}
	if (vt_rxe_maps_read(ctx, &maps) ||
	    vt_loopback_create_ex(&lb, ctx, &opt, pd, 0, flush_access)) {
		tap_ok(false, "FLUSH of secret memory: no QP pair");
		ibv_dereg_mr(mr);
		return;
	}
	sq = vt_rxe_sq_of_loopback(ctx, &maps);
	if (!sq) {
		tap_skip("cannot find rxe's send queue to post a FLUSH on",
			 "persistent FLUSH of remote secret memory");
	} else {
		ok = counters(b) &&
		     !vt_rxe_post_flush(lb.qp[0], sq, 9, (uintptr_t)s->p, (uint32_t)s->size,
					mr->rkey, VT_FLUSH_PERSISTENT, VT_FLUSH_RANGE) &&
		     !vt_poll_one(lb.send_cq, &wc, VT_WAIT_MS) && counters(a);
		if (ok)
			status = wc.status;
		vt_odp_delta(b, a, d);
		tap_ok(ok && status == IBV_WC_REM_ACCESS_ERR && d[VT_ODP_PAGES_FAULTED] == 0 &&
		       d[VT_ODP_PAGES_LINKED] == 0 && secret_intact(s),
		       "persistent FLUSH of remote secret memory: %s (want %s), %ld pages taken, %ld linked",
		       ok ? ibv_wc_status_str(status) : "no completion",
		       ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), d[VT_ODP_PAGES_FAULTED],
		       d[VT_ODP_PAGES_LINKED]);
	}
	vt_loopback_destroy(&lb);
	if (ibv_dereg_mr(mr))
		tap_diag("ibv_dereg_mr(FLUSH MR): %s", strerror(errno));
}

/* The same memory reached through an implicit ODP MR (the whole address space). */
static void test_implicit(struct secret *s)
{
	struct ibv_mr *mr;

	if (!have_implicit) {
		tap_skip("implicit ODP not supported by this device",
			 "RDMA WRITE from secret memory through an implicit ODP MR");
		return;
	}
	mr = ibv_reg_mr(pd, NULL, SIZE_MAX, VT_ODP_ACCESS);
	if (!mr) {
		tap_ok(false, "implicit ODP MR: %s", strerror(errno));
		return;
	}
	expect_refused("RDMA WRITE from secret memory through an implicit ODP MR",
		       IBV_WR_RDMA_WRITE, s->p, mr, other.p, other.mr, s, source_fault_status);
	if (ibv_dereg_mr(mr))
		tap_diag("ibv_dereg_mr(implicit): %s", strerror(errno));
}

/* After all of it, ordinary ODP traffic on a new QP pair: the device still works. */
static void test_still_works(void)
{
	struct vt_odp_buf a, b;
	struct vt_loopback lb;
	bool ok;

	if (vt_loopback_create_on(&lb, ctx, &opt, pd)) {
		tap_ok(false, "the device after the refusals: no QP pair");
		return;
	}
	ok = vt_odp_buf_init(&a, pd, 16 * page_size, 0, VT_ODP_ACCESS);
	ok = vt_odp_buf_init(&b, pd, 16 * page_size, 0, VT_ODP_ACCESS) && ok;
	if (ok)
		vt_fill(a.p, a.size, 93);
	ok = ok && vt_move(&lb, IBV_WR_RDMA_WRITE, a.p, a.mr, b.p, b.mr, a.size);
	tap_ok(ok && vt_check(b.p, b.size, 93) < 0,
	       "after the refusals, RDMA WRITE of %zu bytes between ODP MRs on a new QP pair: data right",
	       a.size);
	vt_odp_buf_fini(&a);
	vt_odp_buf_fini(&b);
	vt_loopback_destroy(&lb);
}

static bool secret_init(struct secret *s)
{
	s->size = SECRET_PAGES * page_size;
	s->fd = (int)syscall(SYS_memfd_secret, 0);
	if (s->fd < 0)
		return false;
	if (ftruncate(s->fd, (off_t)s->size)) {
		tap_diag("ftruncate(memfd_secret, %zu): %s", s->size, strerror(errno));
		goto err;
	}
	s->p = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (s->p == MAP_FAILED) {
		tap_diag("mmap(memfd_secret): %s (RLIMIT_MEMLOCK too small?)", strerror(errno));
		goto err;
	}
	/* The process may touch its own secret pages: this faults them in. */
	vt_fill(s->p, s->size, SECRET_SEED);
	return true;
err:
	close(s->fd);
	errno = EINVAL;
	return false;
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	struct secret s = { .fd = -1 };
	struct ibv_mr *pinned;
	int i, err;

	page_size = sysconf(_SC_PAGESIZE);
	ctx = vt_odp_start(argc, argv, &opt, TESTS, VT_NEED_ODP, "ODP on secret memory", &attr);
	{
		long c[VT_ODP_NCOUNTERS];

		/* Losing them on our kernel shows as skips of the other ODP suites. */
		if (!vt_odp_counters(ctx, opt.port, c)) {
			no_counters = "no ODP counters";
			tap_diag("this kernel has no rxe ODP counters: the checks judge completions and bytes only");
		}
	}
	have_implicit = attr.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT;
	tap_diag("running as uid %u", (unsigned int)getuid());

	if (!secret_init(&s)) {
		err = errno;
		for (i = 0; i < TESTS; i++)
			tap_skip(err == ENOSYS ?
				 "memfd_secret: ENOSYS (a kernel without CONFIG_SECRETMEM, or secretmem.enable=0)" :
				 "memfd_secret memory could not be set up (see the diagnostics)",
				 "ODP on secret memory, check %d", i + 1);
		ibv_close_device(ctx);
		return tap_done();
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		tap_bail("ibv_alloc_pd: %s", strerror(errno));
	if (!vt_odp_buf_init(&other, pd, page_size, 0, VT_PINNED_ACCESS | IBV_ACCESS_REMOTE_ATOMIC))
		tap_bail("cannot register a pinned MR");
	vt_fill(other.p, other.size, OTHER_SEED);
	err = unreadable_source_status();
	if (err < 0)
		tap_bail("cannot tell how this device fails a request it cannot fault");
	source_fault_status = (enum ibv_wc_status)err;
	tap_diag("a request sourced from memory the requester cannot fault completes with: %s",
		 ibv_wc_status_str(source_fault_status));

	pinned = ibv_reg_mr(pd, s.p, s.size, VT_PINNED_ACCESS);
	err = errno;
	tap_ok(!pinned && err == EFAULT, "pinned MR over secret memory: %s (want EFAULT, as GUP refuses it)",
	       pinned ? "registered" : strerror(err));
	if (pinned)
		ibv_dereg_mr(pinned);

	s.mr = ibv_reg_mr(pd, s.p, s.size, VT_ODP_ACCESS);
	if (!tap_ok(s.mr != NULL, "ODP MR over secret memory: %s (nothing is faulted at registration)",
		    s.mr ? "registered" : strerror(errno)))
		tap_bail("no ODP MR over secret memory");

	expect_refused("RDMA WRITE from secret memory", IBV_WR_RDMA_WRITE, s.p, s.mr, other.p,
		       other.mr, &s, source_fault_status);
	expect_refused("RDMA READ into secret memory", IBV_WR_RDMA_READ, other.p, other.mr, s.p,
		       s.mr, &s, IBV_WC_LOC_PROT_ERR);
	expect_refused("RDMA WRITE into remote secret memory", IBV_WR_RDMA_WRITE, other.p,
		       other.mr, s.p, s.mr, &s, IBV_WC_REM_ACCESS_ERR);
	expect_refused("RDMA READ of remote secret memory", IBV_WR_RDMA_READ, s.p, s.mr, other.p,
		       other.mr, &s, IBV_WC_REM_ACCESS_ERR);
	expect_refused("RDMA WRITE from secret memory, at its last page", IBV_WR_RDMA_WRITE,
		       s.p + s.size - OP_LEN, s.mr, other.p, other.mr, &s, source_fault_status);
	test_atomic(&s);
	test_atomic_write(&s);
	test_flush(&s);
	test_send_recv(&s);
	test_prefetch(&s);
	test_implicit(&s);

	/* The process itself still reads its secret, and the MR goes away cleanly. */
	tap_ok(secret_intact(&s), "the process reads its secret memory back unchanged");
	err = ibv_dereg_mr(s.mr);
	tap_ok(!err, "deregistration of the ODP MR over secret memory: %s",
	       err ? strerror(err) : "done");
	test_still_works();

	vt_odp_buf_fini(&other);
	munmap(s.p, s.size);
	close(s.fd);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_done();
}
