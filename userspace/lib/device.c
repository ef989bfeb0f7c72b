// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Opening a device and telling what it can do with ODP. */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool env_no_odp(void)
{
	const char *v = getenv("IBODP_NO_ODP");

	return v && *v && strcmp(v, "0") != 0;
}

static bool has_odp(const struct ibodp_dev *dev)
{
	return !dev->no_odp && (dev->attr.odp_caps.general_caps & IBV_ODP_SUPPORT);
}

/* A device around @ctx, its attributes read; NULL with errno set on failure. */
static struct ibodp_dev *dev_new(struct ibv_context *ctx, bool own_ctx)
{
	struct ibodp_dev *dev = calloc(1, sizeof(*dev));
	int ret;

	if (!dev)
		return NULL;
	ret = ibv_query_device_ex(ctx, NULL, &dev->attr);
	if (ret) {
		free(dev);
		errno = ret;
		return NULL;
	}
	dev->ctx = ctx;
	dev->own_ctx = own_ctx;
	dev->no_odp = env_no_odp();
	pthread_mutex_init(&dev->driver_lock, NULL);
	dev->driver_id = -1;
	return dev;
}

/* Open @ibdev and read its attributes; NULL with errno set on failure. */
static struct ibodp_dev *dev_open(struct ibv_device *ibdev)
{
	struct ibv_context *ctx = ibv_open_device(ibdev);
	struct ibodp_dev *dev;
	int ret;

	if (!ctx) {
		errno = errno ? errno : ENODEV;
		return NULL;
	}
	dev = dev_new(ctx, true);
	if (!dev) {
		ret = errno;
		ibv_close_device(ctx);
		errno = ret;
	}
	return dev;
}

int ibodp_wrap(struct ibv_context *ctx, struct ibodp_dev **devp)
{
	if (!devp)
		return ibodp_fail(EINVAL, "ibodp_wrap: no place for the device (devp is NULL)");
	*devp = NULL;
	if (!ctx)
		return ibodp_fail(EINVAL, "ibodp_wrap: ctx is NULL");
	*devp = dev_new(ctx, false);
	if (!*devp)
		return ibodp_fail(errno, "cannot query RDMA device %s",
				  ibv_get_device_name(ctx->device));
	return 0;
}

int ibodp_open_ex(const char *name, unsigned int flags, struct ibodp_dev **devp)
{
	struct ibodp_dev *any = NULL;	/* IBODP_OPEN_ANY: the first device without ODP */
	char names[256] = "";
	struct ibv_device **list;
	struct ibodp_dev *dev = NULL;
	size_t len = 0;
	int i, n, err = 0;

	if (!devp)
		return ibodp_fail(EINVAL, "ibodp_open: no place for the device (devp is NULL)");
	*devp = NULL;
	if (flags & ~IBODP_OPEN_ANY)
		return ibodp_fail(EINVAL, "ibodp_open_ex: unknown flags %#x", flags);
	list = ibv_get_device_list(&n);
	if (!list && errno == ENOSYS)
		return ibodp_fail(ENODEV, "no RDMA device%s%s: this kernel has no RDMA support loaded (modprobe ib_uverbs and a driver such as rdma_rxe)",
				  name ? " called " : "", name ? name : "");
	if (!list)
		return ibodp_fail(errno ? errno : ENODEV, "cannot list RDMA devices");
	for (i = 0; i < n && !dev; i++) {
		const char *this = ibv_get_device_name(list[i]);

		ibodp_append(names, sizeof(names), &len, "%s%s", i ? ", " : "", this);
		if (name && strcmp(name, this))
			continue;
		dev = dev_open(list[i]);
		if (!dev) {
			err = errno;
			if (name)
				break;
			continue;	/* the first ODP device: try the next */
		}
		if (!name && !has_odp(dev)) {
			if ((flags & IBODP_OPEN_ANY) && !any)
				any = dev;
			else
				ibodp_close(dev);
			dev = NULL;
		}
	}
	for (; i < n; i++)
		ibodp_append(names, sizeof(names), &len, "%s%s", i ? ", " : "",
			     ibv_get_device_name(list[i]));
	ibv_free_device_list(list);

	if (dev) {
		ibodp_close(any);
		*devp = dev;
		return 0;
	}
	if (any) {
		*devp = any;
		ibodp_note("no RDMA device supports On-Demand Paging (there are: %s%s): opened %s without it",
			   names, env_no_odp() ? "; IBODP_NO_ODP is set" : "", ibodp_name(any));
		return 0;
	}
	if (err)
		return ibodp_fail(err, "cannot open RDMA device %s", name ? name : "");
	if (!n)
		return ibodp_fail(ENODEV, "no RDMA device at all (create soft-RoCE with 'rdma link add rxe0 type rxe netdev IFACE')");
	if (name)
		return ibodp_fail(ENODEV, "no RDMA device called %s (there are: %s)", name, names);
	return ibodp_fail(ENODEV, "no RDMA device supports On-Demand Paging (there are: %s%s)",
			  names, env_no_odp() ? "; IBODP_NO_ODP is set" : "");
}

int ibodp_open(const char *name, struct ibodp_dev **devp)
{
	return ibodp_open_ex(name, 0, devp);
}

void ibodp_close(struct ibodp_dev *dev)
{
	if (!dev)
		return;
	/* A context the application gave (ibodp_wrap()) stays the application's. */
	if (dev->own_ctx)
		ibv_close_device(dev->ctx);
	pthread_mutex_destroy(&dev->driver_lock);
	free(dev);
}

struct ibv_context *ibodp_context(const struct ibodp_dev *dev)
{
	return dev ? dev->ctx : NULL;
}

const char *ibodp_name(const struct ibodp_dev *dev)
{
	return dev ? ibv_get_device_name(dev->ctx->device) : NULL;
}

/* struct ibodp_caps as 1.0 and 1.1 had it (it has not grown yet). */
#define CAPS_SIZE_1_0	sizeof(struct ibodp_caps)

int ibodp_query_caps_sized(const struct ibodp_dev *dev, struct ibodp_caps *caps,
			   size_t caps_size)
{
	const struct ibv_device_attr_ex *a;
	struct ibodp_caps c = { 0 };

	if (!dev || !caps)
		return ibodp_fail(EINVAL, "ibodp_query_caps: %s is NULL", dev ? "caps" : "dev");
	if (caps_size < CAPS_SIZE_1_0)
		return ibodp_fail(EINVAL, "ibodp_query_caps: a struct of %zu bytes is smaller than any struct ibodp_caps",
				  caps_size);
	if (has_odp(dev)) {
		a = &dev->attr;
		c.explicit_odp = true;
		c.implicit_odp = a->odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT;
		c.rc = a->odp_caps.per_transport_caps.rc_odp_caps;
		c.uc = a->odp_caps.per_transport_caps.uc_odp_caps;
		c.ud = a->odp_caps.per_transport_caps.ud_odp_caps;
		c.xrc = a->xrc_odp_caps;
	}
	ibodp_copy_sized(caps, caps_size, &c, sizeof(c));
	return 0;
}

/* The 1.0 function, for programs built before the size was passed. */
int (ibodp_query_caps)(const struct ibodp_dev *dev, struct ibodp_caps *caps)
{
	return ibodp_query_caps_sized(dev, caps, CAPS_SIZE_1_0);
}

static const char *const op_names[] = {
	"SEND", "RECV", "WRITE", "READ", "ATOMIC", "SRQ_RECV", "FLUSH", "ATOMIC_WRITE",
};

static void append_ops(char *buf, size_t size, size_t *len, const char *transport,
		       uint32_t ops)
{
	unsigned int i;

	if (!ops)
		return;
	ibodp_append(buf, size, len, "; %s:", transport);
	for (i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (ops & (1u << i))
			ibodp_append(buf, size, len, " %s", op_names[i]);
	if (ops >> i)
		ibodp_append(buf, size, len, " 0x%x", ops >> i << i);
}

int ibodp_caps_str_sized(const struct ibodp_caps *caps, size_t caps_size, char *buf,
			 size_t size)
{
	size_t len = 0;

	if (!caps || (!buf && size))
		return ibodp_fail(EINVAL, "ibodp_caps_str: %s is NULL", caps ? "buf" : "caps");
	if (caps_size < CAPS_SIZE_1_0)
		return ibodp_fail(EINVAL, "ibodp_caps_str: a struct of %zu bytes is smaller than any struct ibodp_caps",
				  caps_size);
	if (size)
		buf[0] = 0;
	if (!caps->explicit_odp) {
		ibodp_append(buf, size, &len, "no ODP");
	} else {
		ibodp_append(buf, size, &len, "explicit%s",
			     caps->implicit_odp ? " implicit" : "");
		append_ops(buf, size, &len, "RC", caps->rc);
		append_ops(buf, size, &len, "UC", caps->uc);
		append_ops(buf, size, &len, "UD", caps->ud);
		append_ops(buf, size, &len, "XRC", caps->xrc);
	}
	return len > INT_MAX ? ibodp_fail(EOVERFLOW, "ibodp_caps_str") : (int)len;
}

int (ibodp_caps_str)(const struct ibodp_caps *caps, char *buf, size_t size)
{
	return ibodp_caps_str_sized(caps, CAPS_SIZE_1_0, buf, size);
}

/* The first line of a sysfs file, without its newline; false if unreadable. */
static bool read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, size, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok;
}

int ibodp_dma_mode(const struct ibodp_dev *dev, uint8_t port, int gid_index, char *buf,
		   size_t size)
{
	char path[PATH_MAX], ndev[64], type[32], iommu[PATH_MAX];
	const char *mode, *unit;
	size_t len = 0;
	ssize_t n;

	if (!dev || !buf || !size)
		return ibodp_fail(EINVAL, "ibodp_dma_mode: %s", !dev ? "dev is NULL" :
				  "no buffer to write into");
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/%d",
		 ibodp_name(dev), port, gid_index);
	if (!read_line(path, ndev, sizeof(ndev)))
		return ibodp_fail(errno, "no network device under GID %d of %s port %u (%s)",
				  gid_index, ibodp_name(dev), port, path);
	snprintf(path, sizeof(path), "/sys/class/net/%s/device", ndev);
	if (access(path, F_OK)) {
		ibodp_append(buf, size, &len, "no DMA device (virtual %s)", ndev);
		return (int)len;
	}
	snprintf(path, sizeof(path), "/sys/class/net/%s/device/iommu_group/type", ndev);
	if (!read_line(path, type, sizeof(type))) {
		ibodp_append(buf, size, &len, "no IOMMU");
		return (int)len;
	}
	if (!strcmp(type, "DMA"))
		mode = "IOMMU strict";
	else if (!strcmp(type, "DMA-FQ"))
		mode = "IOMMU lazy";
	else if (!strcmp(type, "identity"))
		mode = "IOMMU passthrough";
	else
		mode = "IOMMU";
	snprintf(path, sizeof(path), "/sys/class/net/%s/device/iommu", ndev);
	n = readlink(path, iommu, sizeof(iommu) - 1);
	iommu[n > 0 ? n : 0] = 0;
	unit = strrchr(iommu, '/');
	ibodp_append(buf, size, &len, "%s (%s%s%s)", mode, type, unit ? ", " : "",
		     unit ? unit + 1 : "");
	return (int)len;
}
