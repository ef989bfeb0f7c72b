// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What libibodp asks of the kernel through RDMA netlink, as rdma-core and iproute2's
 * rdma tool do:
 * - the uverbs driver id of a device: RDMA_NLDEV_CMD_GET_CHARDEV for its "uverbs" char
 *   device answers with RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID. No privilege is needed.
 * - the counters of one MR ("rdma statistic show mr"): the MR's restrack number from a
 *   dump of the device's MRs (RDMA_NLDEV_CMD_RES_MR_GET), then RDMA_NLDEV_CMD_STAT_GET
 *   for that number. The kernel shows MR keys to CAP_NET_ADMIN only: without it, the
 *   MR is the one of this process with the MR's length, if no other has that length.
 */
#include "internal.h"

#include <errno.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

struct request {
	union {
		struct nlmsghdr h;
		char buf[256];
	};
};

/* A request @cmd; @dump asks for every object of its kind. */
static void start_request(struct request *req, int cmd, bool dump)
{
	memset(req, 0, sizeof(*req));
	req->h.nlmsg_len = NLMSG_HDRLEN;
	req->h.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	req->h.nlmsg_flags = NLM_F_REQUEST | (dump ? NLM_F_DUMP : 0);
	req->h.nlmsg_seq = 1;
}

/* Append attribute @type with @len bytes of @data (the requests here are small). */
static void put_attr(struct request *req, uint16_t type, const void *data, uint16_t len)
{
	struct nlattr *a = (struct nlattr *)(req->buf + NLMSG_ALIGN(req->h.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, data, len);
	req->h.nlmsg_len = NLMSG_ALIGN(req->h.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static void put_u32(struct request *req, uint16_t type, uint32_t v)
{
	put_attr(req, type, &v, sizeof(v));
}

/*
 * Walk the attributes in [p, p + len): @a is each in turn. Stops at one that does
 * not fit (the caller's loop ends; a malformed message reads as having fewer).
 */
#define for_each_attr(a, p, len)						\
	for (const char *_end = (const char *)(p) + (len),			\
	     *_at = (const char *)(p);						\
	     (a = (const struct nlattr *)_at,					\
	      _at + NLA_HDRLEN <= _end && a->nla_len >= NLA_HDRLEN &&		\
	      _at + a->nla_len <= _end);					\
	     _at += NLA_ALIGN(a->nla_len))

static const void *attr_data(const struct nlattr *a)
{
	return (const char *)a + NLA_HDRLEN;
}

static size_t attr_len(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

static int attr_type(const struct nlattr *a)
{
	return a->nla_type & NLA_TYPE_MASK;
}

/* The value of a u32 or u64 attribute; false when it has neither size. */
static bool attr_uint(const struct nlattr *a, uint64_t *v)
{
	uint32_t v32;

	if (attr_len(a) == sizeof(*v)) {
		memcpy(v, attr_data(a), sizeof(*v));
		return true;
	}
	if (attr_len(a) == sizeof(v32)) {
		memcpy(&v32, attr_data(a), sizeof(v32));
		*v = v32;
		return true;
	}
	return false;
}

/*
 * Send @req and hand each message of the answer (one, or a dump's) to @fn with its
 * attributes; @fn returns 0 to go on or a positive errno to stop. Returns 0 or a
 * positive errno (the kernel's own refusal included).
 */
static int ask(const struct request *req,
	       int (*fn)(const void *attrs, size_t len, void *arg), void *arg)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct timeval timeout = { .tv_sec = 5 };
	static __thread union {
		struct nlmsghdr h;
		char buf[32768];
	} reply;
	bool dump = req->h.nlmsg_flags & NLM_F_DUMP;
	int fd, err = 0;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return errno;
	/* The kernel answers at once; a bound on the wait all the same. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
	if (sendto(fd, req, req->h.nlmsg_len, 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) < 0) {
		err = errno;
		goto out;
	}
	for (;;) {
		ssize_t n = recv(fd, &reply, sizeof(reply), 0);
		const struct nlmsghdr *h;
		size_t left;

		if (n < 0) {
			err = errno == EAGAIN ? ETIMEDOUT : errno;
			goto out;
		}
		left = (size_t)n;
		for (h = &reply.h; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type == NLMSG_DONE)
				goto out;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				err = h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error ?
				      -e->error : EPROTO;
				goto out;
			}
			err = fn((const char *)h + NLMSG_HDRLEN, h->nlmsg_len - NLMSG_HDRLEN,
				 arg);
			if (err || !dump)
				goto out;
		}
		if (left) {
			err = EPROTO;
			goto out;
		}
	}
out:
	close(fd);
	return err;
}

static int device_index(struct ibv_context *ctx, uint32_t *index)
{
	int i = ibv_get_device_index(ctx->device);

	if (i < 0)
		return ENODEV;
	*index = (uint32_t)i;
	return 0;
}

static int take_driver_id(const void *attrs, size_t len, void *arg)
{
	const struct nlattr *a;
	uint64_t v;

	for_each_attr(a, attrs, len)
		if (attr_type(a) == RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID && attr_uint(a, &v))
			*(uint32_t *)arg = (uint32_t)v;
	return 0;
}

int ibodp_uverbs_driver_id(struct ibv_context *ctx, uint32_t *id)
{
	struct request req;
	uint32_t index;
	int err = device_index(ctx, &index);

	if (err)
		return err;
	start_request(&req, RDMA_NLDEV_CMD_GET_CHARDEV, false);
	put_u32(&req, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	put_attr(&req, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs", sizeof("uverbs"));
	/* Drivers that take any id (uverbs_no_driver_id_binding) send none. */
	*id = 0;
	return ask(&req, take_driver_id, id);
}

/* Looking for an MR in a dump of the device's MRs. */
struct mr_search {
	uint32_t lkey;
	uint64_t length;
	uint32_t pid;
	unsigned int found;	/* entries that match */
	uint32_t mrn;		/* the last of them */
};

static void match_mr(const void *attrs, size_t len, struct mr_search *s)
{
	bool has_lkey = false, has_mrn = false;
	uint64_t lkey = 0, length = UINT64_MAX, pid = 0, mrn = 0, v;
	const struct nlattr *a;

	for_each_attr(a, attrs, len) {
		if (!attr_uint(a, &v))
			continue;
		switch (attr_type(a)) {
		case RDMA_NLDEV_ATTR_RES_LKEY:
			lkey = v;
			has_lkey = true;
			break;
		case RDMA_NLDEV_ATTR_RES_MRLEN:
			length = v;
			break;
		case RDMA_NLDEV_ATTR_RES_PID:
			pid = v;
			break;
		case RDMA_NLDEV_ATTR_RES_MRN:
			mrn = v;
			has_mrn = true;
			break;
		}
	}
	if (!has_mrn)
		return;
	if (has_lkey ? lkey == s->lkey : pid == s->pid && length == s->length) {
		s->found++;
		s->mrn = (uint32_t)mrn;
	}
}

static int search_mrs(const void *attrs, size_t len, void *arg)
{
	const struct nlattr *table, *entry;

	for_each_attr(table, attrs, len) {
		if (attr_type(table) != RDMA_NLDEV_ATTR_RES_MR)
			continue;
		for_each_attr(entry, attr_data(table), attr_len(table))
			if (attr_type(entry) == RDMA_NLDEV_ATTR_RES_MR_ENTRY)
				match_mr(attr_data(entry), attr_len(entry), arg);
	}
	return 0;
}

/* The counters of one MR's answer, by the names the kernel gives them. */
struct mr_stats {
	struct ibodp_mr_counters *c;
	unsigned int seen;
};

static int take_mr_stats(const void *attrs, size_t len, void *arg)
{
	static const struct {
		const char *name;
		size_t offset;
	} names[] = {
		{ "page_faults", offsetof(struct ibodp_mr_counters, page_faults) },
		{ "page_invalidations", offsetof(struct ibodp_mr_counters, page_invalidations) },
		{ "page_prefetch", offsetof(struct ibodp_mr_counters, page_prefetch) },
	};
	const struct nlattr *table, *entry, *a;
	struct mr_stats *st = arg;

	for_each_attr(table, attrs, len) {
		if (attr_type(table) != RDMA_NLDEV_ATTR_STAT_HWCOUNTERS)
			continue;
		for_each_attr(entry, attr_data(table), attr_len(table)) {
			const char *name = NULL;
			bool has_value = false;
			uint64_t value = 0;
			size_t i;

			if (attr_type(entry) != RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
				continue;
			for_each_attr(a, attr_data(entry), attr_len(entry)) {
				if (attr_type(a) == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME &&
				    attr_len(a) && !((const char *)attr_data(a))[attr_len(a) - 1])
					name = attr_data(a);
				else if (attr_type(a) == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE)
					has_value = attr_uint(a, &value);
			}
			for (i = 0; name && has_value && i < sizeof(names) / sizeof(names[0]); i++) {
				if (strcmp(name, names[i].name))
					continue;
				memcpy((char *)st->c + names[i].offset, &value, sizeof(value));
				st->seen |= 1U << i;
			}
		}
	}
	return 0;
}

#define ALL_MR_STATS	0x7U

int ibodp_nl_mr_counters(const struct ibodp_mr *mr, struct ibodp_mr_counters *c)
{
	struct mr_search s = {
		.lkey = mr->mr->lkey, .length = mr->length, .pid = (uint32_t)getpid(),
	};
	struct ibv_context *ctx = mr->mr->context;
	struct mr_stats st = { .c = c };
	struct request req;
	uint32_t index;
	int err = device_index(ctx, &index);

	if (err)
		return ibodp_fail(err, "%s has no device index", ibv_get_device_name(ctx->device));
	start_request(&req, RDMA_NLDEV_CMD_RES_MR_GET, true);
	put_u32(&req, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	err = ask(&req, search_mrs, &s);
	if (err)
		return ibodp_fail(err, "listing the MRs of %s through RDMA netlink",
				  ibv_get_device_name(ctx->device));
	if (!s.found)
		return ibodp_fail(ENOENT, "the kernel lists no MR of %s with lkey 0x%x (or of this process with length %zu)",
				  ibv_get_device_name(ctx->device), s.lkey, mr->length);
	if (s.found > 1)
		return ibodp_fail(EPERM, "%u MRs of this process on %s have length %zu: telling them apart needs their lkeys, which the kernel shows only with CAP_NET_ADMIN",
				  s.found, ibv_get_device_name(ctx->device), mr->length);

	start_request(&req, RDMA_NLDEV_CMD_STAT_GET, false);
	put_u32(&req, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	put_u32(&req, RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_RES_MR);
	put_u32(&req, RDMA_NLDEV_ATTR_RES_MRN, s.mrn);
	err = ask(&req, take_mr_stats, &st);
	if (err)
		return ibodp_fail(err, "reading the statistics of MR %u of %s through RDMA netlink",
				  s.mrn, ibv_get_device_name(ctx->device));
	if (st.seen != ALL_MR_STATS)
		return ibodp_fail(EOPNOTSUPP, "the kernel's driver of %s counts no ODP per MR (rdma statistic show mr: no page_faults, page_invalidations, page_prefetch)",
				  ibv_get_device_name(ctx->device));
	return 0;
}
