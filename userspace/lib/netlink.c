// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The uverbs driver id of a device, asked of the kernel through RDMA netlink the way
 * rdma-core learns it: RDMA_NLDEV_CMD_GET_CHARDEV for the device's "uverbs" char
 * device answers with RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID. No privilege is needed.
 */
#include "internal.h"

#include <errno.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* Append attribute @type with @len bytes of @data to @h (room checked by the caller). */
static void put_attr(struct nlmsghdr *h, uint16_t type, const void *data, uint16_t len)
{
	struct nlattr *a = (struct nlattr *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, data, len);
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + NLA_ALIGN(a->nla_len);
}

/* The driver id in the reply @h of @len bytes; 0 (no binding) when it has none. */
static int parse_reply(const struct nlmsghdr *h, size_t len, uint32_t *id)
{
	const struct nlattr *a;
	size_t off;

	if (len < NLMSG_HDRLEN || h->nlmsg_len > len)
		return EPROTO;
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(h);

		return h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error ? -e->error : EPROTO;
	}
	/* Drivers that take any id (uverbs_no_driver_id_binding) send none. */
	*id = 0;
	for (off = NLMSG_HDRLEN; off + NLA_HDRLEN <= h->nlmsg_len; off += NLA_ALIGN(a->nla_len)) {
		a = (const struct nlattr *)((const char *)h + off);
		if (a->nla_len < NLA_HDRLEN || off + a->nla_len > h->nlmsg_len)
			return EPROTO;
		if ((a->nla_type & NLA_TYPE_MASK) == RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID &&
		    a->nla_len >= NLA_HDRLEN + sizeof(uint32_t))
			memcpy(id, (const char *)a + NLA_HDRLEN, sizeof(uint32_t));
	}
	return 0;
}

int ibodp_uverbs_driver_id(struct ibv_context *ctx, uint32_t *id)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct timeval timeout = { .tv_sec = 5 };
	union {
		struct nlmsghdr h;
		char buf[8192];
	} req = { 0 }, reply;
	int index = ibv_get_device_index(ctx->device);
	uint32_t index32;
	ssize_t n;
	int fd, err;

	if (index < 0)
		return ENODEV;
	index32 = (uint32_t)index;
	req.h.nlmsg_len = NLMSG_HDRLEN;
	req.h.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV);
	req.h.nlmsg_flags = NLM_F_REQUEST;
	req.h.nlmsg_seq = 1;
	put_attr(&req.h, RDMA_NLDEV_ATTR_DEV_INDEX, &index32, sizeof(index32));
	put_attr(&req.h, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs", sizeof("uverbs"));

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return errno;
	/* The kernel answers at once; a bound on the wait all the same. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
	if (sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) < 0) {
		err = errno;
	} else {
		n = recv(fd, &reply, sizeof(reply), 0);
		err = n < 0 ? errno : parse_reply(&reply.h, (size_t)n, id);
	}
	close(fd);
	return err;
}
