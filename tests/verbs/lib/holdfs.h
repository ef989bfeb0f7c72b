/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A FUSE file system served by a thread of the test (the kernel's FUSE protocol on
 * /dev/fuse, no libfuse), whose READs the test can hold unanswered for as long as it
 * wants: how a page fault can block for a time the kernel does not bound (a FUSE
 * daemon that hangs, a network file system that lost its server). Files "0" to
 * "VT_HOLDFS_FILES - 1", each @size bytes of vt_fill(seed + file number). Needs root
 * and CONFIG_FUSE_FS.
 *
 * While a READ is held, a kernel thread faulting the file's pages holds the process's
 * mmap lock for reading: the test must then make no call that takes it for writing
 * (mmap, munmap, mprotect, thread creation, a malloc that grows the heap), or its own
 * page faults queue behind that call.
 */
#ifndef VT_HOLDFS_H
#define VT_HOLDFS_H

#include <stdbool.h>
#include <stddef.h>

#define VT_HOLDFS_FILES 4
#define VT_NO_FUSE "no /dev/fuse (CONFIG_FUSE_FS): the distro-mm and debug profiles have it"

struct vt_holdfs;

/* Mounted on a new folder under /tmp and served; NULL (said) on failure. */
struct vt_holdfs *vt_holdfs_mount(size_t size, unsigned int seed);
/* The path of file @n. */
const char *vt_holdfs_path(struct vt_holdfs *fs, unsigned int n);
/* From now on, READs wait for vt_holdfs_release(). */
void vt_holdfs_hold(struct vt_holdfs *fs);
/* Whether a READ is held: waits up to timeout_ms for one. */
bool vt_holdfs_wait_held(struct vt_holdfs *fs, int timeout_ms);
/* Answer the held READs, and the next ones at once. */
void vt_holdfs_release(struct vt_holdfs *fs);
/* READs answered so far. */
unsigned long vt_holdfs_reads(struct vt_holdfs *fs);
/* Unmount (every mapping of its files gone first) and stop serving. */
void vt_holdfs_unmount(struct vt_holdfs *fs);

#endif
