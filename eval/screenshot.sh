#!/usr/bin/env bash
# Renders a neardup HTML report in headless Chromium and saves a PNG of it, to check the report
# as a person sees it. Needs Debian's chromium (apt-get install chromium).
# Usage: eval/screenshot.sh REPORT.html OUT.png [WIDTHxHEIGHT]
set -euo pipefail
report=$(realpath "$1")
out=$(realpath -m "$2")
size=${3:-1100x1800}
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# The flags keep Chromium off the network (this machine has none) and out of the user's profile.
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --window-size="${size/x/,}" \
    --screenshot="$out" "file://$report" 2>/dev/null
test -s "$out"
echo "screenshot -> $out"
