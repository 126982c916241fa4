#!/usr/bin/env bash
# The C library installs like one: `cargo xtask install` into a temporary prefix (outside
# the dynamic loader's search paths), then the C toy VM (crates/objmon-ffi/tests/c/toy_vm.c)
# built against the installed tree
#  1. with `cc $(pkg-config --cflags --libs objmon)` (shared library),
#  2. with CMake's find_package(objmon): objmon::objmon (shared) and objmon::objmon_static,
#     run from the build tree and again after `cmake --install` into another directory,
# each run over `thin` and `fable` WITHOUT LD_LIBRARY_PATH: the installed objmon.pc and
# objmonConfig.cmake put the library's directory in the program's RUNPATH, so a program
# built as the README says starts where it was built (README, "From C and C++"). The shared
# library's SONAME is checked with readelf, and each program checked to load the installed
# library. Missing tools (pkg-config, cmake, readelf, a C compiler) are installed with apt-get. Called by
# .ci/run after valgrind.sh (the release library is built by then); well under a minute on
# 2 cores once it is.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== install: cargo xtask install, then the toy VM against the installed tree"
need=()
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v cmake >/dev/null || need+=(cmake)
command -v readelf >/dev/null || need+=(binutils)
command -v "${CC:-cc}" >/dev/null || need+=(gcc)
if [ "${#need[@]}" != 0 ]; then
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    $sudo apt-get install -y "${need[@]}" || { $sudo apt-get update && $sudo apt-get install -y "${need[@]}"; }
fi

protocols=(thin fable)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

cargo xtask install --prefix "$prefix"
lib="$prefix/lib"
for f in include/objmon.h lib/libobjmon.a lib/libobjmon.so lib/pkgconfig/objmon.pc \
    lib/cmake/objmon/objmonConfig.cmake lib/cmake/objmon/objmonConfigVersion.cmake; do
    [ -e "$prefix/$f" ] || { echo "missing: $f"; exit 1; }
done

# The SONAME is libobjmon.so.MAJOR, and the links lead from it to the real file.
real="$(cd "$lib" && ls libobjmon.so.*.*.*)"
major="${real#libobjmon.so.}"; major="${major%%.*}"
soname="$(readelf -d "$lib/$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
[ "$soname" = "libobjmon.so.$major" ] || { echo "SONAME is '$soname', not libobjmon.so.$major"; exit 1; }
[ "$(readlink "$lib/libobjmon.so.$major")" = "$real" ] || { echo "bad link libobjmon.so.$major"; exit 1; }
[ "$(readlink "$lib/libobjmon.so")" = "libobjmon.so.$major" ] || { echo "bad link libobjmon.so"; exit 1; }
echo "SONAME $soname; installed sizes: $(du -h "$lib/libobjmon.a" | cut -f1) libobjmon.a, $(du -h "$lib/$real" | cut -f1) $real"
# No debug info left in either library.
for f in "$lib/libobjmon.a" "$lib/$real"; do
    if readelf -S -W "$f" 2>/dev/null | grep -q '\.debug_info'; then
        echo "$f still carries debug info"; exit 1
    fi
done

# Nothing may lead the loader to the prefix but the program itself.
unset LD_LIBRARY_PATH LD_PRELOAD

# The shared library the loader picks for `exe` (ldd runs the loader without the program).
loads() { ldd "$1" | sed -n 's/.*libobjmon\.so[^ ]* => \(not found\|[^ ]*\).*/\1/p'; }

run_toy_vm() { # label, executable
    local label="$1" exe="$2" status=0
    out="$(timeout --kill-after=10 120 "$exe" "${protocols[@]}" 2>&1)" || status=$?
    if [ "$status" != 0 ]; then
        echo "$out"; echo "$label: toy VM FAILED (exit status $status)"; exit 1
    fi
    for p in "${protocols[@]}"; do
        grep -q "^$p .*ok:" <<<"$out" || { echo "$out"; echo "$label: $p did not pass"; exit 1; }
    done
    echo "$label: ok (${protocols[*]})"
}

toy_vm=crates/objmon-ffi/tests/c/toy_vm.c
cc="${CC:-cc}"

echo "-- pkg-config"
export PKG_CONFIG_PATH="$lib/pkgconfig"
# shellcheck disable=SC2046 # the flags are words
"$cc" -std=c11 -O2 -Wall -Wextra -Werror -pthread "$toy_vm" $(pkg-config --cflags --libs objmon) \
    -o "$work/toy_vm_pc"
loaded="$(loads "$work/toy_vm_pc")"
[ "$loaded" = "$lib/libobjmon.so.$major" ] || { echo "toy_vm_pc loads '$loaded', not $lib/libobjmon.so.$major"; exit 1; }
run_toy_vm "pkg-config, shared" "$work/toy_vm_pc"

echo "-- cmake"
cmake -S crates/objmon-ffi/tests/cmake -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
grep "objmon .* from" "$work/cmake.log"
cmake --build "$work/cmake" -j 2 >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
loaded="$(loads "$work/cmake/toy_vm")"
[ "$loaded" = "$lib/libobjmon.so.$major" ] || { echo "cmake toy_vm loads '$loaded', not $lib/libobjmon.so.$major"; exit 1; }
run_toy_vm "cmake, objmon::objmon" "$work/cmake/toy_vm"
run_toy_vm "cmake, objmon::objmon_static" "$work/cmake/toy_vm_static"
cmake --install "$work/cmake" --prefix "$work/app" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
loaded="$(loads "$work/app/bin/toy_vm")"
[ "$loaded" = "$lib/libobjmon.so.$major" ] || { echo "installed toy_vm loads '$loaded', not $lib/libobjmon.so.$major"; exit 1; }
run_toy_vm "cmake, objmon::objmon, installed" "$work/app/bin/toy_vm"
run_toy_vm "cmake, objmon::objmon_static, installed" "$work/app/bin/toy_vm_static"
echo "install test: ok"
