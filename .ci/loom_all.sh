#!/usr/bin/env bash
# Every loom model (crates/objmon/tests/loom*.rs, but the three that .ci/run builds with debug
# assertions), release, under `--cfg loom`: built in one
# cargo invocation, then run two test binaries at a time. A binary's models run on its own
# test threads, and the longest models (loom.rs, loom_fatmon.rs: minutes each) would leave a
# core idle while the rest wait behind them; side by side the cores stay busy. Each
# binary's output is printed when it ends; any failure fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."

# The deflation models run in .ci/run's own stage, with debug assertions on (a build of their
# own); here they would only run a second time.
with_debug_assertions=" loom_hotspot loom_deflate_review loom_retire_stale "
tests=()
for f in crates/objmon/tests/loom*.rs; do
    name="$(basename "$f" .rs)"
    [[ "$with_debug_assertions" == *" $name "* ]] || tests+=(--test "$name")
done
export RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom
cargo test -p objmon --release "${tests[@]}" --no-run
mapfile -t bins < <(cargo test -p objmon --release "${tests[@]}" --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*"' | sed 's/"executable":"\(.*\)"/\1/')
[ "${#bins[@]}" -eq "$((${#tests[@]} / 2))" ] || {
    echo "FAIL: ${#bins[@]} loom test binaries for $((${#tests[@]} / 2)) files"
    exit 1
}
logs="$(mktemp -d)"
run_one() {
    local bin="$1" logs="$2" log
    log="$logs/$(basename "$bin").log"
    # cargo runs a test binary in its package's directory.
    if (cd crates/objmon && "$bin") >"$log" 2>&1; then
        echo "== $(basename "$bin"): $(grep '^test result' "$log")"
    else
        echo "== $(basename "$bin") FAILED:"
        cat "$log"
        return 255 # stops xargs
    fi
}
export -f run_one
# Longest first, so that the two long ones start at once.
printf '%s\n' "${bins[@]}" | awk '{print (/loom_fatmon|\/loom-[0-9a-f]+$/ ? 0 : 1) "\t" $0}' | sort -k1,1n |
    cut -f2 | xargs -P 2 -I{} bash -c 'run_one "$1" "$2"' _ {} "$logs"
echo "loom: ${#bins[@]} test binaries passed"
