
import sys
import nvtxsim

# Fixed work per phase (a host that is slower or shared makes all of it slower together); one phase gets
# SHARE x the iteration's work more of the same work per iteration. Units: calls of spin() per ms,
# calibrated once by the benchmark (argv[3]), so every run does the same work whatever the host's speed.
def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x

share, phase_slowed, per_ms = float(sys.argv[1]), sys.argv[2], float(sys.argv[3])
work = {"sim_step": 1.2, "render": 0.4, "policy": 0.6, "reward": 0.15, "reset": 0.3, "observation": 0.1}
units = {k: int(v * per_ms) for k, v in work.items()}
extra = int(share * sum(units.values()))
ph = {k: nvtxsim.phase(k) for k in ["iteration", *work]}
for i in range(82):
    with ph["iteration"]:
        for k in work:
            with ph[k]:
                spin(units[k] + (extra if k == phase_slowed else 0))
