#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of `make install`, as a user of libibodp would use it: install into a
# prefix under the build folder ($BUILD/userspace-install, remade each run), then build
# the examples (userspace/examples/) against it with pkg-config, shared and static, the
# way the README says (odp_rdma_cm with librdmacm too). The guest suite libibodp runs the installed quick-start example
# on its device; here (no RDMA device) it must fail cleanly, saying so. Also: a build
# with the builder's own CFLAGS, and `make uninstall` removing all it installed. TAP.
set -u
. "$(dirname "$0")/lib.sh"

prefix=$BUILD/userspace-install
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
log=$BUILD/logs/check-install.log
n=0
t() { n=$((n + 1)); if eval "$2" >>"$log" 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1 (log: $log)"; fi; }
mkdir -p "$BUILD/logs"
: >"$log"
# Only the build folder's own install prefix is remade.
rm -rf "$prefix"
cflags="-std=c11 -Wall -Wextra -Werror"
echo "1..13"
t "make install PREFIX=$prefix" "make -C '$ROOT/userspace' O='$BUILD/userspace' install PREFIX='$prefix'"
t "header, shared and static library, pkg-config file, tools and man pages installed" \
	"test -f '$prefix/include/ibodp.h' -a -L '$prefix/lib/libibodp.so' -a -f '$prefix/lib/libibodp.a' -a -f '$prefix/lib/pkgconfig/ibodp.pc' -a -x '$prefix/bin/odp-bench' -a -f '$prefix/share/man/man3/libibodp.3' -a -f '$prefix/share/man/man1/odp-stress.1'"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
mkdir -p "$prefix/examples"
# Shared, found at run time through the rpath (the prefix is no loader directory).
for ex in odp_caps odp_quickstart; do
	t "$ex builds against it: cc $ex.c \$(pkg-config --cflags --libs ibodp)" \
		"cc $cflags '$ROOT/userspace/examples/$ex.c' \$(pkg-config --cflags --libs ibodp) -Wl,-rpath,'$prefix/lib' -o '$prefix/examples/$ex'"
done
# An rdma_cm application: libibodp on librdmacm's context (ibodp_wrap).
t "odp_rdma_cm builds against it and librdmacm: cc odp_rdma_cm.c \$(pkg-config --cflags --libs ibodp librdmacm)" \
	"cc $cflags '$ROOT/userspace/examples/odp_rdma_cm.c' \$(pkg-config --cflags --libs ibodp librdmacm) -Wl,-rpath,'$prefix/lib' -o '$prefix/examples/odp_rdma_cm'"
t "odp_quickstart links statically: pkg-config --static" \
	"cc $cflags '$ROOT/userspace/examples/odp_quickstart.c' \$(pkg-config --cflags ibodp) '$prefix/lib/libibodp.a' \$(pkg-config --static --libs ibodp | sed 's/-libodp//') -o '$scratch/odp_quickstart_static'"
t "pkg-config --libs names libibverbs for the verbs an application calls itself" \
	"pkg-config --libs ibodp | grep -q -- -libverbs"
# The exported functions are exactly those of the version script.
exported="nm -D --defined-only '$prefix/lib/libibodp.so' | awk '\$2 == \"T\" {sub(/@.*/, \"\", \$3); print \$3}' | sort"
listed="sed -n 's/^[[:space:]]*\\(ibodp_[a-z_]*\\);/\\1/p' '$ROOT/userspace/lib/libibodp.map' | sort"
t "the shared library exports the functions of libibodp.map and nothing else" \
	"test -n \"\$($exported)\" && test \"\$($exported)\" = \"\$($listed)\""
# Programs built against 1.0 and 1.1 pass the 1.0 structs to the 1.0 functions, which must
# keep their version; newer ones reach the *_sized functions of 1.2 through the macros.
t "the 1.0 functions keep IBODP_1.0 beside the *_sized functions of IBODP_1.2 and 1.3's" \
	"objdump -T '$prefix/lib/libibodp.so' | grep -Eq 'IBODP_1\.0 +ibodp_read_counters\$' && objdump -T '$prefix/lib/libibodp.so' | grep -Eq 'IBODP_1\.2 +ibodp_read_counters_sized\$' && objdump -T '$prefix/lib/libibodp.so' | grep -Eq 'IBODP_1\.3 +ibodp_mr_read_counters_sized\$'"
if ls /sys/class/infiniband/* >/dev/null 2>&1; then
	t "odp_quickstart registers and prefetches on this machine's RDMA device" \
		"'$prefix/examples/odp_quickstart' | grep -q 'prefetched 1 MiB'"
else
	t "without an RDMA device odp_quickstart fails cleanly, saying why" \
		"! '$prefix/examples/odp_quickstart' >'$scratch/out' 2>&1 && grep -q 'no RDMA device' '$scratch/out'"
fi
t "make CFLAGS=-O0 LDFLAGS=-Wl,-z,now keeps the project's flags and builds" \
	"make -C '$ROOT/userspace' O='$scratch/o0' CFLAGS=-O0 LDFLAGS=-Wl,-z,now '$scratch/o0/lib/libibodp.so' '$scratch/o0/bin/odp-stress'"
t "make install LIBDIR=<prefix>/lib/x86_64-linux-gnu puts the library and ibodp.pc there" \
	"make -C '$ROOT/userspace' O='$BUILD/userspace' install PREFIX='$scratch/multi' LIBDIR='$scratch/multi/lib/x86_64-linux-gnu' && test -f '$scratch/multi/lib/x86_64-linux-gnu/libibodp.a' && grep -q '^libdir=$scratch/multi/lib/x86_64-linux-gnu' '$scratch/multi/lib/x86_64-linux-gnu/pkgconfig/ibodp.pc'"
t "make uninstall removes every file install put there" \
	"make -C '$ROOT/userspace' O='$BUILD/userspace' uninstall PREFIX='$scratch/multi' LIBDIR='$scratch/multi/lib/x86_64-linux-gnu' && test -z \"\$(find '$scratch/multi' ! -type d)\""
