"""Seed capture for the reliability tests: a small RL-shaped loop under nsys 2022.4 (see tests/data/reliability/README.md)."""

import os
import threading
import time

import nvtxsim
from nvtxsim.emit import ranges as emit

policy = nvtxsim.phase("policy")


@nvtxsim.phase("reward")
def reward(i):
    return i * 0.5


def render_worker():
    for i in range(6):
        with nvtxsim.phase("render"):
            with nvtxsim.phase("camera_readout", payload=i):
                time.sleep(0.0002)


t = threading.Thread(target=render_worker)
t.start()
token = emit.start_range("episode", payload=1)
for i in range(10):
    with nvtxsim.phase("iteration"):
        for _ in range(2):
            with nvtxsim.phase("sim_step"):
                time.sleep(0.0001)
        with policy:
            pass
        reward(i)
        nvtxsim.mark("tick", i)
t.join()
ender = threading.Thread(target=emit.end_range, args=(token,))
ender.start()
ender.join()
nvtxsim.range_pop()  # unmatched: refused, recorded as a mark
nvtxsim.range_push("reset")
time.sleep(0.3)  # nsys collects NVTX events periodically: give it the last ones
os._exit(0)  # exits inside "reset": nsys 2022.4 ends it at capture end
