"""scaling's fits and classes as values at their edges (thresholds inclusive or not, runs at zero,
two runs, the error floor), against numbers worked out by hand (scripts/mutate.py, reports/mutation.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nvtxsim.analysis.fits import (
    CONSTANT_GROWTH,
    MIN_REL_SPREAD,
    SUBLINEAR_BELOW,
    SUPERLINEAR_ABOVE,
    PowerFit,
    _weights,
    centre,
    class_of_exponent,
    classify,
    fit_metric,
)


@pytest.mark.parametrize(
    "k,cls",
    [
        (0.0, "constant"),
        (-0.5, "constant"),
        (0.01, "sublinear"),
        (SUBLINEAR_BELOW - 1e-9, "sublinear"),
        (SUBLINEAR_BELOW, "linear"),
        (1.0, "linear"),
        (SUPERLINEAR_ABOVE, "linear"),
        (SUPERLINEAR_ABOVE + 1e-9, "superlinear"),
        (2.0, "superlinear"),
    ],
)
def test_class_of_exponent_at_its_edges(k, cls):
    assert class_of_exponent(k) == cls


def test_classify_growth_first_then_exponent():
    assert classify(PowerFit(floor=1.0, coef=0.0, exponent=2.0, growth=5.0)) == "constant"  # no growth term
    assert classify(PowerFit(1.0, 1.0, 2.0, CONSTANT_GROWTH - 1e-9)) == "constant"  # too little growth to matter
    assert classify(PowerFit(1.0, 1.0, 2.0, CONSTANT_GROWTH)) == "superlinear"
    assert classify(PowerFit(1.0, 1.0, 1.0, 3.0)) == "linear"


def test_centre_is_the_median_and_the_error_of_the_log_spread():
    c = centre(np.array([1.0, math.e, math.e**2, 50.0, 1.0]))
    assert c.value == math.e
    logs = np.log([1.0, math.e, math.e**2, 50.0, 1.0])
    assert c.rel == pytest.approx(np.std(logs, ddof=1) / math.sqrt(5))
    assert centre(np.array([7.0, 7.0, 7.0])) == type(c)(7.0, MIN_REL_SPREAD)  # exact repeats: the floor
    assert centre(np.array([5.0])) == type(c)(5.0, MIN_REL_SPREAD)  # one sample: no spread to measure
    assert centre(np.array([0.0, 0.0, 3.0])) == type(c)(0.0, MIN_REL_SPREAD)  # median 0
    assert centre(np.array([0.0, 0.0, 0.0, 3.0, 30.0])) == type(c)(0.0, MIN_REL_SPREAD)  # median 0, spread or not
    assert centre(np.array([])) == type(c)(0.0, MIN_REL_SPREAD)


def test_weights_are_one_over_the_absolute_error_and_a_zero_run_counts_as_small():
    w = _weights(np.array([0.0, 10.0, 20.0]), np.array([0.1, 0.1, 0.001]))
    # the run at 0 weighs as one at 1e-3 of the largest (0.02); a relative error is never below 1 %
    assert w.tolist() == pytest.approx([1 / (0.1 * 0.02), 1 / (0.1 * 10.0), 1 / (MIN_REL_SPREAD * 20.0)])
    assert _weights(np.array([0.0, 0.0]), np.array([0.1, 0.1])).tolist() == [0.0, 0.0]  # nothing to scale by


def test_fit_metric_with_two_runs_has_a_slope_and_no_class():
    values = np.array([100.0, 400.0])
    mf = fit_metric("gpu", values, [np.full(5, 10.0), np.full(5, 40.0)], None)
    assert mf.slope == pytest.approx(1.0) and mf.cls is None and mf.power is None


def test_fit_metric_with_runs_at_zero_and_none_above():
    values = np.array([100.0, 200.0, 400.0, 800.0])
    mf = fit_metric("gpu", values, [np.zeros(3), np.full(3, 20.0), np.full(3, 40.0), np.full(3, 80.0)], None)
    assert mf.note == "1 run(s) at 0 left out of the log-log slope" and mf.slope == pytest.approx(1.0)
    assert mf.cls == "superlinear"  # 0 at 100 then 20, 40, 80: faster than N through the origin
    none = fit_metric("gpu", values, [np.zeros(3)] * 4, None)
    assert none.cls == "none" and none.exponent is None and none.note == "no GPU work"
