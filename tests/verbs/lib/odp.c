// SPDX-License-Identifier: GPL-2.0
#include "odp.h"
#include "tap.h"

#include <errno.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

unsigned char *vt_map_anon(size_t size, int prot, int flags)
{
	void *p = mmap(NULL, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	if (p == MAP_FAILED) {
		tap_diag("mmap(%zu bytes): %s", size, strerror(errno));
		return NULL;
	}
	return p;
}

bool vt_odp_buf_init(struct vt_odp_buf *b, struct ibv_pd *pd, size_t size, int flags,
		     int access)
{
	memset(b, 0, sizeof(*b));
	b->size = size;
	b->p = vt_map_anon(size, PROT_READ | PROT_WRITE, flags);
	if (!b->p)
		return false;
	b->mr = ibv_reg_mr(pd, b->p, size, access);
	if (!b->mr) {
		tap_diag("ibv_reg_mr(%zu bytes, ODP): %s", size, strerror(errno));
		munmap(b->p, size);
		b->p = NULL;
		return false;
	}
	return true;
}

void vt_odp_buf_fini(struct vt_odp_buf *b)
{
	if (b->mr && ibv_dereg_mr(b->mr))
		tap_diag("ibv_dereg_mr: %s", strerror(errno));
	if (b->p)
		munmap(b->p, b->size);
	memset(b, 0, sizeof(*b));
}

bool vt_move(struct vt_loopback *lb, enum ibv_wr_opcode op, void *src, struct ibv_mr *src_mr,
	     void *dst, struct ibv_mr *dst_mr, size_t len)
{
	enum ibv_wc_status status;

	if (op == IBV_WR_SEND)
		return vt_send_recv(lb, src, src_mr, dst, dst_mr, len) == 0;
	if (vt_rdma(lb, op, src, src_mr, dst, dst_mr, len, &status))
		return false;
	if (status != IBV_WC_SUCCESS) {
		tap_diag("%s of %zu bytes: %s", op == IBV_WR_RDMA_WRITE ? "RDMA WRITE" :
			 "RDMA READ", len, ibv_wc_status_str(status));
		return false;
	}
	return true;
}

void vt_odp_delta(const long *before, const long *after, long *delta)
{
	int i;

	for (i = 0; i < VT_ODP_NCOUNTERS; i++)
		delta[i] = after[i] - before[i];
}

long vt_read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

bool vt_write_str(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	bool ok;

	if (!f)
		return false;
	ok = fputs(s, f) >= 0;
	return fclose(f) == 0 && ok;
}

static const char *const counter_names[VT_ODP_NCOUNTERS] = {
	"odp_page_faults", "odp_pages_faulted", "odp_pages_linked", "odp_pages_unlinked",
	"odp_invalidations", "odp_prefetch_requests", "odp_fault_errors",
};

bool vt_odp_counters(struct ibv_context *ctx, uint8_t port, long *v)
{
	char path[256];
	unsigned int i;

	/* The RDMA core serves hw_counters from a cache that lives 10 ms. */
	usleep(20000);
	for (i = 0; i < VT_ODP_NCOUNTERS; i++) {
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/hw_counters/%s",
			 ibv_get_device_name(ctx->device), port, counter_names[i]);
		v[i] = vt_read_long(path);
		if (v[i] < 0)
			return false;
	}
	return true;
}

bool vt_behind_iommu(struct ibv_context *ctx, const struct vt_options *opt)
{
	char path[256], ndev[64] = "", type[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/%d",
		 ibv_get_device_name(ctx->device), opt->port, opt->gid_index);
	f = fopen(path, "r");
	if (!f || !fgets(ndev, sizeof(ndev), f)) {
		if (f)
			fclose(f);
		return false;
	}
	fclose(f);
	ndev[strcspn(ndev, "\n")] = 0;
	snprintf(path, sizeof(path), "/sys/class/net/%s/device/iommu_group/type", ndev);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(type, sizeof(type), f))
		type[0] = 0;
	fclose(f);
	return !strncmp(type, "DMA", 3);
}

/*
 * The kernel accepts a verbs ioctl only with the driver id of the device's uAPI.
 * Soft-RoCE devices have a "parent" attribute (their network device); other drivers
 * would need their own id here.
 */
static uint32_t driver_id(struct ibv_context *ctx)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/parent",
		 ibv_get_device_name(ctx->device));
	return access(path, F_OK) == 0 ? RDMA_DRIVER_RXE : RDMA_DRIVER_UNKNOWN;
}

/* UVERBS_METHOD_ADVISE_MR of UVERBS_OBJECT_MR (it names the PD), as rdma-core's own command would send. */
static int advise_mr_ioctl(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			   uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[4];
	} cmd = {
		.hdr = {
			.length = sizeof(cmd),
			.object_id = UVERBS_OBJECT_MR,
			.method_id = UVERBS_METHOD_ADVISE_MR,
			.num_attrs = 4,
			.driver_id = driver_id(pd->context),
		},
		.attrs = {
			{ .attr_id = UVERBS_ATTR_ADVISE_MR_PD_HANDLE,
			  .flags = UVERBS_ATTR_F_MANDATORY, .data = pd->handle },
			/* Constants travel as 64-bit values. */
			{ .attr_id = UVERBS_ATTR_ADVISE_MR_ADVICE, .len = sizeof(uint64_t),
			  .flags = UVERBS_ATTR_F_MANDATORY, .data = advice },
			{ .attr_id = UVERBS_ATTR_ADVISE_MR_FLAGS, .len = sizeof(uint32_t),
			  .flags = UVERBS_ATTR_F_MANDATORY, .data = flags },
			{ .attr_id = UVERBS_ATTR_ADVISE_MR_SGE_LIST,
			  .len = num_sge * sizeof(*sg_list), .flags = UVERBS_ATTR_F_MANDATORY,
			  .data = (uintptr_t)sg_list },
		},
	};

	/* ibv_sge and the kernel's ib_uverbs_sge are the same 16 bytes. */
	_Static_assert(sizeof(struct ibv_sge) == sizeof(struct ib_uverbs_sge), "sge layout");
	if (ioctl(pd->context->cmd_fd, RDMA_VERBS_IOCTL, &cmd))
		return errno;
	return 0;
}

int vt_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		 struct ibv_sge *sg_list, uint32_t num_sge, bool *direct)
{
	int ret = ibv_advise_mr(pd, advice, flags, sg_list, num_sge);

	if (direct)
		*direct = false;
	if (ret != EOPNOTSUPP)
		return ret;
	if (direct)
		*direct = true;
	return advise_mr_ioctl(pd, advice, flags, sg_list, num_sge);
}
