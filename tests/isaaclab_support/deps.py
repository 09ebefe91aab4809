"""Where the isolated Isaac Lab test dependencies live, and how to run a Python there (tests only).

``scripts/install_isaaclab_test_deps.sh`` installs them into ``$NVTXSIM_ISAACLAB_DEPS``
(default: ``<repo>/.deps/isaaclab``). Tests skip, saying so, while that folder is absent.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUPPORT = Path(__file__).resolve().parent
ENV_VAR = "NVTXSIM_ISAACLAB_DEPS"
INSTALL = "scripts/install_isaaclab_test_deps.sh"

#: Isaac Lab release -> (unpacked wheel folder, rsl-rl-lib folder, needs Kit stand-ins)
VERSIONS = {
    "2.3.2": ("isaaclab-2.3.2", "rsl_rl-3.0.1", True),
    "3.0.0": ("isaaclab-3.0.0", "rsl_rl-5.5.1", False),
}


def deps_dir() -> Path:
    return Path(os.environ.get(ENV_VAR) or REPO / ".deps" / "isaaclab")


def missing_reason() -> str | None:
    """Why the Isaac Lab tests cannot run here, or None."""
    d = deps_dir()
    if not (d / "READY").is_file():
        return f"Isaac Lab test deps not installed at {d} (run {INSTALL}; ${ENV_VAR} overrides the place)"
    return None


def python() -> str:
    return str(deps_dir() / "venv" / "bin" / "python")


def env_for(version: str, extra: dict | None = None) -> dict:
    """Environment of a subprocess that imports Isaac Lab ``version`` (plus nvtxsim from this checkout)."""
    folder, rsl_rl, stubs = VERSIONS[version]
    d = deps_dir()
    if folder.startswith("isaaclab-2"):
        isaac_paths = sorted(glob.glob(str(d / folder / "isaaclab" / "source" / "*")))
    else:
        isaac_paths = [str(d / folder)]
    paths = [str(REPO), str(SUPPORT)] + ([str(SUPPORT / "kit_site")] if stubs else []) + isaac_paths
    paths.append(str(d / rsl_rl))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.pop("NVTXSIM_TEST_KIT_STUBS", None)
    if stubs:
        env["NVTXSIM_TEST_KIT_STUBS"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["NVTXSIM_QUIET"] = "1"
    env.update(extra or {})
    return env


def run(
    version: str,
    args: list,
    *,
    prefix: list | None = None,
    extra_env: dict | None = None,
    timeout: float = 300,
    cwd: str | None = None,
) -> subprocess.CompletedProcess:
    """Run ``python ARGS`` (optionally behind ``prefix``, e.g. nsys) with Isaac Lab ``version``."""
    cmd = list(prefix or []) + [python()] + [str(a) for a in args]
    return subprocess.run(
        cmd, env=env_for(version, extra_env), capture_output=True, text=True, timeout=timeout, cwd=cwd or str(REPO)
    )


def scenario(version: str, name: str, tmp: Path, *options: str, prefix: list | None = None) -> dict:
    """Run ``scenario.py NAME`` and return the JSON it writes (fails with its output on error)."""
    out = tmp / f"{name}-{version}.json"
    proc = run(version, [SUPPORT / "scenario.py", name, "--out", out, *options], prefix=prefix)
    if proc.returncode != 0 or not out.is_file():
        raise AssertionError(
            f"scenario {name} ({version}) failed rc={proc.returncode}\n--- stdout\n"
            f"{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-6000:]}"
        )
    return json.loads(out.read_text())
