"""nvtxsim.isaaclab building blocks that need no Isaac Lab: the map, the wrappers, nsys-json, ``nvtxsim run``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from nvtxsim.cli.main import main as cli_main
from nvtxsim.isaaclab import nsys_json
from nvtxsim.isaaclab import phasemap as M
from nvtxsim.isaaclab.patching import IsaacLabInstrumentation, patch_defining, warn_missing
from nvtxsim.isaaclab.ranges import EventsPhase, GuardedPhase, PolicyFactoryPhase, SensorReadoutPhase

SUPPORT = Path(__file__).parent / "isaaclab_support"
sys.path.insert(0, str(SUPPORT))

from nesting import names, parents, self_nested  # noqa: E402
from recorder import RangeRecorder  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- the map


def test_phase_map_entries_are_well_formed():
    entries = M.all_targets()
    dotted = [t.dotted for t in entries]
    assert len(dotted) == len(set(dotted)), "duplicate entries"
    env_classes = {f"{m}.{c}" for m, c in M.ENV_CLASSES}
    for t in entries:
        assert t.scope in ("task", "class", "function"), t
        assert t.kind in ("phase", "sensor", "events", "policy_factory", "loop"), t
        assert set(t.versions) <= {2, 3} and t.versions, t
        assert (t.owner is None) == (t.scope == "function"), t
        if t.scope == "task":
            assert f"{t.module}.{t.owner}" in env_classes, t
        if t.alternative:
            assert f"{t.module}.{t.owner}.{t.alternative}" in dotted, t
    # every standard step phase of the issue is mapped
    mapped = {t.phase for t in entries}
    for ph in (
        "iteration",
        "action",
        "sim_step",
        "render",
        "camera_readout",
        "observation",
        "reward",
        "termination",
        "reset",
        "policy",
        "policy_update",
        "scene.write_data_to_sim",
        "scene.update",
    ):
        assert ph in mapped, ph
    assert M.targets_for(2) and all(2 in t.versions for t in M.targets_for(2))


# --------------------------------------------------------------------------- wrappers


class _Base:
    """Shaped like DirectRLEnv: step() calls hooks that a task overrides."""

    def step(self):
        self._compute_observations()
        return self._get_rewards()

    def _compute_observations(self):
        return self._get_observations()

    def _get_observations(self):
        raise NotImplementedError

    def _get_rewards(self):
        raise NotImplementedError

    @property
    def physics_dt(self):
        return 0.01


class _Task(_Base):
    def _get_observations(self):
        return "obs"

    def _get_rewards(self):
        return 1.0


class _SubTask(_Task):
    pass


def test_patch_defining_class_guard_and_restore():
    originals = {k: dict(c.__dict__) for k, c in (("base", _Base), ("task", _Task), ("sub", _SubTask))}
    handle = IsaacLabInstrumentation()
    assert patch_defining(handle, _SubTask, "step", GuardedPhase("iteration"))
    assert patch_defining(handle, _SubTask, "_get_rewards", GuardedPhase("reward"))
    assert patch_defining(handle, _SubTask, "_compute_observations", GuardedPhase("observation"))
    assert patch_defining(handle, _SubTask, "_get_observations", GuardedPhase("observation"))
    assert not patch_defining(handle, _SubTask, "no_such_method", GuardedPhase("x"))
    patch_defining(handle, _SubTask, "physics_dt", GuardedPhase("sim_step"))
    # patched where defined: step on the base, hooks on the task, nothing copied onto the subclass
    assert handle.patched == [
        "_Base.step",
        "_Task._get_rewards",
        "_Base._compute_observations",
        "_Task._get_observations",
    ]
    assert "step" not in _SubTask.__dict__ and "_get_rewards" not in _SubTask.__dict__
    assert handle.missing == ["_Base.physics_dt (property)"]
    assert isinstance(_Base.__dict__["physics_dt"], property)
    # patching again is a no-op (no double wrapping)
    again = IsaacLabInstrumentation()
    patch_defining(again, _SubTask, "step", GuardedPhase("iteration"))
    assert again.patched == []

    with RangeRecorder() as rec:
        assert _SubTask().step() == 1.0
    spans = rec.spans
    assert [s.name for s in spans] == ["iteration", "observation", "reward"]
    assert self_nested(spans, parents(spans)) == []  # _compute_observations ⊃ _get_observations: one range
    par = parents(spans)
    assert [spans[p].name if p is not None else None for p in par] == [None, "iteration", "iteration"]

    handle.restore()
    for key, cls in (("base", _Base), ("task", _Task), ("sub", _SubTask)):
        assert dict(cls.__dict__) == originals[key]


def test_guarded_phase_keeps_signature_and_source():
    import inspect

    wrapped = GuardedPhase("reward").wrap(_Task._get_rewards)
    assert wrapped.__wrapped__ is _Task._get_rewards
    assert inspect.signature(wrapped) == inspect.signature(_Task._get_rewards)
    assert "return 1.0" in inspect.getsource(wrapped)  # Isaac Lab calls inspect.getsource on some methods


def test_events_sensor_and_policy_factory_names():
    class Manager:
        def apply(self, mode, env_ids=None, dt=None):
            return mode

    class TiledCamera:
        def __init__(self):
            self.cfg = type("Cfg", (), {"prim_path": "/World/envs/env_.*/Camera"})()

        def _update_buffers_impl(self, env_ids):
            return env_ids

    ev = EventsPhase("events").wrap(Manager.apply)
    cam = SensorReadoutPhase("camera_readout").wrap(TiledCamera._update_buffers_impl)

    class Contact:
        cfg = None

        def _update_buffers_impl(self, env_ids):
            return env_ids

    contact = SensorReadoutPhase("camera_readout").wrap(Contact._update_buffers_impl)

    class Runner:
        def get_inference_policy(self, device=None):
            return lambda obs: obs * 2

    factory = PolicyFactoryPhase("policy").wrap(Runner.get_inference_policy)
    with RangeRecorder() as rec:
        ev(Manager(), "interval", dt=0.1)
        ev(Manager(), mode="reset")
        cam(TiledCamera(), [0, 1])
        contact(Contact(), [0])
        policy = factory(Runner())
        assert policy(3) == 6
    assert [s.name for s in rec.spans] == [
        "events.interval",
        "events.reset",
        "camera_readout",
        "sensor_readout",
        "policy",
    ]


def test_sensor_subranges_only_where_a_scene_has_several_of_a_kind():
    """Two cameras and one contact sensor: each camera's readout names it by its scene key; the lone
    contact sensor's readout is sensor_readout alone; no name holds a prim path."""
    from nvtxsim.isaaclab.ranges import register_sensors

    class Camera:
        def __init__(self):
            self.cfg = type("Cfg", (), {"prim_path": "/World/envs/env_.*/Camera"})()

        def _update_buffers_impl(self, env_ids):
            return env_ids

    class ContactSensor:
        cfg = None

        def _update_buffers_impl(self, env_ids):
            return env_ids

    front, wrist, feet, loose = Camera(), Camera(), ContactSensor(), Camera()
    register_sensors({"front_cam": front, "wrist_cam": wrist, "feet": feet})
    readout = SensorReadoutPhase("camera_readout")
    cam = readout.wrap(Camera._update_buffers_impl)
    contact = readout.wrap(ContactSensor._update_buffers_impl)
    with RangeRecorder() as rec:
        cam(front, [0])
        cam(wrist, [0])
        contact(feet, [0])
        cam(loose, [0])  # in no registered scene: its kind only
    assert [s.name for s in rec.spans] == [
        "camera_readout",
        "sensor.front_cam",
        "camera_readout",
        "sensor.wrist_cam",
        "sensor_readout",
        "camera_readout",
    ]


def test_wrapped_call_opens_no_range_inside_its_wrapper():
    """physics_manager.step inside sim_step is sim_step's whole body: one range; called alone it has its own."""
    outer = GuardedPhase("sim_step")
    inner = GuardedPhase("physics_manager.step", inside=("sim_step",))
    step = inner.wrap(lambda: 7)
    wrapped = outer.wrap(lambda: step())
    with RangeRecorder() as rec:
        assert wrapped() == 7
        assert step() == 7
    assert [s.name for s in rec.spans] == ["sim_step", "physics_manager.step"]


def test_ranges_cost_nothing_when_not_recording():
    calls = []
    fn = GuardedPhase("reward").wrap(lambda: calls.append(1) or 5)
    assert fn() == 5 and calls == [1]


def test_missing_names_warn_once():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_missing(["pkg.Mod.only_once_a", "pkg.Mod.only_once_b"])
        warn_missing(["pkg.Mod.only_once_a"])
    msgs = [str(w.message) for w in caught]
    assert len(msgs) == 1 and "pkg.Mod.only_once_a, pkg.Mod.only_once_b" in msgs[0]


def test_instrument_rejects_non_env():
    from nvtxsim.errors import NvtxsimError
    from nvtxsim.isaaclab import instrument, instrument_runner

    with pytest.raises(NvtxsimError, match="not an Isaac Lab env"):
        instrument(object())
    with pytest.raises(NvtxsimError, match="not an rsl_rl, skrl or rl_games"):
        instrument_runner(object())


def test_importing_nvtxsim_isaaclab_imports_nothing_heavy():
    code = (
        "import sys, nvtxsim.isaaclab, nvtxsim.isaaclab.auto as a; a.install(quiet=True); "
        "print(sorted(m for m in ('isaaclab','torch','gymnasium','rsl_rl','skrl','rl_games') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- nsys-json


def test_nsys_json_lists_resolvable_module_level_names(tmp_path, capsys):
    out = tmp_path / "trace.json"
    assert cli_main(["isaaclab", "nsys-json", "-o", str(out), "--version", "3"]) == 0
    value = json.loads(out.read_text())
    assert isinstance(value, list) and value
    for block in value:
        assert set(block) <= {"_comment", "domain", "color", "module", "functions"}
        assert block["domain"] == "nvtxsim-isaaclab" and block["color"].startswith("0x") and len(block["color"]) == 8
        assert block["functions"] and all(isinstance(f, str) for f in block["functions"])
    written = set(nsys_json.read_functions(value))
    by_name = {t.dotted: t for t in M.all_targets()}
    assert written <= set(by_name)
    assert "isaaclab.envs.direct_rl_env.DirectRLEnv.step" in written
    assert "isaaclab.sim.simulation_context.SimulationContext.step" in written
    assert "rsl_rl.algorithms.ppo.PPO.act" in written
    assert not any(n.endswith(("._get_rewards", "._get_observations", "get_inference_policy")) for n in written)
    assert all(3 in by_name[n].versions for n in written)
    assert "--python-functions-trace=" in capsys.readouterr().err

    # never overwrite without --force
    before = out.read_text()
    assert cli_main(["isaaclab", "nsys-json", "-o", str(out), "--version", "2"]) == 2
    assert "already exists" in capsys.readouterr().err and out.read_text() == before
    assert cli_main(["isaaclab", "nsys-json", "-o", str(out), "--version", "2", "--force", "--no-runners"]) == 0
    v2 = set(nsys_json.read_functions(json.loads(out.read_text())))
    assert "isaaclab.sensors.camera.tiled_camera.TiledCamera._update_buffers_impl" in v2
    assert not any(n.startswith("rsl_rl") for n in v2)


def test_nsys_json_task_hooks_from_source(tmp_path, monkeypatch, capsys):
    pkg = tmp_path / "mytasks"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "walker.py").write_text(
        "from isaaclab.envs import DirectRLEnv\n"  # never imported: read from source
        "class WalkerEnv(DirectRLEnv):\n"
        "    def _get_rewards(self):\n        return 0\n"
        "    def _get_observations(self):\n        return {}\n"
        "    def helper(self):\n        pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cli_main(["isaaclab", "nsys-json", "-o", "-", "--version", "3", "--task", "mytasks.walker:WalkerEnv"]) == 0
    value = json.loads(capsys.readouterr().out)
    names_ = set(nsys_json.read_functions(value))
    assert {"mytasks.walker.WalkerEnv._get_rewards", "mytasks.walker.WalkerEnv._get_observations"} <= names_
    assert "mytasks.walker.WalkerEnv.helper" not in names_
    assert cli_main(["isaaclab", "nsys-json", "-o", "-", "--task", "mytasks.walker:Nope"]) == 2
    assert "no class Nope" in capsys.readouterr().err
    assert cli_main(["isaaclab", "nsys-json", "-o", "-", "--task", "nowhere.mod:X"]) == 2
    assert cli_main(["isaaclab", "nsys-json", "-o", "-", "--task", "bad"]) == 2
    err = capsys.readouterr().err
    assert "expected MODULE:CLASS" in err and "Traceback" not in err


def test_nsys_json_check_fails_where_entries_do_not_resolve(tmp_path, capsys):
    out = tmp_path / "t.json"
    assert cli_main(["isaaclab", "nsys-json", "-o", str(out), "--version", "3", "--check"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("nvtxsim: error: ") and "do not resolve" in err and "\n" not in err
    assert not out.exists()


def test_check_without_isaaclab_is_one_line_error(capsys):
    assert cli_main(["isaaclab", "check"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("nvtxsim: error: Isaac Lab not found") and "\n" not in err
    # with an explicit version every required entry is reported unresolved
    assert cli_main(["isaaclab", "check", "--version", "2", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["version"] == 2
    assert {e["status"] for e in report["entries"] if not e["optional"]} == {"not-installed"}


# --------------------------------------------------------------------------- nvtxsim run


def _run(*args, cwd=None):
    env = dict(os.environ, NVTXSIM_QUIET="1", PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "nvtxsim", "run", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or REPO,
        timeout=120,
    )


def test_run_script_has_main_semantics(tmp_path):
    (tmp_path / "helper_mod.py").write_text("VALUE = 42\n")
    script = tmp_path / "prog.py"
    script.write_text(
        "import json, sys, os\n"
        "import helper_mod\n"  # sys.path[0] is the script's folder
        "def f():\n    pass\n"
        "if __name__ == '__main__':\n"
        "    heavy = [m for m in ('torch', 'gymnasium', 'isaaclab') if m in sys.modules]\n"
        "    print(json.dumps({'argv': sys.argv[1:], 'value': helper_mod.VALUE, 'heavy': heavy,\n"
        "                      'main_mod': sys.modules['__main__'].f is f, 'file': os.path.basename(__file__)}))\n"
        "    sys.exit(int(sys.argv[-1]))\n"
    )
    proc = _run(script, "--task", "Isaac-X", "7", cwd=tmp_path)
    assert proc.returncode == 7, proc.stderr
    out = json.loads(proc.stdout)
    assert out == {"argv": ["--task", "Isaac-X", "7"], "value": 42, "heavy": [], "main_mod": True, "file": "prog.py"}
    assert _run(script, "0", cwd=tmp_path).returncode == 0


def test_run_exit_codes_and_errors(tmp_path):
    boom = tmp_path / "boom.py"
    boom.write_text("def go():\n    raise ValueError('kaputt')\ngo()\n")
    proc = _run(boom)
    assert proc.returncode == 1
    assert "ValueError: kaputt" in proc.stderr and "boom.py" in proc.stderr and "runpy" not in proc.stderr
    msg = tmp_path / "msg.py"
    msg.write_text("import sys\nsys.exit('bad config')\n")
    proc = _run(msg)
    assert proc.returncode == 1 and "bad config" in proc.stderr
    proc = _run(tmp_path / "missing.py")
    assert proc.returncode == 2 and proc.stderr.strip() == f"nvtxsim: error: {tmp_path / 'missing.py'}: no such file"
    proc = _run()
    assert proc.returncode == 2 and "nothing to run" in proc.stderr


def test_run_module(tmp_path):
    pkg = tmp_path / "trainpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text("import sys\nprint('ARGS', sys.argv[1:], __name__)\nsys.exit(4)\n")
    env = dict(os.environ, NVTXSIM_QUIET="1", PYTHONPATH=os.pathsep.join([str(REPO), str(tmp_path)]))
    proc = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "run", "-m", "trainpkg.train", "--lr", "3"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 4 and "ARGS ['--lr', '3'] __main__" in proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "run", "-m", "no_such_mod_xyz"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 1 and "no module" in proc.stderr


@pytest.mark.nsys
@pytest.mark.skipif(not __import__("shutil").which("nsys"), reason="nsys not installed")
def test_run_under_nsys_keeps_user_ranges(tmp_path):
    script = tmp_path / "loop.py"
    script.write_text("import nvtxsim\nfor i in range(3):\n    with nvtxsim.phase('iteration'):\n        pass\n")
    out = tmp_path / "cap"
    env = dict(os.environ, NVTXSIM_QUIET="1", PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [
            "nsys",
            "profile",
            "-t",
            "nvtx,osrt",
            "--sample=none",
            "--cpuctxsw=none",
            "--export=sqlite",
            "--force-overwrite=true",
            "-o",
            str(out),
            sys.executable,
            "-m",
            "nvtxsim",
            "run",
            str(script),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    from nesting import from_export

    assert names(from_export(str(out) + ".sqlite"))["iteration"] == 3


# --------------------------------------------------------------------------- zero-edit hooks


def test_iteration_counts_steps_for_capture_windows(monkeypatch):
    import nvtxsim.emit.window
    from nvtxsim.isaaclab.ranges import IterationPhase

    calls = []
    monkeypatch.setattr(nvtxsim.emit.window, "step", lambda: calls.append(1))

    class Env:
        def step(self, inner=False):
            if inner:
                return self.step()  # a nested env step (wrapper calling super().step) counts once
            return 0

    step = IterationPhase("iteration", count_steps=True).wrap(Env.step)
    with RangeRecorder():
        for _ in range(3):
            step(Env(), inner=True)
    assert len(calls) == 3
    plain = IterationPhase("iteration").wrap(Env.step)
    plain(Env())
    assert len(calls) == 3


def test_after_init_runs_once_for_the_outermost_constructor():
    from nvtxsim.isaaclab import auto

    seen = []

    class Base:
        def __init__(self, x):
            self.x = x

    class Mid(Base):
        def __init__(self, x):
            super().__init__(x)
            self.mid = True

    original = Base.__dict__["__init__"]
    auto._after_init(Base, seen.append)
    auto._after_init(Mid, seen.append)
    auto._after_init(Mid, seen.append)  # idempotent
    try:
        m = Mid(3)
        b = Base(4)
        assert seen == [m, b] and m.mid and m.x == 3
    finally:
        auto.uninstall()
    assert Base.__dict__["__init__"] is original


def test_import_hook_instruments_runner_created_by_unmodified_script(tmp_path):
    """A stand-in rsl_rl package (same module names) built by a script that never mentions nvtxsim."""
    (tmp_path / "rsl_rl" / "runners").mkdir(parents=True)
    (tmp_path / "rsl_rl" / "algorithms").mkdir()
    (tmp_path / "rsl_rl" / "__init__.py").write_text("")
    (tmp_path / "rsl_rl" / "algorithms" / "__init__.py").write_text("from .ppo import PPO\n")
    (tmp_path / "rsl_rl" / "algorithms" / "ppo.py").write_text(
        "class PPO:\n"
        "    def act(self, obs):\n        return obs\n"
        "    def process_env_step(self, *a):\n        pass\n"
        "    def compute_returns(self, obs):\n        pass\n"
        "    def update(self):\n        return {}\n"
    )
    (tmp_path / "rsl_rl" / "runners" / "__init__.py").write_text("from .on_policy_runner import OnPolicyRunner\n")
    (tmp_path / "rsl_rl" / "runners" / "on_policy_runner.py").write_text(
        "from rsl_rl.algorithms import PPO\n"
        "class OnPolicyRunner:\n"
        "    def __init__(self, env, cfg):\n        self.env = env\n        self.alg = PPO()\n"
        "    def get_inference_policy(self, device=None):\n        return self.alg.act\n"
    )
    script = tmp_path / "train.py"
    script.write_text(
        "from rsl_rl.runners import OnPolicyRunner\n"
        "from rsl_rl.algorithms import PPO\n"
        "r = OnPolicyRunner(None, {})\n"
        "print('WRAPPED', sorted(n for n in ('act', 'process_env_step', 'compute_returns', 'update')\n"
        "                        if hasattr(PPO.__dict__[n], '__nvtxsim_phase__')))\n"
        "print('POLICY', hasattr(r.get_inference_policy(), '__nvtxsim_phase__'))\n"
    )
    proc = _run(script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "WRAPPED ['act', 'compute_returns', 'process_env_step', 'update']" in proc.stdout
    assert "POLICY True" in proc.stdout
    plain = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "run", "--no-instrument", str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert "WRAPPED []" in plain.stdout


# --------------------------------------------------------------------------- RL loop levels (issue 17)


def _fake_rsl_rl():
    """An rsl_rl-shaped runner (module names are what instrument_runner goes by) and its learn() loop."""

    class PPO:
        def act(self, obs):
            return obs

        def process_env_step(self, *args):
            pass

        def compute_returns(self, obs):
            pass

        def update(self):
            return {}

    class Env:
        num_envs = 16

        def step(self, actions):
            with __import__("nvtxsim").phase("iteration"):
                return actions

    class OnPolicyRunner:
        def __init__(self):
            self.alg, self.env = PPO(), Env()

        def learn(self, iterations, steps):
            for _ in range(iterations):
                for _ in range(steps):
                    obs = self.env.step(self.alg.act(0))
                    self.alg.process_env_step(obs)
                self.alg.compute_returns(obs)
                self.alg.update()

    PPO.__module__ = "rsl_rl.algorithms.ppo"
    OnPolicyRunner.__module__ = "rsl_rl.runners.on_policy_runner"
    return PPO, OnPolicyRunner


def test_instrument_runner_installs_nothing_while_nothing_records():
    import nvtxsim
    from nvtxsim.isaaclab import instrument_runner

    PPO, Runner = _fake_rsl_rl()
    before = dict(PPO.__dict__)
    nvtxsim.disable()
    try:
        handle = instrument_runner(Runner())
    finally:
        nvtxsim.enable()
    assert handle.idle and dict(PPO.__dict__) == before  # like @phase / instrument(): nothing replaced
    patched = {".".join(p.split(".")[-2:]) for p in handle.patched}  # qualnames of classes made in a function
    assert {"PPO.act", "PPO.process_env_step", "PPO.compute_returns", "PPO.update"} <= patched
    handle.restore()
    assert dict(PPO.__dict__) == before


def test_loop_levels_from_sibling_calls():
    from nvtxsim.isaaclab import instrument_runner, loop

    PPO, Runner = _fake_rsl_rl()
    runner = Runner()
    with RangeRecorder() as rec:
        handle = instrument_runner(runner)
        assert not handle.idle
        runner.learn(2, 3)
        runner.alg.act(0)  # an action outside the loop (play): a step begins, and the next begin ends it
        runner.alg.act(0)
        loop.reset()
    handle.restore()
    spans = rec.spans
    par = parents(spans)
    count = names(spans)
    assert count["learning_iteration"] == 3 and count["rollout"] == 3 and count["step"] == 8
    from nesting import children_count, inside

    assert children_count(spans, par, "learning_iteration", "step")[:2] == [3, 3]
    assert children_count(spans, par, "step", "policy", direct=True) == [1] * 8
    assert inside(spans, par, "iteration", "step") == (6, 6)
    assert inside(spans, par, "process_env_step", "step") == (6, 6)
    assert inside(spans, par, "compute_returns", "rollout") == (0, 2)
    assert inside(spans, par, "policy_update", "learning_iteration") == (2, 2)
    assert rec.payloads == {"learning_iteration": 16, "rollout": 16, "step": 16}  # runner.env.num_envs


def test_map_says_which_calls_begin_and_end_the_loop_levels():
    by_name = {t.dotted: t for t in M.RUNNER_TARGETS}
    assert M.describe(by_name["rsl_rl.algorithms.ppo.PPO.act"]) == "policy; begins step"
    assert (
        M.describe(by_name["rsl_rl.algorithms.ppo.PPO.update"])
        == "policy_update; ends rollout; ends learning_iteration"
    )
    assert M.describe(by_name["skrl.agents.torch.base.Agent.post_interaction"]) == "ends step"  # a hook, no range
    assert M.describe(by_name["rl_games.common.a2c_common.A2CBase.play_steps"]) == "begins rollout; ends rollout"
    assert M.describe(by_name["rl_games.algos_torch.a2c_continuous.A2CAgent.train_actor_critic"]) == "policy_update"
    for lib, methods in M.LOOP_EVENTS.items():  # every loop hook is patched on runner instances too
        assert set(methods) - set(M.TRAINING_LOOPS[lib]) <= set(M.RUNNER_METHODS[lib]), lib
    # The training loops end every level on entry and on exit (an exception inside env.step).
    assert (
        M.describe(by_name["rsl_rl.runners.on_policy_runner.OnPolicyRunner.learn"])
        == "ends every loop level on entry and exit"
    )
    assert all(
        M.LOOP_EVENTS[lib][m] == ((M.END, "learning_iteration"),) * 2
        for lib, ms in M.TRAINING_LOOPS.items()
        for m in ms
    )
