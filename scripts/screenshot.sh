#!/usr/bin/env bash
# Renders a report's report.html in headless Chromium and writes PNGs of it, so the report is
# checked by looking. Usage: scripts/screenshot.sh REPORT_DIR OUT.png
#   OUT.png       the first screen (1280x900, as a reader opening the page sees it)
#   OUT-full.png  the whole page (its height measured by Chromium itself)
# Installs the Debian package `chromium` when /usr/bin/chromium is missing (as .ci/valgrind.sh
# installs valgrind); CHROMIUM=path picks another binary.
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 REPORT_DIR OUT.png" >&2
    exit 2
fi
dir=$(cd "$1" && pwd)
out=$2
page="$dir/report.html"
[ -f "$page" ] || { echo "$0: no report.html in $dir" >&2; exit 1; }
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
    echo "== installing chromium (Debian package)"
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    $sudo apt-get install -y chromium >/dev/null \
        || { $sudo apt-get update >/dev/null && $sudo apt-get install -y chromium >/dev/null; }
fi
width=1280
# Flags: headless in a container (no sandbox as root, no GPU, /dev/shm may be small);
# hide the scrollbar so the image is only the page.
shot() {  # shot HEIGHT FILE
    "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --hide-scrollbars --force-device-scale-factor=1 --virtual-time-budget=5000 \
        --window-size="$width,$1" --screenshot="$2" "file://$page" >/dev/null 2>&1
}
shot 900 "$out"
# The whole page: its height is measured by Chromium on a copy of the page (beside it, so the
# figures load) that writes its laid-out height into the DOM once everything has loaded.
probe="$dir/.screenshot-probe.html"
trap 'rm -f "$probe"' EXIT
sed 's#</body>#<script>onload=()=>document.body.dataset.h=document.documentElement.scrollHeight</script></body>#' \
    "$page" >"$probe"
height=$("$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --hide-scrollbars --window-size="$width,900" --virtual-time-budget=5000 \
    --dump-dom "file://$probe" 2>/dev/null | grep -o 'data-h="[0-9]*"' | grep -o '[0-9]*' || true)
if [ -n "$height" ]; then
    shot "$((height + 100))" "${out%.png}-full.png"  # + room for any window frame
    echo "wrote $out and ${out%.png}-full.png (page height $height px)"
else
    echo "wrote $out (page height not measured: no full-page PNG)"
fi
