#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of `make install`: install libibodp into a temporary prefix, then build
# userspace/examples/odp_caps.c against it with pkg-config, shared and static, and run
# it (no RDMA device here: it must fail cleanly, saying so). Prints TAP.
set -u
. "$(dirname "$0")/lib.sh"

prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
log=$BUILD/logs/check-install.log
n=0
t() { n=$((n + 1)); if eval "$2" >>"$log" 2>&1; then echo "ok $n - $1"; else echo "not ok $n - $1 (log: $log)"; fi; }
: >"$log"
echo "1..6"
t "make install PREFIX=$prefix" "make -C '$ROOT/userspace' O='$BUILD/userspace' install PREFIX='$prefix'"
t "header, shared and static library, pkg-config file, tools and man pages installed" \
	"test -f '$prefix/include/ibodp.h' -a -L '$prefix/lib/libibodp.so' -a -f '$prefix/lib/libibodp.a' -a -f '$prefix/lib/pkgconfig/ibodp.pc' -a -x '$prefix/bin/odp-bench' -a -f '$prefix/share/man/man3/libibodp.3' -a -f '$prefix/share/man/man1/odp-stress.1'"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
t "an example builds against it with pkg-config (shared)" \
	"cc -std=c11 -Wall -Wextra -Werror '$ROOT/userspace/examples/odp_caps.c' \$(pkg-config --cflags --libs ibodp) -o '$prefix/odp_caps'"
t "and statically (pkg-config --static)" \
	"cc -std=c11 -Wall -Wextra -Werror -static-libgcc '$ROOT/userspace/examples/odp_caps.c' \$(pkg-config --cflags ibodp) '$prefix/lib/libibodp.a' \$(pkg-config --static --libs-only-l ibodp | sed 's/-libodp//') -o '$prefix/odp_caps_static'"
# The exported functions are exactly those of the version script.
exported="nm -D --defined-only '$prefix/lib/libibodp.so' | awk '\$2 == \"T\" {sub(/@.*/, \"\", \$3); print \$3}' | sort"
listed="sed -n 's/^[[:space:]]*\\(ibodp_[a-z_]*\\);/\\1/p' '$ROOT/userspace/lib/libibodp.map' | sort"
t "the shared library exports the functions of libibodp.map and nothing else" \
	"test -n \"\$($exported)\" && test \"\$($exported)\" = \"\$($listed)\""
if ls /sys/class/infiniband/* >/dev/null 2>&1; then
	t "the example prints the ODP caps of this machine's RDMA device" \
		"LD_LIBRARY_PATH='$prefix/lib' '$prefix/odp_caps' | grep -q ': '"
else
	t "without an RDMA device the example fails cleanly, saying why" \
		"! LD_LIBRARY_PATH='$prefix/lib' '$prefix/odp_caps' 2>&1 && LD_LIBRARY_PATH='$prefix/lib' '$prefix/odp_caps' 2>&1 | grep -q 'no RDMA device'"
fi
