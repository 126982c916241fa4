#!/usr/bin/env bash
# Memory checking, called by .ci/run; runs on a fresh clone:
#  1. the C toy VM over every protocol (and its deadlock phase) under valgrind memcheck;
#  2. the C API contract test (tests/c/api_soundness.c) per protocol under memcheck;
#  3. a short `objmon-bench stress --protocol all` under memcheck;
#  every one with --error-exitcode: one memcheck error fails CI. No suppressions: none is
#  needed (leaks are not errors under memcheck's defaults, and the toy VM's deadlock phase
#  leaks its deadlocked threads' runtimes on purpose);
#  4. the toy VM for `biased` and `fable` with membarrier(2) denied by a seccomp filter
#  (tests/c/no_membarrier.c), where bias revocation falls back to handshakes (item 4).
# About a minute on 2 cores once the release build is warm.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each run under valgrind, and each no-membarrier run, is killed after this many seconds.
LIMIT="${VALGRIND_STEP_LIMIT:-300}"

echo "== valgrind: memcheck over the C API (toy VM, API contracts, stress)"
if ! command -v valgrind >/dev/null; then
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    $sudo apt-get install -y valgrind || { $sudo apt-get update && $sudo apt-get install -y valgrind; }
fi

out=target/valgrind
mkdir -p "$out"
cargo build --release -p objmon-ffi --lib
cargo build --release -p objmon-bench
cc="${CC:-cc}"
for prog in toy_vm api_soundness; do
    "$cc" -std=c11 -O2 -g -Wall -Wextra -Werror -pthread -I crates/objmon-ffi/include \
        "crates/objmon-ffi/tests/c/$prog.c" target/release/libobjmon_ffi.a -ldl -lm \
        -o "$out/$prog"
done
"$cc" -std=c11 -O2 -Wall -Wextra -Werror crates/objmon-ffi/tests/c/no_membarrier.c \
    -o "$out/no_membarrier"

memcheck() {
    timeout --kill-after=10 "$LIMIT" valgrind --quiet --error-exitcode=1 "$@"
}

echo "-- toy VM, every protocol"
memcheck "$out/toy_vm"
echo "-- API contracts, every protocol"
for p in $("$out/api_soundness" --list); do
    memcheck "$out/api_soundness" "$p" >/dev/null
    echo "$p: ok"
done
echo "-- objmon-bench stress, every protocol, 1 s each"
memcheck target/release/objmon-bench stress --protocol all --seconds 1 --watchdog 60

echo "== toy VM with membarrier denied (biased, fable)"
status=0
for p in biased fable; do
    set +e
    timeout --kill-after=10 120 "$out/no_membarrier" "$out/toy_vm" "$p"
    rc=$?
    set -e
    case $rc in
        0) echo "$p without membarrier: ok" ;;
        124|137) echo "$p without membarrier: HUNG (killed after 120 s)"; status=1 ;;
        *) echo "$p without membarrier: FAILED (exit status $rc)"; status=1 ;;
    esac
done
if [ "$status" != 0 ]; then
    echo "membarrier-denied run failed"
    exit 1
fi
