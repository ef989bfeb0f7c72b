// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_OPTIONS 16

/* An option's help, its lines after the first under the first. */
static void print_help(FILE *f, const char *left, const char *help)
{
	const char *nl;

	fprintf(f, "  %-24s ", left);
	while ((nl = strchr(help, '\n')) && nl[1]) {
		fprintf(f, "%.*s\n%27s", (int)(nl - help), help, "");
		help = nl + 1;
	}
	fprintf(f, "%s\n", help);
}

static void usage(const struct tool *tool, int status)
{
	FILE *f = status ? stderr : stdout;
	const struct tool_option *o;
	char left[48];

	fprintf(f, "usage: %s [options]\n%s\n\noptions:\n", tool->name, tool->summary);
	fprintf(f, "  %-24s RDMA device (default: the first one with ODP)\n", "--dev NAME");
	fprintf(f, "  %-24s port number (default: 1)\n", "--port N");
	fprintf(f, "  %-24s GID index of a RoCEv2 IPv4-mapped GID (default: 1)\n", "--gid N");
	for (o = tool->options; o && o->name; o++) {
		snprintf(left, sizeof(left), "--%s%s%s", o->name, o->arg ? " " : "",
			 o->arg ? o->arg : "");
		print_help(f, left, o->help);
	}
	fprintf(f, "  %-24s progress lines also when stderr is not a terminal\n", "--progress");
	fprintf(f, "  %-24s this text\n", "--help");
	if (tool->details)
		fprintf(f, "\n%s", tool->details);
	exit(status);
}

bool parse_size(const char *s, size_t *out)
{
	unsigned long long v, mult = 1;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return false;
	switch (*end) {
	case 'G': case 'g': mult <<= 10; /* fall through */
	case 'M': case 'm': mult <<= 10; /* fall through */
	case 'K': case 'k': mult <<= 10; end++; break;
	case 0: break;
	default: return false;
	}
	if (*end || (v && mult > SIZE_MAX / v))
		return false;
	*out = v * mult;
	return true;
}

static void bad(const struct tool *tool, const char *opt, const char *want, const char *s)
{
	fprintf(stderr, "%s: --%s wants %s, not '%s' (see --help)\n", tool->name, opt, want, s);
	exit(2);
}

static void set_option(const struct tool *tool, const struct tool_option *o, const char *arg)
{
	char *end;
	double d;

	switch (o->type) {
	case OPT_SIZE:
		if (!parse_size(arg, o->value))
			bad(tool, o->name, "a size such as 4096, 64K, 16M or 1G", arg);
		break;
	case OPT_SECONDS:
		errno = 0;
		d = strtod(arg, &end);
		if (errno || end == arg || *end || !isfinite(d) || d <= 0 || d > 86400)
			bad(tool, o->name, "seconds, more than 0 and at most 86400", arg);
		*(double *)o->value = d;
		break;
	case OPT_COUNT:
		*(unsigned int *)o->value = (unsigned int)vt_parse_number(tool->name, o->name,
									  arg, 1024);
		break;
	case OPT_STRING:
		*(const char **)o->value = arg;
		break;
	case OPT_FLAG:
		*(bool *)o->value = true;
		break;
	}
}

void tool_parse(struct tool *tool, int argc, char **argv)
{
	struct option longopts[VT_DEVICE_OPTIONS + 2 + MAX_OPTIONS + 1] = {
		[VT_DEVICE_OPTIONS] = { "progress", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
	};
	int n = VT_DEVICE_OPTIONS + 2, c, index;

	memcpy(longopts, vt_device_longopts, sizeof(vt_device_longopts));
	for (index = 0; tool->options && tool->options[index].name; index++) {
		if (index == MAX_OPTIONS)
			die(tool, "too many options (raise MAX_OPTIONS)");
		longopts[n++] = (struct option){ tool->options[index].name,
			tool->options[index].arg ? required_argument : no_argument, NULL,
			256 + index };
	}
	vt_options_init(&tool->dev);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (vt_device_option(tool->name, c, optarg, &tool->dev))
			continue;
		switch (c) {
		case 'P': tool->progress = true; break;
		case 'h': usage(tool, 0); break;
		default:
			if (c >= 256 && c < 256 + index)
				set_option(tool, &tool->options[c - 256], optarg);
			else
				usage(tool, 2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", tool->name,
			argv[optind]);
		exit(2);
	}
}

static bool show_progress(const struct tool *tool)
{
	return tool->progress || isatty(STDERR_FILENO);
}

void progress(const struct tool *tool, const char *fmt, ...)
{
	va_list ap;

	if (!show_progress(tool))
		return;
	fprintf(stderr, "\r%s: ", tool->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\033[K");
	fflush(stderr);
}

void progress_done(const struct tool *tool)
{
	if (show_progress(tool))
		fprintf(stderr, "\r\033[K");
}

void die(const struct tool *tool, const char *fmt, ...)
{
	va_list ap;

	progress_done(tool);
	fprintf(stderr, "%s: ", tool->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

void die_lib(const struct tool *tool, const char *what)
{
	die(tool, "%s: %s", what, ibodp_errmsg());
}

void tool_buf_init(const struct tool *tool, struct tool_buf *b, struct ibodp_dev *dev,
		   struct ibv_pd *pd, size_t size, enum ibodp_kind kind)
{
	tool_buf_init_advised(tool, b, dev, pd, size, kind, MADV_NORMAL);
}

void tool_buf_init_advised(const struct tool *tool, struct tool_buf *b, struct ibodp_dev *dev,
			   struct ibv_pd *pd, size_t size, enum ibodp_kind kind, int advice)
{
	b->size = size;
	b->p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->p == MAP_FAILED)
		die(tool, "mmap of %zu bytes: %s", size, strerror(errno));
	if (advice != MADV_NORMAL && madvise(b->p, size, advice))
		die(tool, "madvise(%d) of %zu bytes: %s", advice, size, strerror(errno));
	if (ibodp_reg_mr(dev, pd, b->p, size, TOOL_ACCESS, kind, IBODP_FAIL, &b->mr))
		die_lib(tool, "registering a buffer");
}

void tool_buf_fini(struct tool_buf *b)
{
	if (b->mr)
		ibodp_dereg_mr(b->mr);
	if (b->p && b->p != MAP_FAILED)
		munmap(b->p, b->size);
	b->mr = NULL;
	b->p = NULL;
}
