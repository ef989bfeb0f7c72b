// SPDX-License-Identifier: GPL-2.0
#include "holdfs.h"
#include "odp.h"
#include "tap.h"
#include "verbs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

/* The protocol version we speak; the kernel speaks any older one too. */
#define HOLDFS_MINOR	FUSE_KERNEL_MINOR_VERSION
#define MAX_READ	(128U << 10)
#define IN_SIZE		(MAX_READ + 4096)
#define MAX_HELD	64
#define FIRST_FILE_ID	2

struct held_read {
	uint64_t unique, nodeid, offset;
	uint32_t size;
};

struct vt_holdfs {
	int dev;
	bool mounted;
	char dir[64];
	char paths[VT_HOLDFS_FILES][96];
	size_t size;
	/* Each file's bytes, made at mount: READs copy from here. */
	unsigned char *content[VT_HOLDFS_FILES];
	pthread_t server;
	bool serving;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Replies come from the server thread and from vt_holdfs_release(). */
	pthread_mutex_t out_lock;
	bool holding;
	unsigned int nheld;
	struct held_read held[MAX_HELD];
	atomic_ulong reads;
	/* Made and touched before the first READ: the server never allocates. */
	unsigned char *in, *out;
};

static bool reply(struct vt_holdfs *fs, uint64_t unique, int error, const void *body,
		  size_t len)
{
	struct fuse_out_header *h = (struct fuse_out_header *)fs->out;
	ssize_t n;
	bool ok;

	pthread_mutex_lock(&fs->out_lock);
	h->len = sizeof(*h) + (error ? 0 : len);
	h->error = error;
	h->unique = unique;
	if (!error && len)
		memmove(fs->out + sizeof(*h), body, len);
	n = write(fs->dev, fs->out, h->len);
	/* ENOENT: the request was interrupted meanwhile, nobody waits for it. */
	ok = n == (ssize_t)h->len || (n < 0 && errno == ENOENT);
	pthread_mutex_unlock(&fs->out_lock);
	return ok;
}

static void attr_of(struct vt_holdfs *fs, uint64_t nodeid, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = nodeid;
	a->nlink = 1;
	a->blksize = 4096;
	if (nodeid == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0555;
		a->nlink = 2;
	} else {
		a->mode = S_IFREG | 0444;
		a->size = fs->size;
		a->blocks = (fs->size + 511) / 512;
	}
}

static bool known(uint64_t nodeid)
{
	return nodeid == FUSE_ROOT_ID ||
	       (nodeid >= FIRST_FILE_ID && nodeid < FIRST_FILE_ID + VT_HOLDFS_FILES);
}

/* The READ's bytes: the file's from offset, up to its end. */
static bool answer_read(struct vt_holdfs *fs, const struct held_read *r)
{
	size_t len = 0;

	if (r->offset < fs->size)
		len = fs->size - r->offset < r->size ? fs->size - r->offset : r->size;
	atomic_fetch_add(&fs->reads, 1);
	return reply(fs, r->unique, 0, fs->content[r->nodeid - FIRST_FILE_ID] + r->offset, len);
}

/* One request; false when the file system is gone. */
static bool serve_one(struct vt_holdfs *fs, const struct fuse_in_header *h, const void *arg)
{
	union {
		struct fuse_init_out init;
		struct fuse_entry_out entry;
		struct fuse_attr_out attr;
		struct fuse_open_out open;
	} o;
	const char *name = arg;
	struct held_read r;
	unsigned int n;

	memset(&o, 0, sizeof(o));
	switch (h->opcode) {
	case FUSE_INIT:
		o.init.major = FUSE_KERNEL_VERSION;
		o.init.minor = HOLDFS_MINOR;
		/* No readahead: a fault reads the pages it needs, so a case maps its own. */
		o.init.max_readahead = 0;
		o.init.max_background = 16;
		o.init.congestion_threshold = 12;
		o.init.max_write = 4096;
		o.init.time_gran = 1;
		o.init.max_pages = MAX_READ / 4096;
		return reply(fs, h->unique, 0, &o.init, sizeof(o.init));
	case FUSE_LOOKUP:
		if (h->nodeid != FUSE_ROOT_ID || sscanf(name, "%u", &n) != 1 ||
		    n >= VT_HOLDFS_FILES)
			return reply(fs, h->unique, -ENOENT, NULL, 0);
		o.entry.nodeid = FIRST_FILE_ID + n;
		o.entry.entry_valid = 3600;
		o.entry.attr_valid = 3600;
		attr_of(fs, o.entry.nodeid, &o.entry.attr);
		return reply(fs, h->unique, 0, &o.entry, sizeof(o.entry));
	case FUSE_GETATTR:
		if (!known(h->nodeid))
			return reply(fs, h->unique, -ENOENT, NULL, 0);
		o.attr.attr_valid = 3600;
		attr_of(fs, h->nodeid, &o.attr.attr);
		return reply(fs, h->unique, 0, &o.attr, sizeof(o.attr));
	case FUSE_OPEN:
	case FUSE_OPENDIR:
		o.open.fh = h->nodeid;
		return reply(fs, h->unique, 0, &o.open, sizeof(o.open));
	case FUSE_READ:
		r.unique = h->unique;
		r.nodeid = h->nodeid;
		r.offset = ((const struct fuse_read_in *)arg)->offset;
		r.size = ((const struct fuse_read_in *)arg)->size;
		if (r.nodeid < FIRST_FILE_ID || !known(r.nodeid))
			return reply(fs, h->unique, -EIO, NULL, 0);
		pthread_mutex_lock(&fs->lock);
		if (fs->holding && fs->nheld < MAX_HELD) {
			fs->held[fs->nheld++] = r;
			pthread_cond_broadcast(&fs->cond);
			pthread_mutex_unlock(&fs->lock);
			return true;
		}
		pthread_mutex_unlock(&fs->lock);
		return answer_read(fs, &r);
	case FUSE_FLUSH:
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
		return reply(fs, h->unique, 0, NULL, 0);
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		return true;
	case FUSE_DESTROY:
		reply(fs, h->unique, 0, NULL, 0);
		return false;
	default:
		return reply(fs, h->unique, -ENOSYS, NULL, 0);
	}
}

static void *server_fn(void *arg)
{
	struct vt_holdfs *fs = arg;
	const struct fuse_in_header *h = (const struct fuse_in_header *)fs->in;
	ssize_t n;

	for (;;) {
		n = read(fs->dev, fs->in, IN_SIZE);
		if (n < 0 && (errno == EINTR || errno == ENOENT || errno == EAGAIN))
			continue;
		/* ENODEV: unmounted, or the connection aborted. */
		if (n < (ssize_t)sizeof(*h))
			break;
		if (!serve_one(fs, h, fs->in + sizeof(*h)))
			break;
	}
	return NULL;
}

static void holdfs_free(struct vt_holdfs *fs)
{
	unsigned int i;

	for (i = 0; i < VT_HOLDFS_FILES; i++)
		free(fs->content[i]);
	free(fs->in);
	free(fs->out);
	free(fs);
}

struct vt_holdfs *vt_holdfs_mount(size_t size, unsigned int seed)
{
	struct vt_holdfs *fs = calloc(1, sizeof(*fs));
	pthread_condattr_t monotonic;
	char opts[128];
	unsigned int i;

	if (!fs)
		return NULL;
	fs->dev = -1;
	fs->size = size;
	fs->in = malloc(IN_SIZE);
	fs->out = malloc(sizeof(struct fuse_out_header) + MAX_READ);
	for (i = 0; i < VT_HOLDFS_FILES; i++) {
		fs->content[i] = malloc(size);
		if (fs->content[i])
			vt_fill(fs->content[i], size, seed + i);
	}
	if (!fs->in || !fs->out || !fs->content[VT_HOLDFS_FILES - 1]) {
		tap_diag("no memory for the FUSE server");
		holdfs_free(fs);
		return NULL;
	}
	memset(fs->in, 0, IN_SIZE);
	memset(fs->out, 0, sizeof(struct fuse_out_header) + MAX_READ);
	pthread_mutex_init(&fs->lock, NULL);
	/* Waits measure time that no change of the wall clock moves. */
	pthread_condattr_init(&monotonic);
	pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
	pthread_cond_init(&fs->cond, &monotonic);
	pthread_condattr_destroy(&monotonic);
	pthread_mutex_init(&fs->out_lock, NULL);
	snprintf(fs->dir, sizeof(fs->dir), "/tmp/vt-holdfs-XXXXXX");
	if (!mkdtemp(fs->dir)) {
		tap_diag("mkdtemp %s: %s", fs->dir, strerror(errno));
		holdfs_free(fs);
		return NULL;
	}
	fs->dev = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fs->dev < 0) {
		tap_diag("open /dev/fuse: %s", strerror(errno));
		goto fail;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=%u,group_id=%u,max_read=%u",
		 fs->dev, getuid(), getgid(), MAX_READ);
	if (mount("vt-holdfs", fs->dir, "fuse", MS_NOSUID | MS_NODEV, opts)) {
		tap_diag("mount -t fuse on %s: %s", fs->dir, strerror(errno));
		goto fail;
	}
	fs->mounted = true;
	if (pthread_create(&fs->server, NULL, server_fn, fs)) {
		tap_diag("cannot start the FUSE server thread");
		goto fail;
	}
	fs->serving = true;
	for (i = 0; i < VT_HOLDFS_FILES; i++)
		snprintf(fs->paths[i], sizeof(fs->paths[i]), "%s/%u", fs->dir, i);
	return fs;
fail:
	vt_holdfs_unmount(fs);
	return NULL;
}

const char *vt_holdfs_path(struct vt_holdfs *fs, unsigned int n)
{
	return fs->paths[n];
}

void vt_holdfs_hold(struct vt_holdfs *fs)
{
	pthread_mutex_lock(&fs->lock);
	fs->holding = true;
	pthread_mutex_unlock(&fs->lock);
}

bool vt_holdfs_wait_held(struct vt_holdfs *fs, int timeout_ms)
{
	struct timespec until;
	bool held;

	/* The condition variable's clock (vt_holdfs_mount()) is the deadline's too. */
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&fs->lock);
	while (!fs->nheld &&
	       pthread_cond_timedwait(&fs->cond, &fs->lock, &until) != ETIMEDOUT)
		;
	held = fs->nheld > 0;
	pthread_mutex_unlock(&fs->lock);
	return held;
}

void vt_holdfs_release(struct vt_holdfs *fs)
{
	unsigned int i;

	pthread_mutex_lock(&fs->lock);
	fs->holding = false;
	for (i = 0; i < fs->nheld; i++)
		if (!answer_read(fs, &fs->held[i]))
			tap_diag("answering a held READ: %s", strerror(errno));
	fs->nheld = 0;
	pthread_mutex_unlock(&fs->lock);
}

unsigned long vt_holdfs_reads(struct vt_holdfs *fs)
{
	return atomic_load(&fs->reads);
}

void vt_holdfs_unmount(struct vt_holdfs *fs)
{
	struct stat st;
	char abort_path[64];

	if (!fs)
		return;
	if (fs->serving)
		vt_holdfs_release(fs);
	/* The superblock goes with the mount: the server's read() then fails. */
	if (fs->mounted && !stat(fs->dir, &st) && umount2(fs->dir, 0)) {
		tap_diag("umount %s: %s; detaching it and aborting its connection", fs->dir,
			 strerror(errno));
		umount2(fs->dir, MNT_DETACH);
		snprintf(abort_path, sizeof(abort_path), "/sys/fs/fuse/connections/%u/abort",
			 minor(st.st_dev));
		if (!vt_write_str(abort_path, "1"))
			tap_diag("cannot write %s: %s", abort_path, strerror(errno));
	}
	if (fs->serving)
		pthread_join(fs->server, NULL);
	if (fs->dev >= 0)
		close(fs->dev);
	rmdir(fs->dir);
	holdfs_free(fs);
}
