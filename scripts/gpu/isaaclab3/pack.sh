#!/usr/bin/env bash
# Pack Isaac Lab 3.0 (kitless: Newton/MJWarp physics, Newton warp renderer) with rsl_rl and skrl for the GPU host,
# which has Python 3.12, torch 2.11 and no package registry.  Run here, from the checkout root:
#
#   bash scripts/gpu/isaaclab3/pack.sh [PART_MB]        (default 56)
#
# Writes into the git-ignored folder .il3/:
#   wheels/        the wheels (pip download, Python 3.12, manylinux x86_64; antlr4 built from its sdist)
#   site/          their install tree (pip install --target, no dependencies: the host has torch, numpy, ...)
#   parts/il3.*    site/ as tar.xz split into PART_MB-MiB parts, and il3.sha256
# Left out of site/: warp's CPU kernel library (warp-clang.so, only for CPU devices) and test suites.
# The host assembles the parts with scripts/gpu/isaaclab3/assemble.sh (see README.md beside this file).
set -euo pipefail
cd "$(dirname "$0")/../../.."
part_mb=${1:-56}
dest=.il3
exclude=$(git rev-parse --git-path info/exclude)
grep -qxF "/$dest/" "$exclude" 2>/dev/null || echo "/$dest/" >> "$exclude"
mkdir -p "$dest/wheels" "$dest/parts"

platforms=(--platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any)
py=(--python-version 3.12 --implementation cp)
wheels=(
  warp-lang==1.17.0 usd-exchange==3.0.1 mujoco==3.12.0 isaaclab==3.0.0 newton==1.6.1 mujoco-warp==3.12.0
  gymnasium==1.4.0 Farama-Notifications==0.0.6 hydra-core==1.3.8 omegaconf==2.3.1 glfw==2.11.0
  prettytable==3.18.0 wcwidth==0.9.4 newton-usd-schemas==0.6.0
  rsl-rl-lib==5.5.1 tensordict==0.15.3 pyvers==0.2.3 GitPython==3.2.1 gitdb==4.0.12 smmap==5.0.3
  skrl==2.1.1 cupti-python==13.0.1
)
python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: "${py[@]}" "${platforms[@]}" \
  -d "$dest/wheels" "${wheels[@]}"
ls "$dest"/wheels/antlr4_python3_runtime-4.9.3-*.whl >/dev/null 2>&1 \
  || python3 -m pip wheel -q --disable-pip-version-check --no-deps antlr4-python3-runtime==4.9.3 -w "$dest/wheels"

rm -rf "$dest/site"
python3 -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --ignore-requires-python \
  --only-binary=:all: "${py[@]}" "${platforms[@]}" --target "$dest/site" "$dest"/wheels/*.whl
site="$dest/site"
rm -f "$site/warp/bin/warp-clang.so"
rm -rf "$site/isaaclab/source" "$site/newton/tests" "$site/warp/tests" "$site/warp/examples" "$site/bin"
find "$site" -name __pycache__ -type d -prune -exec rm -rf {} +
du -sh "$site"

rm -f "$dest"/parts/il3.*
tar -C "$site" -cf - . | xz -9e -T"$(nproc)" | split -b "${part_mb}M" -d -a 1 - "$dest/parts/il3.tar.xz."
(cd "$dest/parts" && sha256sum il3.tar.xz.* > il3.sha256)
ls -la "$dest/parts"
