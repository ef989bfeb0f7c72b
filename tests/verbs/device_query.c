// SPDX-License-Identifier: GPL-2.0
/*
 * Device and port attributes of the soft-RoCE device, as an application sees them.
 *
 * vmtest-class: nodma
 */
#include "tap.h"
#include "verbs.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The IB MTU (enum ibv_mtu) rxe derives from its network device's MTU, 0 if unknown. */
static int expected_mtu(struct ibv_context *ctx, const struct vt_options *opt)
{
	char path[256], ndev[64] = "";
	int ndev_mtu = 0, mtu;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/%d",
		 ibv_get_device_name(ctx->device), opt->port, opt->gid_index);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(ndev, sizeof(ndev), f))
		ndev[0] = 0;
	fclose(f);
	ndev[strcspn(ndev, "\n")] = 0;
	snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", ndev);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%d", &ndev_mtu) != 1)
		ndev_mtu = 0;
	fclose(f);
	/* The largest IB MTU that fits with rxe's 80 bytes of RoCEv2 headers. */
	for (mtu = IBV_MTU_4096; mtu > IBV_MTU_256 && (128 << mtu) > ndev_mtu - 80; mtu--)
		;
	return ndev_mtu > 0 ? mtu : 0;
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex dx = { 0 };
	struct ibv_port_attr port;
	struct vt_options opt;
	struct ibv_context *ctx;
	union ibv_gid gid;
	int ret, mtu;

	vt_parse_options(argc, argv, &opt);
	tap_plan(10);

	ctx = vt_open_device(opt.dev);
	if (!tap_ok(ctx != NULL, "open device %s", opt.dev ? opt.dev : "(first)"))
		tap_bail("no device to query");

	ret = ibv_query_device_ex(ctx, NULL, &dx);
	if (!tap_ok(ret == 0, "ibv_query_device_ex"))
		tap_diag("ibv_query_device_ex: %s", strerror(ret));
	tap_ok(dx.orig_attr.max_qp > 0 && dx.orig_attr.max_cq > 0 && dx.orig_attr.max_mr > 0,
	       "device limits are non-zero (max_qp %d, max_cq %d, max_mr %d)",
	       dx.orig_attr.max_qp, dx.orig_attr.max_cq, dx.orig_attr.max_mr);
	tap_ok(dx.orig_attr.phys_port_cnt == 1 && dx.orig_attr.node_guid != 0,
	       "one port and a node GUID (ports %u)", dx.orig_attr.phys_port_cnt);
	tap_diag("odp general caps 0x%llx, rc 0x%x, ud 0x%x",
		 (unsigned long long)dx.odp_caps.general_caps,
		 dx.odp_caps.per_transport_caps.rc_odp_caps,
		 dx.odp_caps.per_transport_caps.ud_odp_caps);

	ret = ibv_query_port(ctx, opt.port, &port);
	if (!tap_ok(ret == 0, "ibv_query_port(%u)", opt.port))
		tap_diag("ibv_query_port: %s", strerror(ret));
	tap_ok(port.state == IBV_PORT_ACTIVE, "port is ACTIVE (%s)",
	       ibv_port_state_str(port.state));
	tap_ok(port.link_layer == IBV_LINK_LAYER_ETHERNET, "link layer is Ethernet (RoCE)");
	mtu = expected_mtu(ctx, &opt);
	tap_ok(port.gid_tbl_len > opt.gid_index && (int)port.active_mtu == mtu,
	       "GID table holds index %d (%d entries), active MTU %d (want %d for the network device's MTU)",
	       opt.gid_index, port.gid_tbl_len, 128 << port.active_mtu, mtu ? 128 << mtu : 0);

	ret = ibv_query_gid(ctx, opt.port, opt.gid_index, &gid);
	tap_ok(ret == 0 && gid.global.subnet_prefix == 0 &&
	       (be64toh(gid.global.interface_id) >> 32) == 0xffff,
	       "GID %d is an IPv4-mapped RoCEv2 address", opt.gid_index);

	/* rxe has one port: asking for another is an error, not a crash or garbage. */
	ret = ibv_query_port(ctx, 2, &port);
	tap_ok(ret == EINVAL, "ibv_query_port(2) fails with EINVAL (got %s)",
	       ret ? strerror(ret) : "success");

	ibv_close_device(ctx);
	return tap_done();
}
