#!/usr/bin/env bash
# On the GPU host, from the checkout root: gather the parts of the Isaac Lab 3.0 set (made by pack.sh) in
# /tmp/ilc as they arrive, one command each, and unpack them into /tmp/il3site once all are there.
#   bash scripts/gpu/isaaclab3/assemble.sh            copy the parts this command carried into /tmp/ilc
#   bash scripts/gpu/isaaclab3/assemble.sh --unpack   the same, then check and unpack (needs il3.sha256)
# Files outside the checkout stay on the host only while it is held (about 30 s after a command ends):
# send the parts back to back.
set -euo pipefail
mkdir -p /tmp/ilc
cp -f .il3/parts/il3.* /tmp/ilc/ 2>/dev/null || true
ls -la /tmp/ilc
[ "${1:-}" = "--unpack" ] || exit 0
cd /tmp/ilc
sha256sum -c il3.sha256
rm -rf /tmp/il3site && mkdir -p /tmp/il3site
t0=$SECONDS
cat il3.tar.xz.* | python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer, 1 << 22)" \
  | tar -C /tmp/il3site -xf -
echo "unpacked into /tmp/il3site in $((SECONDS - t0)) s: $(du -sh /tmp/il3site | cut -f1)"
