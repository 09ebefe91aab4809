# Source on the GPU host, from the checkout root, after assemble.sh --unpack:
#   source scripts/gpu/isaaclab3/env.sh
# nsys 2025.3 and the nvtx wheel (.gpu/env.sh), then Isaac Lab 3.0 kitless from /tmp/il3site.
source .gpu/env.sh
export PYTHONPATH="$PYTHONPATH:/tmp/il3site"
export GIT_PYTHON_REFRESH=quiet PYTHONUNBUFFERED=1 IL3_ASSETS=/tmp
export OMNI_KIT_ACCEPT_EULA=YES
python3 -c 'import importlib.metadata as m, torch; print("torch", torch.__version__, "| " + ", ".join(f"{p} {m.version(p)}" for p in ("isaaclab", "warp-lang", "newton", "mujoco-warp", "rsl-rl-lib", "skrl", "nvtx")))' 2>&1 | tail -1
