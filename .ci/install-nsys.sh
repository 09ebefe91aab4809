#!/usr/bin/env bash
# Install Debian's Nsight Systems 2022.4 (non-free) so tests can run real `nsys profile`.
# Idempotent; needs root (CI and dev machines run as root).
set -euo pipefail
if command -v nsys >/dev/null 2>&1 && nsys --version >/dev/null 2>&1; then
  echo "nsys present: $(nsys --version)"; exit 0
fi
src=/etc/apt/sources.list.d/nvtxsim-nonfree.sources
if [ ! -f "$src" ]; then
  cat > "$src" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends nsight-systems >/dev/null
# The Debian layout hides the host importer from `nsys profile --export`; link it where nsys looks.
if [ -d /usr/lib/nsight-systems/host-linux-x64 ] && [ ! -e /usr/lib/x86_64-linux-gnu/nsight-systems/host-linux-x64 ]; then
  mkdir -p /usr/lib/x86_64-linux-gnu/nsight-systems
  ln -s /usr/lib/nsight-systems/host-linux-x64 /usr/lib/x86_64-linux-gnu/nsight-systems/host-linux-x64
fi
echo "installed: $(nsys --version)"
