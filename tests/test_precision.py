"""Rounds until each headline is as precise as asked: coverage after an adaptive stop, the cap, floors, NaN rounds."""

import functools
import math

import numpy as np
import pytest

from ingestlab import precision
from ingestlab.errors import ConfigError
from ingestlab.precision import Rounds, Target

R = 0.05  # the precision the simulations ask for


def _t3(rng, shape):
    """Round values with symmetric heavy tails: Student t with 3 df about 1, scaled so a fixed 10 rounds reach ±5 %."""
    return 1 + R * math.sqrt(10) / (1.96 * math.sqrt(3)) * rng.standard_t(3, shape)


def _medians(rng, shape, samples=30, outliers=0.05):
    """Each round's value is the median of 30 log-normal samples (σ = 0.6), 5 % of them 10× slower."""
    x = rng.lognormal(0, 0.6, (*shape, samples))
    return np.median(x * np.where(rng.random(x.shape) < outliers, 10.0, 1.0), axis=-1)


@functools.lru_cache
def _medians_moments() -> tuple[float, float]:
    """The mean and standard deviation of a round's median, from 200 000 rounds (mean known to ~3e-4 of ±5 %'s 5e-2)."""
    x = _medians(np.random.default_rng(123), (200_000,))
    return float(x.mean()), float(x.std())


def _scaled_medians(rng, shape):
    """:func:`_medians` spread about their mean so that a fixed 12 rounds reach ±5 %."""
    mean, sd = _medians_moments()
    return mean + (_medians(rng, shape) - mean) * R * math.sqrt(12) * mean / (1.96 * sd)


@pytest.mark.parametrize("draw, truth", [(_t3, lambda: 1.0), (_scaled_medians, lambda: _medians_moments()[0])], ids=["t3", "medians"])
def test_adaptive_stop_covers_the_truth_where_the_naive_rule_undercovers(draw, truth):
    target = Target(R, 600)
    true_value = truth()
    adaptive = precision.simulate(draw, true_value, target, trials=500, seed=1)
    naive = precision.simulate(draw, true_value, Target(R, 600, min_rounds=2), trials=500, seed=1, adaptive=False)
    assert adaptive["stopped"].eq("reached").all() and naive["stopped"].eq("reached").all()
    assert adaptive["covered"].mean() >= 0.93, adaptive["covered"].mean()
    assert naive["covered"].mean() <= 0.92, naive["covered"].mean()
    # the correction is paid in rounds, not by running to the ceiling
    assert adaptive["rounds"].mean() <= 2.5 * naive["rounds"].mean()
    assert ((adaptive["ci_high"] - adaptive["ci_low"]) / 2 <= R * adaptive["estimate"].abs() + 1e-12).all()
