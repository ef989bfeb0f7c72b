// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA ATOMIC WRITE and RDMA FLUSH on ODP MRs, and their ODP capability bits.
 * ATOMIC WRITE goes through the provider's ibv_wr_atomic_write(); FLUSH, which
 * Debian's provider lacks, through rxe's send queue directly (lib/rxe_raw.c). The
 * counters show that an ATOMIC WRITE faults an untouched page once, and that a
 * persistent FLUSH faults nothing: it takes and writes back the pages that are
 * present, whatever the size of the MR (a whole 64 GiB MR). A persistent FLUSH
 * succeeds only on persistent memory (device DAX), as for pinned MRs; over RAM it
 * fails with a remote access error.
 *
 * vmtest-class: dma
 */
#include "lib/odp.h"
#include "lib/rxe_raw.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define ODP_SUPPORT_FLUSH		(1 << 6)
#define ODP_SUPPORT_ATOMIC_WRITE	(1 << 7)
#define NPAGES				16
#define SPARSE_SIZE			(64ULL << 30)
#define ATOMIC_WRITE_CHECKS		3
#define RAM_CHECKS			5
#define PMEM_CHECKS			9
/* The NVDIMMs of the distro-mm and debug profiles as the guest sets them up (pmem_setup). */
#define DAX_DEV				"/dev/dax0.0"
#define DAX_FILE			"/run/pmem-fs/odp_write_ops"

static struct vt_options opt;
static struct ibv_context *ctx;
static size_t page_size, buf_size;

static bool atomic_write(struct vt_loopback *lb, void *addr, uint32_t rkey, uint64_t value)
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(lb->qp[0]);
	struct ibv_wc wc;
	int ret;

	ibv_wr_start(qpx);
	qpx->wr_id = 7;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qpx, rkey, (uintptr_t)addr, &value);
	ret = ibv_wr_complete(qpx);
	if (ret) {
		tap_diag("ibv_wr_complete(ATOMIC WRITE): %s", strerror(ret));
		return false;
	}
	if (vt_poll_one(lb->send_cq, &wc, VT_WAIT_MS))
		return false;
	if (wc.status != IBV_WC_SUCCESS) {
		tap_diag("ATOMIC WRITE: %s", ibv_wc_status_str(wc.status));
		return false;
	}
	return true;
}

static void test_atomic_write(uint32_t caps)
{
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 }, d[VT_ODP_NCOUNTERS] = { 0 };
	struct vt_loopback lb;
	struct vt_odp_buf t;
	uint64_t *word;
	bool ok;
	int i;

	/* The one reason to skip: the device does not offer it. Anything else fails. */
	if (!(caps & ODP_SUPPORT_ATOMIC_WRITE)) {
		for (i = 0; i < ATOMIC_WRITE_CHECKS; i++)
			tap_skip("the device has no ODP ATOMIC WRITE",
				 "ATOMIC WRITE on ODP, check %d", i + 1);
		return;
	}
	if (vt_loopback_create_ex(&lb, ctx, &opt, NULL, IBV_QP_EX_WITH_ATOMIC_WRITE, 0)) {
		for (i = 0; i < ATOMIC_WRITE_CHECKS; i++)
			tap_ok(false, "ATOMIC WRITE on ODP, check %d: no QP pair with ATOMIC WRITE",
			       i + 1);
		return;
	}
	if (!vt_odp_buf_init(&t, lb.pd, buf_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register an ODP MR");
	word = (uint64_t *)(t.p + 3 * page_size + 64);

	ok = vt_odp_snapshot(ctx, opt.port, b) && atomic_write(&lb, word, t.mr->rkey, 0x1122334455667788ULL) &&
	     vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && *word == 0x1122334455667788ULL && d[VT_ODP_PAGE_FAULTS] == 1 &&
	       d[VT_ODP_PAGES_FAULTED] == 1,
	       "ATOMIC WRITE into an untouched ODP page: value %#llx, %ld fault, %ld page",
	       (unsigned long long)*word, d[VT_ODP_PAGE_FAULTS], d[VT_ODP_PAGES_FAULTED]);

	ok = vt_odp_snapshot(ctx, opt.port, b) && atomic_write(&lb, word + 1, t.mr->rkey, 42) && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && word[1] == 42 && d[VT_ODP_PAGE_FAULTS] == 0,
	       "ATOMIC WRITE into the same page again: no fault (%ld)", d[VT_ODP_PAGE_FAULTS]);

	ok = !madvise(t.p, buf_size, MADV_DONTNEED) && vt_odp_snapshot(ctx, opt.port, b) &&
	     atomic_write(&lb, word, t.mr->rkey, 7) && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	tap_ok(ok && *word == 7 && word[1] == 0 && d[VT_ODP_PAGE_FAULTS] == 1,
	       "ATOMIC WRITE after MADV_DONTNEED: into the new page (%ld fault)",
	       d[VT_ODP_PAGE_FAULTS]);
	vt_odp_buf_fini(&t);
	vt_loopback_destroy(&lb);
}

static bool flush(struct vt_loopback *lb, void *sq, void *addr, uint32_t len, uint32_t rkey,
		  uint8_t type, uint8_t level, enum ibv_wc_status *status)
{
	struct ibv_wc wc;

	if (vt_rxe_post_flush(lb->qp[0], sq, 8, (uintptr_t)addr, len, rkey, type, level) ||
	    vt_poll_one(lb->send_cq, &wc, 20000))
		return false;
	*status = wc.status;
	if (wc.status == IBV_WC_SUCCESS && wc.opcode != VT_WC_FLUSH) {
		tap_diag("FLUSH completed as opcode %d", wc.opcode);
		return false;
	}
	return true;
}

/* A persistent FLUSH and the counters around it: pages taken without a fault. */
static bool flush_counted(struct vt_loopback *lb, void *sq, void *addr, uint32_t len,
			  uint32_t rkey, uint8_t level, long *d, long long *ms)
{
	enum ibv_wc_status st = IBV_WC_GENERAL_ERR;
	long b[VT_ODP_NCOUNTERS] = { 0 }, a[VT_ODP_NCOUNTERS] = { 0 };
	long long t0 = vt_now_ms();
	bool ok;

	ok = vt_odp_snapshot(ctx, opt.port, b) && flush(lb, sq, addr, len, rkey, VT_FLUSH_PERSISTENT, level, &st);
	*ms = vt_now_ms() - t0;
	ok = ok && vt_odp_snapshot(ctx, opt.port, a);
	vt_odp_delta(b, a, d);
	if (ok && st != IBV_WC_SUCCESS)
		tap_diag("FLUSH: %s", ibv_wc_status_str(st));
	return ok && st == IBV_WC_SUCCESS;
}

/* A connected QP pair that can FLUSH, and the send queue to post FLUSH on. */
struct flush_qp {
	struct vt_loopback lb;
	void *sq;
};

static void flush_qp_open(struct flush_qp *f, struct ibv_pd *pd)
{
	struct vt_rxe_maps before;

	if (vt_rxe_maps_read(ctx, &before) ||
	    vt_loopback_create_ex(&f->lb, ctx, &opt, pd, 0,
				  VT_ACCESS_FLUSH_GLOBAL | VT_ACCESS_FLUSH_PERSISTENT))
		tap_bail("no connected QP pair for FLUSH");
	/* Our own helper failing is not a missing feature: no skip, a bail-out. */
	f->sq = vt_rxe_sq_of_loopback(ctx, &before);
	if (!f->sq)
		tap_bail("rxe's send queue not found to post FLUSH on");
}

/*
 * A persistent FLUSH that must fail with a remote access error, on a QP pair of its
 * own since the error ends the pair.
 */
static void flush_refused(struct ibv_pd *pd, void *addr, uint32_t len, uint32_t rkey,
			  uint8_t level, const char *what)
{
	enum ibv_wc_status st = IBV_WC_GENERAL_ERR;
	struct flush_qp f;
	bool ok;

	flush_qp_open(&f, pd);
	ok = flush(&f.lb, f.sq, addr, len, rkey, VT_FLUSH_PERSISTENT, level, &st);
	tap_ok(ok && st == IBV_WC_REM_ACCESS_ERR, "%s: %s (want %s)", what,
	       ok ? ibv_wc_status_str(st) : "no completion",
	       ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	vt_loopback_destroy(&f.lb);
}

/*
 * Ordinary RAM: a persistent FLUSH must be refused, as it is for pinned MRs (which
 * cannot even be registered for it over RAM); a global FLUSH succeeds.
 */
static void test_flush_ram(struct ibv_pd *pd)
{
	const int access = VT_ODP_ACCESS | VT_ACCESS_FLUSH_GLOBAL | VT_ACCESS_FLUSH_PERSISTENT;
	enum ibv_wc_status st = IBV_WC_GENERAL_ERR;
	struct vt_odp_buf t, noflush;
	struct flush_qp f;
	struct ibv_mr *mr;
	bool ok;

	if (!vt_odp_buf_init(&t, pd, buf_size, 0, access) ||
	    !vt_odp_buf_init(&noflush, pd, buf_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register ODP MRs");

	mr = ibv_reg_mr(pd, noflush.p, buf_size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			VT_ACCESS_FLUSH_PERSISTENT);
	tap_ok(!mr && errno == EINVAL,
	       "a pinned MR over RAM with persistent FLUSH access is refused: %s",
	       mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);

	/* Written by the device and by the CPU: in RAM all the same. */
	flush_qp_open(&f, pd);
	vt_fill(noflush.p, buf_size, 94);
	vt_fill(t.p + buf_size / 2, buf_size / 2, 95);
	ok = vt_move(&f.lb, IBV_WR_RDMA_WRITE, noflush.p, noflush.mr, t.p, t.mr, buf_size / 2) &&
	     flush(&f.lb, f.sq, t.p, buf_size, t.mr->rkey, VT_FLUSH_GLOBAL, VT_FLUSH_RANGE, &st);
	tap_ok(ok && st == IBV_WC_SUCCESS && vt_check(t.p, buf_size / 2, 94) < 0,
	       "global FLUSH of an ODP range over RAM: %s", ok ? ibv_wc_status_str(st) : "no completion");
	vt_loopback_destroy(&f.lb);

	flush_refused(pd, t.p, buf_size, t.mr->rkey, VT_FLUSH_RANGE,
		      "persistent FLUSH of an ODP range over RAM");
	mr = ibv_reg_mr(pd, NULL, SIZE_MAX, access);
	if (!mr) {
		tap_skip("no implicit ODP", "persistent FLUSH of a whole implicit MR");
	} else {
		flush_refused(pd, NULL, 0, mr->rkey, VT_FLUSH_MR,
			      "persistent FLUSH of a whole implicit MR (the address space has RAM)");
		ibv_dereg_mr(mr);
	}
	flush_refused(pd, noflush.p, page_size, noflush.mr->rkey, VT_FLUSH_RANGE,
		      "persistent FLUSH of an ODP MR registered without FLUSH access");
	vt_odp_buf_fini(&noflush);
	vt_odp_buf_fini(&t);
}

/* size bytes of the device-DAX region at offset, mapped shared at addr (or anywhere). */
static unsigned char *dax_map(int fd, void *addr, size_t size, off_t offset)
{
	void *p = mmap(addr, size, PROT_READ | PROT_WRITE, MAP_SHARED | (addr ? MAP_FIXED : 0),
		       fd, offset);

	if (p == MAP_FAILED)
		tap_bail("mmap(%s, %zu bytes at offset %lld): %s", DAX_DEV, size,
			 (long long)offset, strerror(errno));
	return p;
}

/*
 * A file of a DAX file system: mapped shared, its pages are persistent memory; mapped
 * private, those the CPU wrote are copies in RAM, which a persistent FLUSH must refuse.
 */
static void test_flush_dax_file(struct ibv_pd *pd)
{
	const int access = VT_ODP_ACCESS | VT_ACCESS_FLUSH_GLOBAL | VT_ACCESS_FLUSH_PERSISTENT;
	long d[VT_ODP_NCOUNTERS] = { 0 };
	unsigned char *shared, *priv;
	struct ibv_mr *smr, *pmr;
	struct vt_odp_buf src;
	struct flush_qp f;
	long long ms;
	size_t i;
	bool ok;
	int fd;

	fd = open(DAX_FILE, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		tap_bail("open %s: %s (the guest mounts a DAX file system there)", DAX_FILE,
			 strerror(errno));
	/* Blocks written, not holes: every page of the file is on the NVDIMM. */
	if (!vt_odp_buf_init(&src, pd, buf_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register an ODP MR");
	vt_fill(src.p, buf_size, 97);
	if (pwrite(fd, src.p, buf_size, 0) != (ssize_t)buf_size || fsync(fd))
		tap_bail("write %s: %s", DAX_FILE, strerror(errno));
	shared = mmap(NULL, buf_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	priv = mmap(NULL, buf_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (shared == MAP_FAILED || priv == MAP_FAILED)
		tap_bail("mmap %s: %s", DAX_FILE, strerror(errno));
	smr = ibv_reg_mr(pd, shared, buf_size, access);
	pmr = ibv_reg_mr(pd, priv, buf_size, access);
	if (!smr || !pmr)
		tap_bail("ibv_reg_mr(ODP over a DAX file): %s", strerror(errno));
	flush_qp_open(&f, pd);

	vt_fill(src.p, buf_size, 98);
	ok = vt_move(&f.lb, IBV_WR_RDMA_WRITE, src.p, src.mr, shared, smr, buf_size) &&
	     flush_counted(&f.lb, f.sq, shared, buf_size, smr->rkey, VT_FLUSH_RANGE, d, &ms);
	tap_ok(ok && vt_check(shared, buf_size, 98) < 0,
	       "persistent FLUSH of a shared mapping of a DAX file the device wrote");

	/* Read by the CPU, the private mapping's pages are the file's own. */
	for (i = 0; i < buf_size; i += page_size)
		(void)*(volatile unsigned char *)(priv + i);
	ok = flush_counted(&f.lb, f.sq, priv, buf_size, pmr->rkey, VT_FLUSH_RANGE, d, &ms);
	tap_ok(ok && d[VT_ODP_PAGES_FAULTED] == NPAGES,
	       "persistent FLUSH of a private mapping of a DAX file the CPU read: %ld pages taken (want %d)",
	       d[VT_ODP_PAGES_FAULTED], NPAGES);
	vt_loopback_destroy(&f.lb);

	/* One page written by the CPU: a private copy, in RAM. */
	priv[3 * page_size] ^= 1;
	flush_refused(pd, priv, buf_size, pmr->rkey, VT_FLUSH_RANGE,
		      "persistent FLUSH of a private mapping of a DAX file with a page the CPU copied");

	ibv_dereg_mr(pmr);
	ibv_dereg_mr(smr);
	munmap(priv, buf_size);
	munmap(shared, buf_size);
	vt_odp_buf_fini(&src);
	close(fd);
	unlink(DAX_FILE);
}

/*
 * Persistent memory (device DAX): a persistent FLUSH succeeds and writes back the
 * pages present without faulting, whatever the size of the MR; a range that reaches
 * past it into RAM is refused.
 */
static void test_flush_pmem(struct ibv_pd *pd)
{
	const int access = VT_ODP_ACCESS | VT_ACCESS_FLUSH_GLOBAL | VT_ACCESS_FLUSH_PERSISTENT;
	long d[VT_ODP_NCOUNTERS] = { 0 };
	struct vt_odp_buf src;
	unsigned char *pm, *sparse, *mixed;
	struct ibv_mr *mr, *smr, *xmr;
	struct flush_qp f;
	long long ms;
	bool ok;
	int fd, i;

	fd = open(DAX_DEV, O_RDWR);
	if (fd < 0) {
		for (i = 0; i < PMEM_CHECKS; i++)
			tap_skip("no persistent memory (" DAX_DEV "): the distro-mm and debug profiles have an NVDIMM",
				 "persistent FLUSH on persistent memory, check %d", i + 1);
		return;
	}
	if (!vt_odp_buf_init(&src, pd, buf_size, 0, VT_ODP_ACCESS))
		tap_bail("cannot register an ODP MR");
	pm = dax_map(fd, NULL, buf_size, 0);
	mr = ibv_reg_mr(pd, pm, buf_size, access);
	if (!mr)
		tap_bail("ibv_reg_mr(ODP over device DAX): %s", strerror(errno));
	flush_qp_open(&f, pd);

	/* The first half written by the device: present in the MR; the rest untouched. */
	vt_fill(src.p, buf_size, 90);
	ok = vt_move(&f.lb, IBV_WR_RDMA_WRITE, src.p, src.mr, pm, mr, buf_size / 2) &&
	     flush_counted(&f.lb, f.sq, pm, buf_size, mr->rkey, VT_FLUSH_RANGE, d, &ms);
	tap_ok(ok && d[VT_ODP_PAGE_FAULTS] == 0 && d[VT_ODP_PAGES_FAULTED] == 0 &&
	       vt_check(pm, buf_size / 2, 90) < 0,
	       "persistent FLUSH of a persistent ODP range half written by the device: %ld faults, %ld pages taken",
	       d[VT_ODP_PAGE_FAULTS], d[VT_ODP_PAGES_FAULTED]);

	/* The second half written by the CPU: the flush takes it, without a fault. */
	vt_fill(pm + buf_size / 2, buf_size / 2, 91);
	ok = flush_counted(&f.lb, f.sq, pm, buf_size, mr->rkey, VT_FLUSH_RANGE, d, &ms);
	tap_ok(ok && d[VT_ODP_PAGE_FAULTS] == 0 && d[VT_ODP_PAGES_FAULTED] == NPAGES / 2,
	       "the same after the CPU wrote the other half: %ld faults, %ld pages taken (want %d)",
	       d[VT_ODP_PAGE_FAULTS], d[VT_ODP_PAGES_FAULTED], NPAGES / 2);

	/*
	 * A 64 GiB MR of holes with one persistent page 40 GiB in: a whole-MR FLUSH passes
	 * the holes over and takes that page.
	 */
	sparse = mmap(NULL, SPARSE_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		      -1, 0);
	if (sparse == MAP_FAILED)
		tap_bail("mmap(%llu GiB): %s", SPARSE_SIZE >> 30, strerror(errno));
	dax_map(fd, sparse + (40ULL << 30), page_size, buf_size);
	if (munmap(sparse, 40ULL << 30) ||
	    munmap(sparse + (40ULL << 30) + page_size, SPARSE_SIZE - (40ULL << 30) - page_size))
		tap_bail("munmap: %s", strerror(errno));
	smr = ibv_reg_mr(pd, sparse, SPARSE_SIZE, access);
	if (!smr)
		tap_bail("ibv_reg_mr(%llu GiB ODP): %s", SPARSE_SIZE >> 30, strerror(errno));
	vt_fill(sparse + (40ULL << 30), page_size, 96);
	ok = flush_counted(&f.lb, f.sq, sparse, 0, smr->rkey, VT_FLUSH_MR, d, &ms);
	tap_ok(ok && d[VT_ODP_PAGE_FAULTS] == 0 && d[VT_ODP_PAGES_FAULTED] == 1,
	       "persistent FLUSH of a whole %llu GiB ODP MR of holes with one persistent page 40 GiB in: %ld pages taken, %ld faults, %lld ms",
	       SPARSE_SIZE >> 30, d[VT_ODP_PAGES_FAULTED], d[VT_ODP_PAGE_FAULTS], ms);
	ibv_dereg_mr(smr);
	munmap(sparse + (40ULL << 30), page_size);

	/* Through an implicit MR: one page by the device makes the child. */
	xmr = ibv_reg_mr(pd, NULL, SIZE_MAX, access);
	if (!xmr) {
		tap_skip("no implicit ODP", "persistent FLUSH of persistent memory through an implicit MR");
	} else {
		vt_fill(src.p, page_size, 92);
		ok = vt_move(&f.lb, IBV_WR_RDMA_WRITE, src.p, src.mr, pm, xmr, page_size) &&
		     flush_counted(&f.lb, f.sq, pm, buf_size, xmr->rkey, VT_FLUSH_RANGE, d, &ms);
		tap_ok(ok && d[VT_ODP_PAGE_FAULTS] == 0 && d[VT_ODP_PAGES_FAULTED] == NPAGES - 1,
		       "persistent FLUSH of persistent memory through an implicit MR: %ld pages taken (want %d), %ld faults",
		       d[VT_ODP_PAGES_FAULTED], NPAGES - 1, d[VT_ODP_PAGE_FAULTS]);
		ibv_dereg_mr(xmr);
	}

	/* A persistent page with RAM right after it: the page alone, then both. */
	mixed = mmap(NULL, 2 * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mixed == MAP_FAILED)
		tap_bail("mmap: %s", strerror(errno));
	dax_map(fd, mixed, page_size, buf_size + page_size);
	memset(mixed, 1, 2 * page_size);
	xmr = ibv_reg_mr(pd, mixed, 2 * page_size, access);
	if (!xmr)
		tap_bail("ibv_reg_mr(ODP): %s", strerror(errno));
	ok = flush_counted(&f.lb, f.sq, mixed, page_size, xmr->rkey, VT_FLUSH_RANGE, d, &ms);
	tap_ok(ok, "persistent FLUSH of the persistent page of an MR that also has RAM");
	vt_loopback_destroy(&f.lb);
	flush_refused(pd, mixed, 2 * page_size, xmr->rkey, VT_FLUSH_RANGE,
		      "persistent FLUSH of a range from persistent memory into RAM");
	ibv_dereg_mr(xmr);
	munmap(mixed, 2 * page_size);

	ibv_dereg_mr(mr);
	munmap(pm, buf_size);
	vt_odp_buf_fini(&src);
	close(fd);
	test_flush_dax_file(pd);
}

static void test_flush(uint32_t caps)
{
	struct ibv_pd *pd;
	int i;

	if (!(caps & ODP_SUPPORT_FLUSH)) {
		for (i = 0; i < RAM_CHECKS + PMEM_CHECKS; i++)
			tap_skip("the device has no ODP FLUSH", "FLUSH on ODP, check %d", i + 1);
		return;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		tap_bail("ibv_alloc_pd: %s", strerror(errno));
	test_flush_ram(pd);
	test_flush_pmem(pd);
	ibv_dealloc_pd(pd);
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr;
	uint32_t caps;

	page_size = sysconf(_SC_PAGESIZE);
	buf_size = NPAGES * page_size;
	ctx = vt_odp_start(argc, argv, &opt, 2 + ATOMIC_WRITE_CHECKS + RAM_CHECKS + PMEM_CHECKS,
			   VT_NEED_ODP | VT_NEED_COUNTERS, "ODP write-op", &attr);
	caps = attr.odp_caps.per_transport_caps.rc_odp_caps;
	tap_ok(caps & ODP_SUPPORT_FLUSH, "RC ODP caps include FLUSH (0x%x)", caps);
	tap_ok(caps & ODP_SUPPORT_ATOMIC_WRITE, "RC ODP caps include ATOMIC WRITE (0x%x)", caps);

	test_atomic_write(caps);
	test_flush(caps);
	ibv_close_device(ctx);
	return tap_done();
}
