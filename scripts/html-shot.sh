#!/bin/sh
# Renders a pbench HTML report with headless Chromium and checks that the
# picture is not blank: the check the HTML report's test and a person
# reviewing a change both use.
#
#   scripts/html-shot.sh REPORT.html [OUT.png] [WIDTHxHEIGHT]
#
# Prints the share of non-white pixels; exits 0 when the page drew
# something (at least 2% of the pixels), 1 when it is blank or Chromium
# failed, 2 on usage errors and 77 (ctest's skip code) when no Chromium is
# installed (Debian: chromium, which scripts/setup.sh installs).
set -eu
if [ $# -lt 1 ] || [ $# -gt 3 ]; then
    echo "usage: $0 REPORT.html [OUT.png] [WIDTHxHEIGHT]" >&2
    exit 2
fi
html=$1
png=${2:-${html%.html}.png}
size=${3:-1400x4000}
[ -f "$html" ] || { echo "$0: $html: no such file" >&2; exit 2; }
browser=
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
[ -n "$browser" ] || { echo "$0: no chromium installed; skipped" >&2; exit 77; }
case $html in /*) url=file://$html ;; *) url=file://$(pwd)/$html ;; esac
rm -f "$png"
# --no-sandbox: CI containers run as root, where Chromium's sandbox refuses.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$(mktemp -d)" --screenshot="$png" \
    --window-size="$(echo "$size" | tr x ,)" "$url" >/dev/null 2>&1 || true
[ -s "$png" ] || { echo "$0: $browser wrote no screenshot" >&2; exit 1; }
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if "$py" -c 'import PIL' 2>/dev/null; then
    "$py" - "$png" <<'PY'
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("L")
hist = im.histogram()
total = im.size[0] * im.size[1]
ink = total - sum(hist[245:])
share = 100.0 * ink / total
print(f"{sys.argv[1]}: {im.size[0]}x{im.size[1]}, {share:.1f}% non-white pixels")
sys.exit(0 if share >= 2.0 else 1)
PY
else
    # Without PIL: a blank page compresses to a few KiB; charts do not.
    bytes=$(wc -c < "$png")
    echo "$png: $bytes bytes (PIL not installed: judged by size)"
    [ "$bytes" -gt 40000 ]
fi
