# SPDX-License-Identifier: GPL-2.0
# The Makefile only wires the scripts together; each script works on its own too.
#   make test [PROFILE=a,b] [KERNEL=/path/bzImage]   every suite on every VM profile
#             [SUITES=a,b]                         (only guest suites named like a or b)
#   make run  [PROFILE=name] [KERNEL=...]            boot, create soft-RoCE, run the workload
#   make shell [PROFILE=name] [KERNEL=...]           the test guest with a shell
#   make cluster [NODES=2..4] [PROFILE=name]         guests joined by a link of their own,
#             [KERNEL=...] [CMD='...']               rxe, ssh, Open MPI, UCX: a shell on
#                                                    node0, or CMD run there (its status)
#   make bench [PROFILE=a,b] [KERNEL=...]            benchmark tables (BENCH_SECONDS=n,
#                                                    BENCH_REPS=n cross-host repetitions)
#             [COMPARE=/path/bzImage [BOOTS=n]]     ... and ours against another kernel, booted in turn
#   make kernel                                      build our kernel only
#   make peer [FIXED=1]                              build the upstream kernel Debian ships
#                                                    (kernel/upstream/BASE, our config) for
#                                                    KERNEL=: plain, or with our fixes for
#                                                    it (kernel/upstream/, "peer-fixed")
#   make export-patches [SERIES=upstream]            kernel commits -> kernel/patches/
#                                                    (or kernel/upstream/)
#   make check-series [FROM=N] [SERIES=upstream]     checkpatch --strict, each patch builds, W=1
#   make soak [PROFILE=name] [KERNEL=...]            random verbs sequences, one seed after
#             [SOAK_SECONDS=n] [SEED=n]             another (default distro-mm, 1800 s)
#   make mutants [ONLY=a,b] [MUTANT_PROFILE=p]      known-bad kernels (tests/mutants/) must
#                                                    fail the suites that should notice them
#   make install [PREFIX=/usr/local] [DESTDIR=]      libibodp, its header, pkg-config file,
#                                                    tools and man pages
#   make clean                                       remove build/ (keeps apt packages)
PROFILE ?=
KERNEL ?=
SUITES ?=
BENCH_SECONDS ?=
BENCH_REPS ?=
COMPARE ?=
BOOTS ?=
FROM ?=
ONLY ?=
MUTANT_PROFILE ?=
SOAK_SECONDS ?=
SEED ?=
SERIES ?=
FIXED ?=
PREFIX ?= /usr/local
DESTDIR ?=
export PROFILE KERNEL SUITES BENCH_SECONDS BENCH_REPS COMPARE BOOTS FROM ONLY MUTANT_PROFILE SOAK_SECONDS SEED SERIES
# make cluster CMD='... $CLUSTER_HOSTFILE ...': the command as written, for node0's shell to
# expand (make would read $C as one of its own variables).
ifdef CMD
override CMD := $(value CMD)
endif
export CMD

test:
	@bash scripts/test.sh

bench:
	@bash scripts/bench.sh

soak:
	@bash scripts/soak.sh

run:
	@bash scripts/run.sh

shell:
	@bash scripts/shell.sh

cluster:
	@bash scripts/cluster.sh

kernel:
	@bash scripts/deps.sh
	@bash scripts/kernel-source.sh
	@bash scripts/kernel-build.sh normal

peer:
	@bash scripts/deps.sh
	@bash scripts/peer.sh >/dev/null
ifeq ($(FIXED),1)
	@SERIES=upstream bash scripts/kernel-source.sh
	@bash scripts/kernel-build.sh peer-fixed
else
	@bash scripts/kernel-build.sh peer
endif

export-patches:
	@bash scripts/kernel-export.sh

check-series:
	@bash scripts/check-series.sh

mutants:
	@bash scripts/mutants.sh

install:
	$(MAKE) -C userspace O=$(CURDIR)/build/userspace install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)

clean:
	rm -rf build

.PHONY: test bench soak run shell cluster kernel peer export-patches check-series mutants install clean
