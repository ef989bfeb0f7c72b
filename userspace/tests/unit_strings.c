// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host unit tests, no device needed: capabilities and counters as text (also into
 * buffers too small), counter deltas, and the caps of a device as the library reads
 * them from its attributes (with IBODP_NO_ODP honoured).
 */
#include "tap.h"
#include "internal.h"

#include <errno.h>
#include <string.h>

static void test_caps_str(void)
{
	struct ibodp_caps caps = {
		.explicit_odp = true, .implicit_odp = true,
		.rc = IBODP_OP_SEND | IBODP_OP_WRITE | IBODP_OP_FLUSH | IBODP_OP_ATOMIC_WRITE,
		.ud = IBODP_OP_RECV | (1u << 12),
	};
	const char *want = "explicit implicit; RC: SEND WRITE FLUSH ATOMIC_WRITE; UD: RECV 0x1000";
	char buf[128], small[10];
	int n;

	n = ibodp_caps_str(&caps, buf, sizeof(buf));
	tap_ok(n == (int)strlen(want) && !strcmp(buf, want), "caps as text: \"%s\"", buf);
	n = ibodp_caps_str(&caps, small, sizeof(small));
	tap_ok(n == (int)strlen(want) && !strcmp(small, "explicit "),
	      "caps into a 10-byte buffer: truncated to \"%s\", full length %d", small, n);
	tap_ok(ibodp_caps_str(&caps, NULL, 0) == (int)strlen(want),
	      "caps length asked with no buffer");
	memset(&caps, 0, sizeof(caps));
	ibodp_caps_str(&caps, buf, sizeof(buf));
	tap_ok(!strcmp(buf, "no ODP"), "no caps: \"%s\"", buf);
	tap_ok(ibodp_caps_str(NULL, buf, sizeof(buf)) == -EINVAL &&
	      strstr(ibodp_errmsg(), "caps is NULL"), "NULL caps: EINVAL, \"%s\"", ibodp_errmsg());
	tap_ok(ibodp_caps_str_sized(&caps, 4, buf, sizeof(buf)) == -EINVAL,
	      "caps of a struct smaller than any version's: EINVAL");
}

static void test_counters(void)
{
	struct ibodp_counters a = { 10, 20, 30, 40, 50, 60, 70, 80 };
	struct ibodp_counters b = { 11, 36, 46, 40, 52, 61, 70, 83 }, d;
	char buf[256];

	ibodp_counters_delta(&a, &b, &d);
	tap_ok(d.page_faults == 1 && d.pages_faulted == 16 && d.pages_linked == 16 &&
	      d.pages_unlinked == 0 && d.invalidations == 2 && d.prefetch_requests == 1 &&
	      d.fault_errors == 0 && d.fault_retries == 3, "counter deltas, field by field");
	ibodp_counters_delta(&a, &b, &b);
	tap_ok(!memcmp(&b, &d, sizeof(d)), "delta into its own 'after' argument");
	ibodp_counters_str(&d, buf, sizeof(buf));
	tap_ok(!strcmp(buf, "page_faults 1  pages_faulted 16  pages_linked 16  pages_unlinked 0  "
			   "invalidations 2  prefetch_requests 1  fault_errors 0  fault_retries 3"),
	      "counters as text: \"%s\"", buf);
}

/*
 * A program built against 1.0 or 1.1 passes a struct ibodp_counters of 7 counters to
 * the 1.0 functions, one built against a newer header a longer struct to the sized
 * ones: each gets the fields it knows, and nothing past its struct is written.
 */
static void test_counters_sizes(void)
{
	const size_t old = 7 * sizeof(uint64_t);
	struct {
		struct ibodp_counters c;
		uint64_t newer[2];	/* a later version's counters */
	} big;
	struct ibodp_counters a = { 1, 1, 1, 1, 1, 1, 1, 1 }, b = { 9, 9, 9, 9, 9, 9, 9, 9 };
	unsigned char d[sizeof(struct ibodp_counters)];
	char buf[256];

	memset(d, 0xa5, sizeof(d));
	(ibodp_counters_delta)(&a, &b, (struct ibodp_counters *)d);
	tap_ok(((struct ibodp_counters *)d)->fault_errors == 8 && d[old] == 0xa5 &&
	      d[sizeof(d) - 1] == 0xa5,
	      "the 1.0 delta writes the 1.0 counters only, nothing past them");
	memset(&big, 0xa5, sizeof(big));
	ibodp_counters_delta_sized(&a, &b, &big.c, sizeof(big));
	tap_ok(big.c.fault_retries == 8 && big.newer[0] == 0 && big.newer[1] == 0,
	      "a newer program's delta: the fields this library does not know are 0");
	(ibodp_counters_str)(&b, buf, sizeof(buf));
	tap_ok(!strstr(buf, "fault_retries") && strstr(buf, "fault_errors 9"),
	      "the 1.0 counters as text: 7 of them, \"%s\"", buf);
	errno = 0;
	tap_ok(ibodp_counters_str_sized(&b, old - 1, buf, sizeof(buf)) == -EINVAL &&
	      errno == EINVAL && strstr(ibodp_errmsg(), "smaller than any"),
	      "a struct smaller than 1.0's is refused, errno set too: \"%s\"", ibodp_errmsg());
	tap_ok(ibodp_counters_str_sized(&b, sizeof(b) + 8, buf, sizeof(buf)) > 0 &&
	      strstr(buf, "fault_retries 9"), "a newer program's counters as text");
}

static void test_query_caps(void)
{
	struct ibodp_dev dev = { 0 };
	struct ibodp_caps caps;
	int ret;

	dev.attr.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	dev.attr.odp_caps.per_transport_caps.rc_odp_caps = 0xff;
	dev.attr.odp_caps.per_transport_caps.ud_odp_caps = 0x23;
	dev.attr.xrc_odp_caps = 0x1;
	ret = ibodp_query_caps(&dev, &caps);
	tap_ok(!ret && caps.explicit_odp && caps.implicit_odp && caps.rc == 0xff &&
	      caps.ud == 0x23 && caps.uc == 0 && caps.xrc == 1,
	      "caps read from the device attributes");
	dev.no_odp = true;
	ret = ibodp_query_caps(&dev, &caps);
	tap_ok(!ret && !caps.explicit_odp && !caps.implicit_odp && !caps.rc,
	      "IBODP_NO_ODP: the same device shows no ODP");
	dev.no_odp = false;
	dev.attr.odp_caps.general_caps = 0;
	ret = ibodp_query_caps(&dev, &caps);
	tap_ok(!ret && !caps.explicit_odp && !caps.rc, "no IBV_ODP_SUPPORT: no ODP at all");

	/* A newer program's longer struct: what this library does not know reads 0. */
	dev.attr.odp_caps.general_caps = IBV_ODP_SUPPORT;
	{
		struct { struct ibodp_caps c; uint32_t newer; } big;

		memset(&big, 0xa5, sizeof(big));
		ret = ibodp_query_caps_sized(&dev, &big.c, sizeof(big));
		tap_ok(!ret && big.c.explicit_odp && big.c.rc == 0xff && big.newer == 0,
		      "caps into a newer program's struct: known fields set, the rest 0");
	}
}

int main(void)
{
	test_caps_str();
	test_counters();
	test_counters_sizes();
	test_query_caps();
	return tap_done();
}
