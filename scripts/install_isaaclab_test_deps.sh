#!/usr/bin/env bash
# Install what tests/test_isaaclab*.py need, isolated from the shared Python, from PyPI only.
#
#   scripts/install_isaaclab_test_deps.sh [DEST]      (DEST defaults to $NVTXSIM_ISAACLAB_DEPS or <repo>/.deps/isaaclab)
#
# DEST/venv             venv with --system-site-packages (reuses the shared torch/numpy; adds the pure-Python
#                       packages Isaac Lab's env/sim/scene/manager/sensor/task modules import, newton, skrl, rl_games)
# DEST/isaaclab-2.3.2   the isaaclab==2.3.2.post1 wheel, unpacked (not installed: its top-level package is a
#                       bootstrap shim that needs Isaac Sim; tests put isaaclab/source/* on sys.path)
# DEST/isaaclab-3.0.0   the isaaclab==3.0.0 wheel (Python 3.12 only on PyPI), unpacked for PYTHONPATH
# DEST/rsl_rl-3.0.1     rsl-rl-lib as used with Isaac Lab 2.3 (--target, no deps)
# DEST/rsl_rl-5.5.1     rsl-rl-lib as pinned by Isaac Lab 3.0 (--target, no deps)
# DEST/READY            written last; tests skip (with a reason) while it is absent
#
# Idempotent: a complete DEST is left alone unless --force is given.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
force=0
dest=""
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) dest="$arg" ;;
  esac
done
dest="${dest:-${NVTXSIM_ISAACLAB_DEPS:-$here/.deps/isaaclab}}"
python="${PYTHON:-python3}"

stamp="isaaclab 2.3.2.post1 3.0.0; rsl-rl-lib 3.0.1 5.5.1; layout 3"
if [ "$force" = 0 ] && [ -f "$dest/READY" ] && [ "$(cat "$dest/READY")" = "$stamp" ]; then
  echo "isaaclab test deps present: $dest"; exit 0
fi

mkdir -p "$dest"
# Keep the whole folder out of git without touching the repository's .gitignore.
parent="$(dirname "$dest")"
if [ "$parent" = "$here/.deps" ] && [ ! -f "$parent/.gitignore" ]; then printf '*\n' > "$parent/.gitignore"; fi
rm -f "$dest/READY"

export PIP_DISABLE_PIP_VERSION_CHECK=1
# torch comes from the shared Python (a CPU build here); never let pip pull one into the venv.
if ! "$python" -c "import torch" >/dev/null 2>&1; then
  echo "install_isaaclab_test_deps: $python cannot import torch; install it first (scripts/setup.sh --test does)" >&2
  exit 1
fi
venv="$dest/venv"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv --system-site-packages "$venv"
fi
pip=("$venv/bin/python" -m pip install -q)

# Pure-Python (or wheel-only) packages imported by Isaac Lab's env, sim, scene, manager and sensor modules.
# Traps: PyPI's "warp" and "hid" are unrelated projects (the modules come from warp-lang and hidapi).
"${pip[@]}" --only-binary=:all: \
  "gymnasium>=1.2" "warp-lang==1.17.0" opencv-python-headless hidapi trimesh flatdict h5py "matplotlib<3.10" \
  toml pyyaml prettytable einops "lazy_loader>=0.4" usd-core rich \
  tensordict tensorboard gitpython tqdm onnx \
  "skrl==2.1.1" "rl-games==1.6.5"
# hydra-core (Isaac Lab 3.0's isaaclab_tasks): its antlr4 runtime is an sdist (pure Python), so not binary-only,
# else pip falls back to hydra-core 0.11, which needs the removed pkg_resources.
"${pip[@]}" "hydra-core>=1.3,<2"
# Newton (Isaac Lab 3.0's kitless physics/renderer backend): its own deps are warp-lang and numpy.
"${pip[@]}" --no-deps "newton==1.6.1"

fetch_unpack() {  # fetch_unpack <requirement> <folder> [pip download options...]
  local req="$1" out="$2"; shift 2
  if [ -d "$out" ] && [ -f "$out/.complete" ]; then return; fi
  rm -rf "$out" "$out.tmp"; mkdir -p "$out.tmp/whl"
  "$venv/bin/python" -m pip download -q --no-deps --only-binary=:all: "$@" "$req" -d "$out.tmp/whl"
  "$venv/bin/python" - "$out.tmp" <<'PY'
import glob, sys, zipfile
root = sys.argv[1]
(whl,) = glob.glob(root + "/whl/*.whl")
zipfile.ZipFile(whl).extractall(root)
PY
  rm -rf "$out.tmp/whl"; touch "$out.tmp/.complete"; mv "$out.tmp" "$out"
}

fetch_unpack "isaaclab==2.3.2.post1" "$dest/isaaclab-2.3.2"
fetch_unpack "isaaclab==3.0.0" "$dest/isaaclab-3.0.0" --python-version 3.12
for v in 3.0.1 5.5.1; do
  if [ ! -f "$dest/rsl_rl-$v/.complete" ]; then
    rm -rf "$dest/rsl_rl-$v"
    "${pip[@]}" --no-deps --target "$dest/rsl_rl-$v" "rsl-rl-lib==$v"
    touch "$dest/rsl_rl-$v/.complete"
  fi
done

printf '%s' "$stamp" > "$dest/READY"
echo "isaaclab test deps installed: $dest"
