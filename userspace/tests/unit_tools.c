// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host unit tests of the tools' command line (tools/common.c), no device needed:
 * sizes as people write them, and options that are refused with exit status 2 and a
 * message naming the option, checked in a child process.
 */
#include "tap.h"
#include "../tools/common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_sizes(void)
{
	static const struct { const char *s; size_t v; } good[] = {
		{ "4096", 4096 }, { "64K", 65536 }, { "64k", 65536 }, { "16M", 16UL << 20 },
		{ "1G", 1UL << 30 }, { "0", 0 },
	};
	static const char *const bad[] = { "", "K", "-1", "12Q", "1KB", "99999999999999999999",
					   "18014398509481984K" };
	unsigned int i;
	size_t v;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		tap_ok(parse_size(good[i].s, &v) && v == good[i].v, "size \"%s\" is %zu", good[i].s,
		      good[i].v);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		tap_ok(!parse_size(bad[i], &v), "size \"%s\" is refused", bad[i]);
}

static double seconds = 10;
static size_t size = 1;
static unsigned int count = 2;
static const char *name;
static bool flag;
static struct tool tool = {
	.name = "unit-tool",
	.summary = "a tool for the tests",
	.options = (const struct tool_option[]){
		{ "seconds", "SECONDS", "how long", OPT_SECONDS, &seconds },
		{ "size", "BYTES", "how big", OPT_SIZE, &size },
		{ "count", "N", "how many", OPT_COUNT, &count },
		{ "name", "FILE", "where", OPT_STRING, &name },
		{ "flag", NULL, "whether", OPT_FLAG, &flag },
		{ 0 }
	},
};

/* Run tool_parse() on @args in a child; its exit status (-1: it returned) and stderr. */
static int parse_in_child(const char *const *args, char *err, size_t len)
{
	int fds[2], status;
	char *argv[16];
	ssize_t n;
	pid_t pid;
	int i;

	argv[0] = "unit-tool";
	for (i = 0; args[i]; i++)
		argv[i + 1] = (char *)args[i];
	argv[i + 1] = NULL;
	if (pipe(fds))
		return -2;
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		dup2(fds[1], STDOUT_FILENO);
		optind = 1;
		tool_parse(&tool, i + 1, argv);
		_exit(100);
	}
	close(fds[1]);
	for (i = 0; (size_t)i < len - 1; i += n) {
		n = read(fds[0], err + i, len - 1 - i);
		if (n <= 0)
			break;
	}
	err[i] = 0;
	close(fds[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? (WEXITSTATUS(status) == 100 ? -1 : WEXITSTATUS(status)) : -3;
}

static void test_options(void)
{
	static const struct { const char *args[4]; int status; const char *says; } cases[] = {
		{ { "--seconds", "0" }, 2, "--seconds wants seconds" },
		{ { "--seconds", "1e9" }, 2, "--seconds wants seconds" },
		{ { "--size", "12Q" }, 2, "--size wants a size" },
		{ { "--count", "-3" }, 2, "--count wants a number from 0 to 1024" },
		{ { "--port", "300" }, 2, "--port wants a number from 0 to 255" },
		{ { "--bogus" }, 2, "usage: unit-tool" },
		{ { "extra" }, 2, "unexpected argument 'extra'" },
		{ { "--help" }, 0, "--size BYTES             how big" },
	};
	const char *const ok_args[] = { "--seconds", "2.5", "--size", "64K", "--count", "7",
					"--name", "x.csv", "--flag", "--dev", "rxe3", NULL };
	char err[2048];
	unsigned int i;
	int status;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		status = parse_in_child(cases[i].args, err, sizeof(err));
		tap_ok(status == cases[i].status && strstr(err, cases[i].says),
		      "%s %s: exit %d, says \"%s\"", cases[i].args[0],
		      cases[i].args[1] ? cases[i].args[1] : "", status, cases[i].says);
	}
	tool_parse(&tool, 12, (char **)(const char *[]){ "unit-tool", ok_args[0], ok_args[1],
		ok_args[2], ok_args[3], ok_args[4], ok_args[5], ok_args[6], ok_args[7], ok_args[8],
		ok_args[9], ok_args[10], NULL });
	tap_ok(seconds == 2.5 && size == 65536 && count == 7 && !strcmp(name, "x.csv") && flag &&
	      !strcmp(tool.dev.dev, "rxe3") && tool.dev.port == 1 && tool.dev.gid_index == 1,
	      "good options land in their variables, device options keep their defaults");
}

int main(void)
{
	test_sizes();
	test_options();
	return tap_done();
}
