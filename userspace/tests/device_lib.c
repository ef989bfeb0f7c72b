// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libibodp on a real device (the guest's soft-RoCE): opening by name and by
 * capability, the capabilities against what libibverbs reports, the three kinds of
 * registration and the fallback policy (IBODP_NO_ODP=1 plays a device without ODP),
 * prefetch through the kernel's ADVISE_MR when the provider lacks it, counters and
 * their deltas, and the DMA mode. Transfers check their data; counters prove faults.
 */
#include "tap.h"
#include "ibodp.h"
#include "verbs.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define NPAGES 16

static struct vt_options opt;
static size_t page_size, size;
/* Why the kernel's counters or implicit ODP cannot be checked; NULL when they can. */
static const char *no_counters, *no_implicit;

static unsigned char *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static bool write_ok(struct vt_loopback *lb, void *src, struct ibodp_mr *s, void *dst,
		     struct ibodp_mr *d, size_t len, unsigned int seed)
{
	enum ibv_wc_status st = IBV_WC_GENERAL_ERR;

	vt_fill(src, len, seed);
	return !vt_rdma(lb, IBV_WR_RDMA_WRITE, src, s->mr, dst, d->mr, len, &st) &&
	       st == IBV_WC_SUCCESS && vt_check(dst, len, seed) < 0;
}

static void test_open(struct ibodp_dev **devp)
{
	struct ibodp_dev *dev;
	int ret;

	ret = ibodp_open(NULL, &dev);
	if (!tap_ok(!ret, "open the first ODP device: %s", ret ? ibodp_errmsg() : ibodp_name(dev)))
		exit(tap_done());
	*devp = dev;
	if (opt.dev)
		tap_ok(!strcmp(ibodp_name(dev), opt.dev), "it is %s", opt.dev);
	ret = ibodp_open(ibodp_name(dev), &dev);
	tap_ok(!ret, "open %s by name", ibodp_name(*devp));
	ibodp_close(dev);
	ret = ibodp_open("mlx5_99", &dev);
	tap_ok(ret == -ENODEV && strstr(ibodp_errmsg(), ibodp_name(*devp)),
	      "open a device that is not there: ENODEV, naming those there are (\"%s\")",
	      ibodp_errmsg());
}

static void test_caps(struct ibodp_dev *dev)
{
	struct ibv_device_attr_ex attr;
	struct ibodp_caps caps;
	char text[256];

	ibv_query_device_ex(ibodp_context(dev), NULL, &attr);
	ibodp_query_caps(dev, &caps);
	ibodp_caps_str(&caps, text, sizeof(text));
	tap_ok(caps.explicit_odp && caps.rc == attr.odp_caps.per_transport_caps.rc_odp_caps &&
	      caps.ud == attr.odp_caps.per_transport_caps.ud_odp_caps &&
	      caps.implicit_odp == !!(attr.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT),
	      "caps agree with ibv_query_device_ex: %s", text);
	tap_ok(strstr(text, "RC: SEND RECV WRITE READ ATOMIC") != NULL,
	      "RC supports SEND, RECV, WRITE, READ and ATOMIC on ODP");
}

static void test_kinds(struct ibodp_dev *dev, struct vt_loopback *lb)
{
	struct ibodp_counters before, after, d;
	struct ibodp_mr *src, *dst, *imr;
	unsigned char *a = map(size), *b = map(size);
	int ret;

	if (ibodp_reg_mr(dev, lb->pd, a, size, ACCESS, IBODP_PINNED, IBODP_FAIL, &src) ||
	    ibodp_reg_mr(dev, lb->pd, b, size, ACCESS, IBODP_EXPLICIT, IBODP_FAIL, &dst)) {
		tap_ok(false, "register pinned and explicit ODP MRs: %s", ibodp_errmsg());
		return;
	}
	tap_ok(src->kind == IBODP_PINNED && dst->kind == IBODP_EXPLICIT && !dst->fell_back,
	      "pinned and explicit ODP MRs registered as asked");
	ret = no_counters ? 0 : ibodp_read_counters(dev, opt.port, &before);
	tap_ok(!ret && write_ok(lb, a, src, b, dst, size, 1),
	      "RDMA WRITE into the untouched ODP MR: data right");
	if (no_counters) {
		tap_skip(no_counters, "counters: faults and pages of the WRITE");
	} else {
		ret = ibodp_read_counters(dev, opt.port, &after);
		ibodp_counters_delta(&before, &after, &d);
		tap_ok(!ret && d.page_faults >= 1 && d.pages_faulted == NPAGES,
		      "counters: %llu faults brought in %llu pages (want %d)%s%s",
		      (unsigned long long)d.page_faults, (unsigned long long)d.pages_faulted,
		      NPAGES, ret ? ": " : "", ret ? ibodp_errmsg() : "");
	}

	if (no_implicit) {
		tap_skip(no_implicit, "implicit ODP MR");
		tap_skip(no_implicit, "RDMA WRITE through the implicit MR's rkey");
		tap_skip(no_implicit, "implicit MR deregistered");
		goto out;
	}
	ret = ibodp_reg_mr(dev, lb->pd, NULL, SIZE_MAX, ACCESS, IBODP_IMPLICIT, IBODP_FAIL, &imr);
	tap_ok(!ret && imr->kind == IBODP_IMPLICIT, "implicit ODP MR: %s",
	      ret ? ibodp_errmsg() : "registered");
	if (!ret) {
		tap_ok(write_ok(lb, a, src, b + 100, imr, size - 100, 2),
		      "RDMA WRITE through the implicit MR's rkey: data right");
		tap_ok(!ibodp_dereg_mr(imr), "implicit MR deregistered");
	}
out:
	ibodp_dereg_mr(dst);
	ibodp_dereg_mr(src);
	munmap(a, size);
	munmap(b, size);
}

static void test_prefetch(struct ibodp_dev *dev, struct vt_loopback *lb)
{
	struct ibodp_counters before, after, d;
	unsigned char *p = map(size);
	struct ibodp_mr *mr;
	bool direct;
	int ret;

	if (ibodp_reg_mr(dev, lb->pd, p, size, ACCESS, IBODP_EXPLICIT, IBODP_FAIL, &mr)) {
		tap_ok(false, "register for prefetch: %s", ibodp_errmsg());
		return;
	}
	memset(&d, 0, sizeof(d));
	if (!no_counters && ibodp_read_counters(dev, opt.port, &before)) {
		tap_ok(false, "counters before the prefetch: %s", ibodp_errmsg());
		goto out;
	}
	ret = ibodp_prefetch(mr, p, size, IBODP_PREFETCH_WRITE | IBODP_PREFETCH_SYNC, &direct);
	tap_ok(!ret, "sync PREFETCH_WRITE (%s): %s",
	      direct ? "kernel ADVISE_MR directly" : "through the provider",
	      ret ? ibodp_errmsg() : "ok");
	if (no_counters) {
		tap_skip(no_counters, "the prefetch's counters");
	} else {
		ret = ibodp_read_counters(dev, opt.port, &after);
		ibodp_counters_delta(&before, &after, &d);
		tap_ok(!ret && d.prefetch_requests == 1 && d.pages_faulted == NPAGES,
		      "counters: %llu prefetch request, %llu pages faulted (want 1, %d)",
		      (unsigned long long)d.prefetch_requests,
		      (unsigned long long)d.pages_faulted, NPAGES);
	}
	ret = ibodp_prefetch(mr, p + size / 2, size, 0, NULL);
	tap_ok(ret == -EINVAL && strstr(ibodp_errmsg(), "outside the MR"),
	      "prefetch past the MR refused: \"%s\"", ibodp_errmsg());
	munmap(p + page_size, page_size);
	ret = ibodp_prefetch(mr, p, 2 * page_size, IBODP_PREFETCH_SYNC, NULL);
	tap_ok(ret == -EFAULT && strstr(ibodp_errmsg(), "not mapped"),
	      "sync prefetch over a hole: EFAULT, \"%s\"", ibodp_errmsg());
out:
	ibodp_dereg_mr(mr);
	munmap(p, size);
}

/*
 * "page_faults F page_invalidations I page_prefetch P" of one MR in iproute2's listing
 * of every device's MRs; what it printed, else, into @out.
 */
static bool rdma_tool_shows(const struct ibodp_mr_counters *c, char *out, size_t size)
{
	char want[128], line[512];
	size_t len = 0;
	bool found = false;
	FILE *f;

	snprintf(want, sizeof(want), " page_faults %llu page_invalidations %llu page_prefetch %llu",
		 (unsigned long long)c->page_faults, (unsigned long long)c->page_invalidations,
		 (unsigned long long)c->page_prefetch);
	*out = 0;
	f = popen("rdma statistic show mr 2>&1", "r");
	if (!f) {
		snprintf(out, size, "popen: %s", strerror(errno));
		return false;
	}
	while (fgets(line, sizeof(line), f)) {
		found |= strstr(line, want) != NULL;
		line[strcspn(line, "\n")] = 0;
		if (len < size)
			len += snprintf(out + len, size - len, "%s%s", len ? " | " : "", line);
	}
	pclose(f);
	return found;
}

static bool mr_counters_are(const struct ibodp_mr_counters *c, uint64_t faults,
			    uint64_t invalidations, uint64_t prefetch)
{
	return c->page_faults == faults && c->page_invalidations == invalidations &&
	       c->page_prefetch == prefetch;
}

#define MRC(c) (unsigned long long)(c).page_faults, (unsigned long long)(c).page_invalidations, \
	(unsigned long long)(c).page_prefetch

/*
 * The counters of one MR: an RDMA WRITE into an untouched ODP MR faults all its pages,
 * MADV_DONTNEED of half takes those away, a prefetch brings them back; another ODP MR's
 * traffic counts on that MR only; iproute2's rdma tool shows the same numbers; a
 * pinned MR has none; a smaller (older) struct gets only its fields.
 */
static void test_mr_counters(struct ibodp_dev *dev, struct vt_loopback *lb)
{
	unsigned char *a = map(size), *b = map(size), *o = map(2 * size);
	struct ibodp_mr *src = NULL, *mr = NULL, *other = NULL;
	struct ibodp_mr_counters c, pc;
	uint64_t old[3] = { 7, 7, 7 };
	char tool[512];
	int ret;

	if (ibodp_reg_mr(dev, lb->pd, a, size, ACCESS, IBODP_PINNED, IBODP_FAIL, &src) ||
	    ibodp_reg_mr(dev, lb->pd, b, size, ACCESS, IBODP_EXPLICIT, IBODP_FAIL, &mr) ||
	    ibodp_reg_mr(dev, lb->pd, o, 2 * size, ACCESS, IBODP_EXPLICIT, IBODP_FAIL, &other)) {
		tap_ok(false, "register MRs for their counters: %s", ibodp_errmsg());
		goto out;
	}
	ret = ibodp_mr_read_counters(mr, &c);
	if (ret == -EOPNOTSUPP) {
		tap_skip("the kernel's rxe counts no ODP per MR", "MR counters: %s", ibodp_errmsg());
		goto out;
	}
	tap_ok(!ret && mr_counters_are(&c, 0, 0, 0),
	      "a new ODP MR's counters: %llu faulted, %llu invalidated, %llu prefetched (want 0s)%s%s",
	      MRC(c), ret ? ": " : "", ret ? ibodp_errmsg() : "");

	ret = write_ok(lb, a, src, b, mr, size, 11) ? ibodp_mr_read_counters(mr, &c) : -EIO;
	tap_ok(!ret && mr_counters_are(&c, NPAGES, 0, 0),
	      "after an RDMA WRITE of all of it: %llu, %llu, %llu (want %d, 0, 0)", MRC(c), NPAGES);

	madvise(b, size / 2, MADV_DONTNEED);
	ret = ibodp_mr_read_counters(mr, &c);
	tap_ok(!ret && mr_counters_are(&c, NPAGES, NPAGES / 2, 0),
	      "after MADV_DONTNEED of half: %llu, %llu, %llu (want %d, %d, 0)", MRC(c), NPAGES,
	      NPAGES / 2);

	ret = ibodp_prefetch(mr, b, size, IBODP_PREFETCH_WRITE | IBODP_PREFETCH_SYNC, NULL);
	if (!ret)
		ret = ibodp_mr_read_counters(mr, &c);
	tap_ok(!ret && mr_counters_are(&c, NPAGES, NPAGES / 2, NPAGES / 2),
	      "after a prefetch of all of it: %llu, %llu, %llu (want %d, %d, %d)", MRC(c), NPAGES,
	      NPAGES / 2, NPAGES / 2);

	ret = write_ok(lb, a, src, o + size, other, size, 12) ? ibodp_mr_read_counters(mr, &c) : -EIO;
	if (!ret)
		ret = ibodp_mr_read_counters(other, &pc);
	tap_ok(!ret && mr_counters_are(&c, NPAGES, NPAGES / 2, NPAGES / 2) &&
	      mr_counters_are(&pc, NPAGES, 0, 0),
	      "a WRITE into half of another ODP MR counts there only: %llu, %llu, %llu there, "
	      "%llu, %llu, %llu here", MRC(pc), MRC(c));

	tap_ok(rdma_tool_shows(&c, tool, sizeof(tool)),
	      "rdma statistic show mr lists the MR with page_faults %llu page_invalidations "
	      "%llu page_prefetch %llu: %s", MRC(c), tool);

	ret = ibodp_mr_read_counters(src, &pc);
	tap_ok(!ret && mr_counters_are(&pc, 0, 0, 0), "a pinned MR's counters: %llu, %llu, %llu",
	      MRC(pc));

	ret = ibodp_mr_read_counters_sized(mr, (struct ibodp_mr_counters *)old,
					   2 * sizeof(uint64_t));
	tap_ok(!ret && old[0] == NPAGES && old[1] == NPAGES / 2 && old[2] == 7,
	      "a struct of two counters gets two: %llu, %llu, and %llu left alone",
	      (unsigned long long)old[0], (unsigned long long)old[1], (unsigned long long)old[2]);
out:
	ibodp_dereg_mr(other);
	ibodp_dereg_mr(mr);
	ibodp_dereg_mr(src);
	munmap(a, size);
	munmap(b, size);
	munmap(o, 2 * size);
}

/*
 * An SGE list longer than one ADVISE_MR request carries (its attribute length is 16
 * bits: 4095 SGEs): the library splits it, and every page is prefetched.
 */
#define MANY_SGES 5000

static void test_advise_many_sges(struct ibodp_dev *dev, struct vt_loopback *lb)
{
	size_t len = (size_t)MANY_SGES * page_size;
	struct ibodp_counters before, after, d;
	unsigned char *p = map(len);
	struct ibv_sge *sge = calloc(MANY_SGES, sizeof(*sge));
	struct ibodp_mr *mr = NULL;
	int i, ret;

	if (!p || !sge) {
		tap_ok(false, "memory for %d SGEs", MANY_SGES);
		goto out;
	}
	if (ibodp_reg_mr(dev, lb->pd, p, len, ACCESS, IBODP_EXPLICIT, IBODP_FAIL, &mr)) {
		tap_ok(false, "register %zu bytes for %d SGEs: %s", len, MANY_SGES, ibodp_errmsg());
		goto out;
	}
	for (i = 0; i < MANY_SGES; i++) {
		sge[i].addr = (uintptr_t)p + (size_t)i * page_size;
		sge[i].length = page_size;
		sge[i].lkey = mr->mr->lkey;
	}
	if (!no_counters && ibodp_read_counters(dev, opt.port, &before)) {
		tap_ok(false, "counters before the advice: %s", ibodp_errmsg());
		goto out;
	}
	ret = ibodp_advise_mr(dev, lb->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			      IBV_ADVISE_MR_FLAG_FLUSH, sge, MANY_SGES, NULL);
	tap_ok(!ret, "sync PREFETCH_WRITE of %d SGEs: %s", MANY_SGES, ret ? ibodp_errmsg() : "ok");
	if (no_counters) {
		tap_skip(no_counters, "the counters of an advice of %d SGEs", MANY_SGES);
	} else {
		ret = ibodp_read_counters(dev, opt.port, &after);
		ibodp_counters_delta(&before, &after, &d);
		tap_ok(!ret && d.prefetch_requests == 2 && d.pages_faulted == MANY_SGES,
		      "%d SGEs: %llu prefetch requests, %llu pages faulted (want 2, %d)", MANY_SGES,
		      (unsigned long long)d.prefetch_requests,
		      (unsigned long long)d.pages_faulted, MANY_SGES);
	}
out:
	ibodp_dereg_mr(mr);
	free(sge);
	if (p)
		munmap(p, len);
}

/* Several threads registering, prefetching and deregistering on one device at once. */
struct thread_arg {
	struct ibodp_dev *dev;
	struct ibv_pd *pd;
	int failures;
	char msg[128];
};

static void *hammer(void *p)
{
	struct thread_arg *a = p;
	struct ibodp_counters c;
	struct ibodp_mr *mr;
	unsigned char *buf;
	int i;

	for (i = 0; i < 20; i++) {
		buf = map(size);
		if (!buf || ibodp_reg_mr(a->dev, a->pd, buf, size, ACCESS, IBODP_EXPLICIT, IBODP_FAIL,
					 &mr) ||
		    ibodp_prefetch(mr, buf, size, IBODP_PREFETCH_WRITE | IBODP_PREFETCH_SYNC, NULL) ||
		    (!no_counters && ibodp_read_counters(a->dev, opt.port, &c)) ||
		    ibodp_dereg_mr(mr)) {
			a->failures++;
			snprintf(a->msg, sizeof(a->msg), "%s", ibodp_errmsg());
		}
		if (buf)
			munmap(buf, size);
	}
	return NULL;
}

static void test_threads(struct vt_loopback *lb, const char *name)
{
	struct thread_arg args[4];
	pthread_t t[4];
	const char *msg = "";
	struct ibodp_dev *dev;
	struct ibodp_mr *mr;
	struct ibv_pd *pd;
	int i, ret, failures = 0;

	/* A fresh device: the threads race for the first direct ADVISE_MR too. */
	if (ibodp_open(name, &dev)) {
		tap_ok(false, "open %s again: %s", name, ibodp_errmsg());
		return;
	}
	pd = ibv_alloc_pd(ibodp_context(dev));
	if (!pd) {
		tap_ok(false, "a PD on %s: %s", name, strerror(errno));
		ibodp_close(dev);
		return;
	}
	/* One rule for PDs, as ibodp_advise_mr() has: any context of the same device. */
	ret = ibodp_reg_mr(dev, lb->pd, lb, 64, ACCESS, IBODP_PINNED, IBODP_FAIL, &mr);
	tap_ok(!ret, "a PD of another context of the same device is accepted: %s",
	      ret ? ibodp_errmsg() : "ok");
	if (!ret)
		ibodp_dereg_mr(mr);
	for (i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){ .dev = dev, .pd = pd };
		pthread_create(&t[i], NULL, hammer, &args[i]);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		failures += args[i].failures;
		if (args[i].failures && !*msg)
			msg = args[i].msg;
	}
	tap_ok(!failures, "4 threads x 20 register + sync prefetch + counters + deregister on one device: %d failed%s%s",
	      failures, failures ? ", e.g. " : "", msg);
	ibv_dealloc_pd(pd);
	ibodp_close(dev);
}

/* IBODP_NO_ODP=1: a device without ODP, for the fallback policy. */
static void test_fallback(const char *name)
{
	unsigned char *a = map(size), *b = map(size);
	struct ibodp_mr *src, *dst;
	struct vt_loopback own, *lb = &own;
	struct ibodp_dev *dev;
	struct ibodp_caps caps;
	int ret;

	setenv("IBODP_NO_ODP", "1", 1);
	ret = ibodp_open(NULL, &dev);
	tap_ok(ret == -ENODEV && strstr(ibodp_errmsg(), "IBODP_NO_ODP is set"),
	      "no ODP anywhere: opening the first ODP device fails (\"%s\")", ibodp_errmsg());
	ret = ibodp_open_ex(NULL, IBODP_OPEN_ANY, &dev);
	tap_ok(!ret && !strcmp(ibodp_name(dev), name) && strstr(ibodp_errmsg(), "without it"),
	      "no ODP anywhere, IBODP_OPEN_ANY: the first device all the same (\"%s\")",
	      ibodp_errmsg());
	if (!ret)
		ibodp_close(dev);
	if (ibodp_open(name, &dev)) {
		tap_ok(false, "open %s by name: %s", name, ibodp_errmsg());
		return;
	}
	if (vt_loopback_create(lb, ibodp_context(dev), &opt)) {
		tap_ok(false, "a connected QP pair on the device without ODP");
		ibodp_close(dev);
		return;
	}
	ibodp_query_caps(dev, &caps);
	tap_ok(!caps.explicit_odp, "the device shows no ODP");
	ret = ibodp_reg_mr(dev, lb->pd, b, size, ACCESS, IBODP_EXPLICIT, IBODP_FAIL, &dst);
	tap_ok(ret == -EOPNOTSUPP && strstr(ibodp_errmsg(), "IBODP_NO_ODP"),
	      "explicit ODP with IBODP_FAIL: EOPNOTSUPP (\"%s\")", ibodp_errmsg());
	ret = ibodp_reg_mr(dev, lb->pd, b, size, ACCESS, IBODP_EXPLICIT, IBODP_FALLBACK_PINNED,
			   &dst);
	tap_ok(!ret && dst->fell_back && dst->kind == IBODP_PINNED &&
	      strstr(ibodp_errmsg(), "pinned instead"),
	      "explicit ODP with IBODP_FALLBACK_PINNED: pinned, and said (\"%s\")", ibodp_errmsg());
	if (!ret && !ibodp_reg_mr(dev, lb->pd, a, size, ACCESS, IBODP_PINNED, IBODP_FAIL, &src)) {
		tap_ok(write_ok(lb, a, src, b, dst, size, 3), "the fallback MR carries data");
		tap_ok(ibodp_prefetch(dst, b, size, IBODP_PREFETCH_SYNC, NULL) == 0,
		      "prefetch of the fallback MR: nothing to do, success");
		ibodp_dereg_mr(src);
	}
	if (!ret)
		ibodp_dereg_mr(dst);
	vt_loopback_destroy(lb);
	ibodp_close(dev);
	unsetenv("IBODP_NO_ODP");
	ret = ibodp_open_ex(NULL, IBODP_OPEN_ANY, &dev);
	if (!ret)
		ibodp_query_caps(dev, &caps);
	tap_ok(!ret && caps.explicit_odp, "IBODP_OPEN_ANY with ODP there: the ODP device (%s)",
	      ret ? ibodp_errmsg() : ibodp_name(dev));
	if (!ret)
		ibodp_close(dev);
	munmap(a, size);
	munmap(b, size);
}

/*
 * A context the application opened (as an rdma_cm user has one): ibodp_wrap() works on
 * it, an MR of a PD from either context registers and prefetches, and ibodp_close()
 * leaves the context open for its owner.
 */
static void test_wrap(const char *name, struct ibodp_dev *lib_dev)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	struct ibv_device_attr attr;
	struct ibodp_mr *mr = NULL;
	struct ibodp_dev *dev;
	struct ibv_pd *pd;
	unsigned char *p;
	int i, ret;

	for (i = 0; list && list[i] && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		tap_ok(false, "the application opens %s itself: %s", name, strerror(errno));
		return;
	}
	ret = ibodp_wrap(ctx, &dev);
	tap_ok(!ret && ibodp_context(dev) == ctx && !strcmp(ibodp_name(dev), name),
	      "ibodp_wrap() of the application's context: %s", ret ? ibodp_errmsg() : "ok");
	if (ret) {
		ibv_close_device(ctx);
		return;
	}
	p = map(size);
	pd = ibv_alloc_pd(ctx);
	ret = pd && p ? ibodp_reg_mr(dev, pd, p, size, ACCESS, IBODP_EXPLICIT, IBODP_FAIL, &mr) :
			-ENOMEM;
	if (!ret)
		ret = ibodp_prefetch(mr, p, size, IBODP_PREFETCH_WRITE | IBODP_PREFETCH_SYNC, NULL);
	tap_ok(!ret, "an ODP MR of the application's PD, prefetched: %s",
	      ret ? ibodp_errmsg() : "ok");
	ibodp_dereg_mr(mr);
	/* One rule: a PD of the same device from another context is accepted too. */
	mr = NULL;
	ret = p ? ibodp_reg_mr(lib_dev, pd, p, size, ACCESS, IBODP_EXPLICIT, IBODP_FAIL, &mr) :
		  -ENOMEM;
	tap_ok(!ret, "the library's own device accepts the application's PD: %s",
	      ret ? ibodp_errmsg() : "ok");
	ibodp_dereg_mr(mr);
	ibodp_close(dev);
	tap_ok(ibv_query_device(ctx, &attr) == 0 && pd && ibv_dealloc_pd(pd) == 0,
	      "after ibodp_close() the application's context is still open and usable");
	tap_ok(ibv_close_device(ctx) == 0, "and its owner closes it");
	if (p)
		munmap(p, size);
}

/*
 * ibodp_dma_mode() against what the VM profile promises (VT_IOMMU_GROUP: none, DMA or
 * DMA-FQ); run by hand, against the group type sysfs shows.
 */
static void test_dma_mode(struct ibodp_dev *dev)
{
	const char *group = getenv("VT_IOMMU_GROUP"), *want;
	char mode[128];
	int ret;

	ret = ibodp_dma_mode(dev, opt.port, opt.gid_index, mode, sizeof(mode));
	if (!group || !*group) {
		tap_ok(ret > 0 && (!strncmp(mode, "no IOMMU", 8) || !strncmp(mode, "IOMMU ", 6) ||
				  !strncmp(mode, "no DMA device", 13)),
		      "DMA mode: %s (no profile to compare with)", ret > 0 ? mode : ibodp_errmsg());
		return;
	}
	if (!strcmp(group, "none"))
		want = "no IOMMU";
	else if (!strcmp(group, "DMA"))
		want = "IOMMU strict (DMA";
	else if (!strcmp(group, "DMA-FQ"))
		want = "IOMMU lazy (DMA-FQ";
	else
		want = group;
	tap_ok(ret > 0 && !strncmp(mode, want, strlen(want)), "DMA mode: %s (the profile wants %s...)",
	      ret > 0 ? mode : ibodp_errmsg(), want);
}

/*
 * What this kernel lacks is skipped by name (another kernel is compared, not failed);
 * a counter file that is there but cannot be read is a failure.
 */
static void probe_features(struct ibodp_dev *dev)
{
	struct ibodp_counters c;
	struct ibodp_caps caps;
	int ret;

	ret = ibodp_read_counters(dev, opt.port, &c);
	if (ret == -EOPNOTSUPP)
		no_counters = "the kernel has no rxe ODP counters (hw_counters/page_faults)";
	else
		tap_ok(!ret, "ODP counters readable: %s", ret ? ibodp_errmsg() : "yes");
	ibodp_query_caps(dev, &caps);
	if (!caps.implicit_odp)
		no_implicit = "the device has no implicit ODP (IBV_ODP_SUPPORT_IMPLICIT)";
}

int main(int argc, char **argv)
{
	struct ibodp_dev *dev;
	struct vt_loopback lb;
	char name[64];

	vt_parse_options(argc, argv, &opt);
	page_size = sysconf(_SC_PAGESIZE);
	size = NPAGES * page_size;
	test_open(&dev);
	snprintf(name, sizeof(name), "%s", ibodp_name(dev));
	test_caps(dev);
	test_dma_mode(dev);
	probe_features(dev);
	if (vt_loopback_create(&lb, ibodp_context(dev), &opt)) {
		tap_ok(false, "a connected QP pair");
		return tap_done();
	}
	test_kinds(dev, &lb);
	test_prefetch(dev, &lb);
	test_advise_many_sges(dev, &lb);
	test_mr_counters(dev, &lb);
	test_threads(&lb, name);
	test_fallback(name);
	test_wrap(name, dev);
	vt_loopback_destroy(&lb);
	ibodp_close(dev);
	return tap_done();
}
