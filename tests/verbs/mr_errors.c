// SPDX-License-Identifier: GPL-2.0
/*
 * Memory registration must refuse bad requests with the errno the kernel documents,
 * and must still work for a good one afterwards. ODP MRs of terabytes, which any user
 * may ask for, fail with ENOMEM (or register) without a kernel warning.
 *
 * vmtest-class: nodma
 */
#include "tap.h"
#include "verbs.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Try a registration that must fail with `expected`; a success is deregistered. */
static void expect_reg_error(struct ibv_pd *pd, void *addr, size_t len, int access,
			     int expected, const char *what)
{
	struct ibv_mr *mr;
	int err;

	errno = 0;
	mr = ibv_reg_mr(pd, addr, len, access);
	err = errno;
	if (mr)
		ibv_dereg_mr(mr);
	tap_ok(!mr && err == expected, "%s fails with %s (got %s)", what, strerrorname_np(expected),
	       mr ? "success" : (strerrorname_np(err) ? strerrorname_np(err) : "unknown errno"));
}

#define HUGE_ODP_CHECKS	3

/*
 * ODP MRs as large as a user may ask for: one page-list entry per page makes lists of
 * gigabytes (2 GiB for 1 TiB), past what the kernel allocates. Each must register or
 * fail with ENOMEM; a warning in the kernel log (kvmalloc() refusing such a size
 * without __GFP_NOWARN) fails the run's kernel-log check.
 */
static void huge_odp(struct ibv_context *ctx, struct ibv_pd *pd)
{
	static const unsigned long long sizes[HUGE_ODP_CHECKS] = {
		(1ULL << 40) + 4096, 2ULL << 40, 32ULL << 40,
	};
	struct ibv_device_attr_ex attr;
	struct ibv_mr *mr;
	void *p;
	int i, err;

	if (ibv_query_device_ex(ctx, NULL, &attr) ||
	    !(attr.odp_caps.general_caps & IBV_ODP_SUPPORT)) {
		for (i = 0; i < HUGE_ODP_CHECKS; i++)
			tap_skip("the device has no ODP", "ODP MR of %llu GiB", sizes[i] >> 30);
		return;
	}
	for (i = 0; i < HUGE_ODP_CHECKS; i++) {
		p = mmap(NULL, sizes[i], PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			tap_bail("mmap of %llu GiB (no memory reserved): %s", sizes[i] >> 30,
				 strerror(errno));
		errno = 0;
		mr = ibv_reg_mr(pd, p, sizes[i], IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE);
		err = errno;
		tap_ok(mr || err == ENOMEM, "ODP MR of %llu GiB%s: %s (want ENOMEM or success)",
		       sizes[i] >> 30, sizes[i] % (1ULL << 30) ? " + 4 KiB" : "",
		       mr ? "registered" : strerrorname_np(err) ? strerrorname_np(err) : "unknown errno");
		if (mr)
			ibv_dereg_mr(mr);
		munmap(p, sizes[i]);
	}
}

int main(int argc, char **argv)
{
	const int rw = IBV_ACCESS_LOCAL_WRITE;
	long page = sysconf(_SC_PAGESIZE);
	struct vt_options opt;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	char *buf, *hole;

	vt_parse_options(argc, argv, &opt);
	tap_plan(8 + HUGE_ODP_CHECKS);

	ctx = vt_open_device(opt.dev);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!tap_ok(pd != NULL, "open the device and allocate a PD"))
		tap_bail("no protection domain");

	buf = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	hole = mmap(NULL, 4 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || hole == MAP_FAILED || munmap(hole, 4 * page))
		tap_bail("mmap/munmap of test buffers failed: %s", strerror(errno));

	expect_reg_error(pd, buf, 0, rw, EINVAL, "zero length");
	/* Remote write (or atomic) access requires local write access. */
	expect_reg_error(pd, buf, page, IBV_ACCESS_REMOTE_WRITE, EINVAL,
			 "REMOTE_WRITE without LOCAL_WRITE");
	expect_reg_error(pd, buf, page, IBV_ACCESS_REMOTE_ATOMIC, EINVAL,
			 "REMOTE_ATOMIC without LOCAL_WRITE");
	/* Bits 20-29 are optional flags a device may ignore; bit 15 is defined by nobody. */
	expect_reg_error(pd, buf, page, rw | (1 << 15), EINVAL, "an undefined access flag");
	expect_reg_error(pd, hole, 4 * page, rw, EFAULT, "an address with nothing mapped");
	expect_reg_error(pd, (void *)(UINTPTR_MAX - page + 1), 2 * page, rw, EINVAL,
			 "address + length overflowing 64 bits");

	memset(buf, 0x5a, 4 * page);
	mr = ibv_reg_mr(pd, buf + 100, 3 * page, rw | IBV_ACCESS_REMOTE_READ);
	tap_ok(mr && mr->lkey && mr->length == (size_t)(3 * page),
	       "a good registration still succeeds afterwards (%s)",
	       mr ? "lkey set" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);

	huge_odp(ctx, pd);

	munmap(buf, 4 * page);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_done();
}
