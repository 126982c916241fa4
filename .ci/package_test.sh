#!/usr/bin/env bash
# CI: the crates publish as they are meant to.
#  1. `cargo package --list` of each publishable crate holds its sources (src/lib.rs or
#     src/main.rs), Cargo.toml, README.md, LICENSE-MIT and LICENSE-APACHE, and nothing that
#     does not belong (target/, .ci/, .git/, .cargo/, files over 1 MiB); every other
#     workspace member says `publish = false`.
#  2. `cargo package` of the publishable crates together: each packaged crate is built from
#     its .crate alone. One invocation for all of them, because objmon-ffi and objmon-bench
#     depend on objmon, which is not on crates.io yet: cargo (>= 1.90) resolves a sibling
#     packaged in the same invocation from a local registry overlay, while a lone
#     `cargo package -p objmon-ffi` (or `cargo publish --dry-run -p objmon-ffi`) fails with
#     "no matching package named `objmon` found". This step works offline once the
#     dependencies are in cargo's cache.
#  3. `cargo publish --dry-run --workspace`: the same overlay, plus crates.io's own checks
#     (it skips the `publish = false` members). It needs the crates.io index over the
#     network even with --no-verify; with CARGO_NET_OFFLINE=true it is skipped.
#  4. `cargo +TOOLCHAIN check --workspace` with the toolchain named by the workspace's
#     `rust-version`, when rustup has it; skipped otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

publishable=(objmon objmon-ffi objmon-bench)
max_bytes=$((1024 * 1024))
fail() { echo "FAIL: $*"; exit 1; }

echo "== package: what each publishable crate ships"
for member in crates/* xtask; do
    [ -f "$member/Cargo.toml" ] || continue
    name="$(sed -n 's/^name = "\(.*\)"/\1/p' "$member/Cargo.toml" | head -1)"
    if [[ " ${publishable[*]} " == *" $name "* ]]; then
        grep -q '^publish = false' "$member/Cargo.toml" && fail "$name is listed as publishable but says publish = false"
    else
        grep -q '^publish = false' "$member/Cargo.toml" || fail "$name is neither listed as publishable here nor publish = false"
    fi
done
for crate in "${publishable[@]}"; do
    dir="crates/$crate"
    list="$(cargo package -p "$crate" --list --allow-dirty 2>/dev/null)"
    for f in Cargo.toml README.md LICENSE-MIT LICENSE-APACHE; do
        grep -qx "$f" <<<"$list" || fail "$crate: $f not packaged"
    done
    grep -qxE 'src/(lib|main)\.rs' <<<"$list" || fail "$crate: neither src/lib.rs nor src/main.rs packaged"
    if bad="$(grep -E '^(target|\.ci|\.git|\.cargo)/' <<<"$list")"; then
        fail "$crate packages what it should not: $bad"
    fi
    while read -r f; do
        # Files cargo writes itself (.cargo_vcs_info.json, Cargo.lock, ...) are not in $dir.
        [ -e "$dir/$f" ] || continue
        size="$(stat -L -c %s "$dir/$f")"
        [ "$size" -le "$max_bytes" ] || fail "$crate: $f is $size bytes (over $max_bytes)"
    done <<<"$list"
    # The license files are links to the root's: they must resolve to the texts.
    grep -q "MIT License" "$dir/LICENSE-MIT" || fail "$dir/LICENSE-MIT is not the MIT text"
    grep -q "Apache License" "$dir/LICENSE-APACHE" || fail "$dir/LICENSE-APACHE is not the Apache text"
    echo "$crate: $(wc -l <<<"$list") files, sources, README and licenses in"
done

echo "== package: each publishable crate builds from its .crate alone"
pkgs=()
for crate in "${publishable[@]}"; do pkgs+=(-p "$crate"); done
cargo package "${pkgs[@]}" --allow-dirty

echo "== publish --dry-run --workspace"
if [ "${CARGO_NET_OFFLINE:-}" = true ]; then
    echo "skipped: CARGO_NET_OFFLINE=true (the dry run reads the crates.io index)"
else
    # Verified just above; the dry run adds crates.io's checks of the manifests.
    cargo publish --dry-run --workspace --no-verify --allow-dirty
fi

echo "== rust-version"
msrv="$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)"
[ -n "$msrv" ] || fail "no rust-version in the workspace Cargo.toml"
toolchain="$msrv"
[[ "$toolchain" == *.*.* ]] || toolchain="$toolchain.0"
if rustc --version | grep -q "^rustc $toolchain "; then
    # The default toolchain is the rust-version: every build of this CI run checked it.
    echo "rust-version $msrv: the default toolchain ($(rustc --version)) builds everything here"
elif command -v rustup >/dev/null && rustup run "$toolchain" rustc --version >/dev/null 2>&1; then
    CARGO_TARGET_DIR=target/msrv cargo "+$toolchain" check --workspace --all-targets
    echo "rust-version $msrv: cargo +$toolchain check --workspace ok"
else
    echo "skipped: toolchain $toolchain (the workspace's rust-version) is not installed (rustup toolchain install $toolchain)"
fi
echo "package test: ok"
