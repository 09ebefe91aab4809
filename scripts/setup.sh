#!/usr/bin/env bash
# Set up a fresh Debian 12 machine for nvtxsim.
#   bash scripts/setup.sh          nvtxsim itself (pip, editable)
#   bash scripts/setup.sh --test   plus Nsight Systems 2022.4 and everything the tests need
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
pip_install() { "$PY" -m pip install -q --disable-pip-version-check "$@"; }

pip_install -e .
if [ "${1:-}" = "--test" ]; then
  bash .ci/install-nsys.sh
  # Headless Chromium for the HTML checks (no script from an export runs in the page): they fail in CI without it.
  # Needs root, like install-nsys.sh (CI and dev machines run as root).
  if ! command -v chromium >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
  # CPU build of torch for the demo workload (pip takes it from the local wheel cache where one exists).
  "$PY" -c "import torch" 2>/dev/null || pip_install "torch==2.13.0"
  pip_install -e ".[test,pandas,dask]"
  if [ -f scripts/install_isaaclab_test_deps.sh ]; then bash scripts/install_isaaclab_test_deps.sh; fi
fi
