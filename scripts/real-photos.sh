#!/bin/sh
# Makes a held-out set of real photographs for the benchmarks and checks
# that want figures worth quoting (pbench gen makes synthetic ones): the
# JPEG wallpapers of Debian's wallpaper packages, a random 4:3 or 3:4
# window of each, re-encoded to shorter side 375 at quality 90 (the
# ImageNet shape, about 500x375).
#   scripts/real-photos.sh DIR [N]      (default N 400; DIR must be new or empty)
# Installs gnome-backgrounds, ukui-wallpapers, plasma-workspace-wallpapers,
# lomiri-wallpapers and python3-pil with apt-get when they are missing.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 DIR [N]" >&2; exit 2; }
DIR=$1; N=${2:-400}
PKGS="gnome-backgrounds ukui-wallpapers plasma-workspace-wallpapers lomiri-wallpapers python3-pil"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    echo "real-photos: installing:$missing"
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi
mkdir -p "$DIR"
[ -z "$(ls -A "$DIR")" ] || { echo "real-photos: $DIR is not empty" >&2; exit 2; }
/usr/bin/python3 - "$DIR" "$N" <<'PY'
import os, random, sys
from PIL import Image
src = []
for root in ["/usr/share/backgrounds", "/usr/share/wallpapers"]:
    for d, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            if f.lower().endswith((".jpg", ".jpeg")) and "screenshot" not in f \
                    and os.path.getsize(p) > 200000:
                src.append(p)
src.sort()
if not src:
    sys.exit("real-photos: no wallpaper JPEGs found under /usr/share")
out, n, rnd = sys.argv[1], int(sys.argv[2]), random.Random(1)
for i in range(n):
    im = Image.open(src[i % len(src)]).convert("RGB")
    w, h = im.size
    s = rnd.uniform(0.4, 1.0) * min(w, h)
    cw, ch = (s * 4 / 3, s) if rnd.random() < 0.75 else (s * 3 / 4, s)
    cw, ch = min(cw, w), min(ch, h)
    x, y = rnd.uniform(0, w - cw), rnd.uniform(0, h - ch)
    c = im.crop((int(x), int(y), int(x + cw), int(y + ch)))
    k = 375 / min(c.size)
    c = c.resize((round(c.size[0] * k), round(c.size[1] * k)), Image.BICUBIC)
    c.save(os.path.join(out, "img%05d.jpg" % i), quality=90)
print("real-photos: %d photographs from %d wallpapers in %s" % (n, len(src), out))
PY
