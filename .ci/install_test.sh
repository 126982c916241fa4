#!/usr/bin/env bash
# The C library installs like one (issue 15): `cargo xtask install` into a temporary prefix,
# then the C toy VM (crates/objmon-ffi/tests/c/toy_vm.c) built against the installed tree
#  1. with `cc $(pkg-config --cflags --libs objmon)` (shared library),
#  2. with CMake's find_package(objmon): objmon::objmon (shared) and objmon::objmon_static,
# each run over `thin` and `fable`; the shared library's SONAME checked with readelf, and the
# pkg-config build checked to load the installed library. Called by .ci/run after valgrind.sh
# (the release library is built by then); well under a minute on 2 cores once it is.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== install: cargo xtask install, then the toy VM against the installed tree"
need=()
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v cmake >/dev/null || need+=(cmake)
command -v readelf >/dev/null || need+=(binutils)
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

run_toy_vm() { # label, executable, [env...]
    local label="$1" exe="$2"; shift 2
    if ! out="$(env "$@" timeout --kill-after=10 120 "$exe" "${protocols[@]}" 2>&1)"; then
        echo "$out"; echo "$label: toy VM FAILED"; exit 1
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
loaded="$(LD_LIBRARY_PATH="$lib" ldd "$work/toy_vm_pc" | sed -n 's/.*libobjmon.so[^ ]* => \([^ ]*\).*/\1/p')"
[ "$loaded" = "$lib/libobjmon.so.$major" ] || { echo "toy_vm_pc loads '$loaded'"; exit 1; }
run_toy_vm "pkg-config, shared" "$work/toy_vm_pc" LD_LIBRARY_PATH="$lib"

echo "-- cmake"
cmake -S crates/objmon-ffi/tests/cmake -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
grep "objmon .* from" "$work/cmake.log"
cmake --build "$work/cmake" -j 2 >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
run_toy_vm "cmake, objmon::objmon" "$work/cmake/toy_vm"
run_toy_vm "cmake, objmon::objmon_static" "$work/cmake/toy_vm_static"
echo "install test: ok"
