/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the libibodp tools share: their command line (the device options every tool
 * takes, the tool's own options on top), sizes and durations as a person writes them,
 * progress lines, and buffers registered through the library.
 */
#ifndef IBODP_TOOLS_COMMON_H
#define IBODP_TOOLS_COMMON_H

#include "ibodp.h"
#include "verbs.h"

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One tool option beyond --dev, --port, --gid, --help and --progress. */
struct tool_option {
	const char *name;
	const char *arg;	/* "BYTES", "SECONDS", "N", "FILE"; NULL: a flag */
	const char *help;
	enum { OPT_SIZE, OPT_SECONDS, OPT_COUNT, OPT_STRING, OPT_FLAG } type;
	void *value;		/* size_t, double, unsigned int, const char *, bool */
};

struct tool {
	const char *name;
	const char *summary;	/* one line for --help */
	const char *details;	/* paragraphs after the options */
	const struct tool_option *options;
	struct vt_options dev;	/* --dev, --port, --gid */
	bool progress;		/* --progress: progress lines also when not on a terminal */
};

/* Parse the command line into tool->dev and the options' values; exits on --help (0) or on bad input (2). */
void tool_parse(struct tool *tool, int argc, char **argv);

/* "4096", "64K", "16M", "1G" (powers of 1024) into *out; false if not a size. */
bool parse_size(const char *s, size_t *out);

/* A line on stderr that the next one overwrites, on a terminal or with --progress. */
void progress(const struct tool *tool, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void progress_done(const struct tool *tool);

/* Exit with a message on stderr: "tool: what: ibodp_errmsg()". */
void die_lib(const struct tool *tool, const char *what) __attribute__((noreturn));
void die(const struct tool *tool, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* An anonymous mapping registered through libibodp; the CPU has not touched it. */
struct tool_buf {
	unsigned char *p;
	size_t size;
	struct ibodp_mr *mr;
};

#define TOOL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* Map and register @size bytes as @kind (IBODP_FAIL policy); exits on failure. */
void tool_buf_init(const struct tool *tool, struct tool_buf *b, struct ibodp_dev *dev,
		   struct ibv_pd *pd, size_t size, enum ibodp_kind kind);
/* The same with madvise(@advice) before the registration (MADV_NOHUGEPAGE, say). */
void tool_buf_init_advised(const struct tool *tool, struct tool_buf *b, struct ibodp_dev *dev,
			   struct ibv_pd *pd, size_t size, enum ibodp_kind kind, int advice);
void tool_buf_fini(struct tool_buf *b);

#endif
