"""The loop levels of the REAL rsl_rl 5.x, skrl 2.x and rl_games 1.6 at the edges (tests only).

    python rl_edges.py {rsl_rl,skrl,rl_games} {repeat,raise,disable,restore}

* ``repeat``: train, then call the library's training loop again (``learn`` / ``train``);
* ``raise``: the env's step raises on the 6th call; training is started again afterwards;
* ``disable``: ``nvtxsim.disable()`` before ``instrument_runner``: nothing may be replaced;
* ``restore``: after ``handle.restore()`` no library method is a wrapper any more.

Prints one ``RESULT {json}`` line: the loop ranges recorded in-process (``recorder.RangeRecorder``),
the env steps taken, which levels were open after the exception, the wrapped methods.
"""

from __future__ import annotations

import collections
import json
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "gpu"))

import rl_loops  # noqa: E402
from recorder import RangeRecorder  # noqa: E402

import nvtxsim  # noqa: E402
import nvtxsim.isaaclab as nil  # noqa: E402
from nvtxsim.isaaclab import loop  # noqa: E402

STEPS, ITERATIONS, ENVS, FAIL_AT = 4, 3, 8, 6
LEVELS = ("step", "rollout", "learning_iteration", "policy_update", "iteration")


class EnvFailure(Exception):
    pass


captured: dict = {}


def _instrument(obj, **kw):
    captured["obj"] = obj
    captured["handle"] = nil.instrument_runner(obj, **kw)
    return captured["handle"]


rl_loops.nil = types.SimpleNamespace(instrument_runner=_instrument)  # the trainer/agent, to train again


def failing(step, counter: dict):
    """``step`` that raises on its FAIL_AT-th call (counted in ``counter``)."""

    def wrapped(actions):
        counter["calls"] += 1
        if counter["calls"] == FAIL_AT:
            raise EnvFailure("env.step failed")
        return step(actions)

    return wrapped


def train(lib: str, core: rl_loops.TinyVecEnv, counter: dict | None = None) -> None:
    """One training run of ``lib``; rsl_rl trains ``scripts/gpu/rsl_rl_4096.py``'s task."""
    if lib == "skrl":
        rl_loops.train_skrl(core, STEPS, ITERATIONS)
    elif lib == "rl_games":
        rl_loops.train_rl_games(core, STEPS, ITERATIONS)
    else:
        import rsl_rl_4096 as task

        task._tensorboard_stand_in()
        from rsl_rl.runners import OnPolicyRunner

        env = task.PointMassTask(ENVS, "cpu")
        if counter is not None:
            env.step = failing(env.step, counter)
        runner = OnPolicyRunner(env, task.runner_cfg(STEPS), log_dir=None, device="cpu")
        _instrument(runner)
        runner.learn(num_learning_iterations=ITERATIONS)


def wrapped_methods() -> list[str]:
    """Methods of the loaded RL-library classes that are nvtxsim wrappers."""
    mods = [
        m
        for name, m in list(sys.modules.items())
        if m is not None and name.split(".")[0] in ("rsl_rl", "skrl", "rl_games")
    ]
    classes = {v for m in mods for v in list(vars(m).values()) if isinstance(v, type)}
    return sorted(
        {
            f"{k.__qualname__}.{n}"
            for c in classes
            for k in c.__mro__
            for n, v in vars(k).items()
            if hasattr(v, "__nvtxsim_phase__")
        }
    )


def loop_result(spans: list, core: rl_loops.TinyVecEnv) -> dict:
    count = collections.Counter(s.name for s in spans)
    iterations = [s for s in spans if s.name == "learning_iteration"]
    steps = [s for s in spans if s.name == "step"]
    return {
        "counts": {k: count.get(k, 0) for k in LEVELS},
        "env_steps": core.steps,
        "steps_per_iteration": [sum(1 for t in steps if i.start <= t.start and t.end <= i.end) for i in iterations],
    }


def main() -> int:
    lib, mode = sys.argv[1], sys.argv[2]
    core = rl_loops.TinyVecEnv(ENVS)
    out: dict = {}
    if mode == "disable":
        nvtxsim.disable()
        train(lib, core)
        out = {"idle": captured["handle"].idle, "wrapped": wrapped_methods()}
    elif mode == "restore":
        with RangeRecorder():
            train(lib, core)
            before = wrapped_methods()
            captured["handle"].restore()
        out = {"wrapped_before": before, "wrapped": wrapped_methods()}
    else:
        counter = {"calls": 0}
        if mode == "raise" and lib != "rsl_rl":
            core.step = failing(core.step, counter)
        with RangeRecorder() as rec:
            try:
                train(lib, core, counter if mode == "raise" else None)
            except EnvFailure:
                out["open_after_exception"] = sorted(loop._open())
            if lib == "rsl_rl" and mode == "raise":
                train(lib, core)  # rsl_rl cannot resume a failed learn() (its rollout buffer is full): a new runner
            else:
                captured["obj"].train() if lib != "rsl_rl" else captured["obj"].learn(
                    num_learning_iterations=ITERATIONS
                )
            out["open_at_end"] = sorted(loop._open())
        out.update(loop_result(rec.spans, core))
        out["env_calls"] = counter["calls"]
    print("RESULT " + json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
