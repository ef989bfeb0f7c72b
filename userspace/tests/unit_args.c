// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host unit tests, no device needed: bad arguments are refused with EINVAL and a
 * message that says what to change, before anything reaches a device; a device that
 * is not there is ENODEV with the devices that are; messages are per thread.
 */
#include "tap.h"
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* Never dereferenced: every check below fails before the device is used. */
static struct ibodp_dev *fake_dev = (struct ibodp_dev *)0x1000;
static struct ibv_pd *fake_pd = (struct ibv_pd *)0x2000;

static void expect(int ret, int err, const char *msg_part, const char *what)
{
	tap_ok(ret == -err && strstr(ibodp_errmsg(), msg_part), "%s: %s (\"%s\")", what,
	      ret == -err ? "refused as expected" : strerror(-ret), ibodp_errmsg());
}

static void test_reg_args(void)
{
	struct ibodp_mr *mr = (struct ibodp_mr *)1;
	char buf[4096];

	expect(ibodp_reg_mr(fake_dev, fake_pd, buf, sizeof(buf), 0, IBODP_EXPLICIT, IBODP_FAIL,
			    NULL), EINVAL, "mr is NULL", "reg without a place for the MR");
	expect(ibodp_reg_mr(NULL, fake_pd, buf, sizeof(buf), 0, IBODP_EXPLICIT, IBODP_FAIL, &mr),
	       EINVAL, "dev is NULL", "reg without a device");
	tap_ok(mr == NULL, "a failed reg leaves *mr NULL");
	expect(ibodp_reg_mr(fake_dev, NULL, buf, sizeof(buf), 0, IBODP_EXPLICIT, IBODP_FAIL, &mr),
	       EINVAL, "pd is NULL", "reg without a PD");
	expect(ibodp_reg_mr(fake_dev, fake_pd, buf, sizeof(buf), 0, (enum ibodp_kind)7,
			    IBODP_FAIL, &mr), EINVAL, "unknown kind 7", "reg of an unknown kind");
	expect(ibodp_reg_mr(fake_dev, fake_pd, buf, sizeof(buf), 0, IBODP_EXPLICIT,
			    (enum ibodp_fallback)3, &mr), EINVAL, "unknown fallback policy 3",
	       "reg with an unknown fallback");
	expect(ibodp_reg_mr(fake_dev, fake_pd, buf, sizeof(buf), IBV_ACCESS_ON_DEMAND,
			    IBODP_EXPLICIT, IBODP_FAIL, &mr), EINVAL, "leave IBV_ACCESS_ON_DEMAND out",
	       "reg with IBV_ACCESS_ON_DEMAND in the access flags");
	expect(ibodp_reg_mr(fake_dev, fake_pd, buf, sizeof(buf), 0, IBODP_IMPLICIT, IBODP_FAIL,
			    &mr), EINVAL, "pass addr NULL and length SIZE_MAX",
	       "implicit reg with a range");
	expect(ibodp_reg_mr(fake_dev, fake_pd, NULL, SIZE_MAX, 0, IBODP_IMPLICIT,
			    IBODP_FALLBACK_PINNED, &mr), EINVAL, "cannot fall back to pinned",
	       "implicit reg with the pinned fallback");
	expect(ibodp_reg_mr(fake_dev, fake_pd, buf, 0, 0, IBODP_EXPLICIT, IBODP_FAIL, &mr),
	       EINVAL, "empty range", "reg of 0 bytes");
	expect(ibodp_reg_mr(fake_dev, fake_pd, NULL, 4096, 0, IBODP_PINNED, IBODP_FAIL, &mr),
	       EINVAL, "use IBODP_IMPLICIT", "reg at NULL");
}

static void test_prefetch_args(void)
{
	char buf[8192];
	struct ibodp_mr mr = { .kind = IBODP_EXPLICIT, .addr = buf + 4096, .length = 2048 };
	struct ibodp_mr pinned = { .kind = IBODP_PINNED, .addr = buf + 4096, .length = 2048 };
	struct ibodp_mr implicit = { .kind = IBODP_IMPLICIT, .length = SIZE_MAX };
	bool direct = true;

	expect(ibodp_prefetch(NULL, buf, 1, 0, &direct), EINVAL, "mr is NULL",
	       "prefetch without an MR");
	tap_ok(!direct, "a refused prefetch says it did not go to the kernel directly");
	expect(ibodp_prefetch(&mr, mr.addr, 1, 1u << 5, NULL), EINVAL, "unknown flags 0x20",
	       "prefetch with unknown flags");
	expect(ibodp_prefetch(&mr, mr.addr, 1, IBODP_PREFETCH_WRITE | IBODP_PREFETCH_NO_FAULT,
			      NULL),
	       EINVAL, "cannot be for writing", "prefetch NO_FAULT for writing");
	expect(ibodp_prefetch(&mr, buf + 4096 + 2000, 200, 0, NULL), EINVAL, "outside the MR",
	       "prefetch past the end of the MR");
	expect(ibodp_prefetch(&mr, buf + 4000, 200, 0, NULL), EINVAL, "outside the MR",
	       "prefetch before the MR");
	tap_ok(ibodp_prefetch(&mr, mr.addr, 0, 0, NULL) == 0, "prefetch of 0 bytes: nothing to do");
	expect(ibodp_advise_mr(NULL, fake_pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, NULL, 0, &direct),
	       EINVAL, "dev is NULL",
	       "advise without a device");
	expect(ibodp_advise_mr(fake_dev, fake_pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, NULL, 0, NULL),
	       EINVAL, "no SGE", "advise on no SGE");
	tap_ok(ibodp_prefetch(&pinned, pinned.addr, 2048, IBODP_PREFETCH_SYNC, NULL) == 0,
	      "prefetch of a pinned MR: nothing to do");
	expect(ibodp_prefetch(&implicit, (void *)(UINTPTR_MAX - 4095), 8192, 0, NULL), EINVAL,
	       "wraps around", "implicit prefetch past the end of the address space");
	expect(ibodp_prefetch(&implicit, buf, SIZE_MAX, 0, NULL), EINVAL, "wraps around",
	       "implicit prefetch of SIZE_MAX bytes");
}

/* A PD of the device's own context, none of it dereferenced past the device check. */
static void test_advise_wrap(void)
{
	static struct ibv_device device = { .name = "fake0" }, other = { .name = "fake1" };
	struct ibv_context ctx = { .device = &device };
	struct ibodp_dev dev = { .ctx = &ctx };
	struct ibv_pd pd = { .context = &ctx };
	struct ibv_sge sge[2] = {
		{ .addr = 0x10000, .length = 4096 },
		{ .addr = UINT64_MAX - 99, .length = 4096 },
	};

	struct ibv_context other_ctx = { .device = &other };
	struct ibv_pd other_pd = { .context = &other_ctx };
	struct ibodp_mr *mr;
	char buf[64];

	expect(ibodp_advise_mr(&dev, &pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, sge, 2, NULL), EINVAL,
	       "SGE 1", "advise on an SGE that wraps around the address space");
	/* One rule for PDs: of the device, from any context; another device's is refused. */
	expect(ibodp_reg_mr(&dev, &other_pd, buf, sizeof(buf), 0, IBODP_PINNED, IBODP_FAIL, &mr),
	       EINVAL, "another device", "reg with a PD of another device");
	expect(ibodp_advise_mr(&dev, &other_pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, sge, 1, NULL),
	       EINVAL, "another device", "advise with a PD of another device");
}

/* A failure whose errno was 0 is still a failure. */
static void test_fail_never_zero(void)
{
	int ret = ibodp_fail(0, "a failure with no errno");

	tap_ok(ret < 0 && strstr(ibodp_errmsg(), "a failure with no errno"),
	      "ibodp_fail(0, ...) returns %d, not success (\"%s\")", ret, ibodp_errmsg());
}

static void test_open(void)
{
	struct ibodp_dev *dev = (struct ibodp_dev *)1;
	int ret;

	expect(ibodp_open(NULL, NULL), EINVAL, "devp is NULL", "open without a place");
	expect(ibodp_open_ex(NULL, 1u << 7, &dev), EINVAL, "unknown flags 0x80",
	       "open with unknown flags");
	expect(ibodp_wrap((struct ibv_context *)0x4000, NULL), EINVAL, "devp is NULL",
	       "wrap without a place");
	ret = ibodp_wrap(NULL, &dev);
	tap_ok(ret == -EINVAL && dev == NULL && strstr(ibodp_errmsg(), "ctx is NULL"),
	      "wrap of no context: EINVAL, *dev NULL (\"%s\")", ibodp_errmsg());
	dev = (struct ibodp_dev *)1;
	ret = ibodp_open("no-such-device0", &dev);
	tap_ok(ret == -ENODEV && dev == NULL && strstr(ibodp_errmsg(), "no-such-device0"),
	      "open of a device that is not there: ENODEV (\"%s\")", ibodp_errmsg());
	tap_ok(ibodp_context(NULL) == NULL && ibodp_name(NULL) == NULL,
	      "context and name of no device are NULL");
	ibodp_close(NULL);
	tap_ok(ibodp_dereg_mr(NULL) == 0, "close and dereg of nothing are no-ops");
}

static void *other_thread(void *arg)
{
	(void)arg;
	ibodp_fail(EIO, "a failure in another thread");
	return NULL;
}

static void test_errmsg_per_thread(void)
{
	pthread_t t;

	ibodp_fail(EPERM, "the main thread's failure");
	pthread_create(&t, NULL, other_thread, NULL);
	pthread_join(t, NULL);
	tap_ok(!strcmp(ibodp_errmsg(), "the main thread's failure: Operation not permitted"),
	      "messages are per thread: \"%s\"", ibodp_errmsg());
}

int main(void)
{
	test_reg_args();
	test_prefetch_args();
	test_advise_wrap();
	test_fail_never_zero();
	test_open();
	test_errmsg_per_thread();
	return tap_done();
}
