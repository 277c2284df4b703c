"""Interval statistics over seeds, checked against independent computations.

The profile-likelihood intervals are compared with a brute-force grid: the
log-likelihood is written out from its sufficient statistics, maximized over
the nuisance parameter on a dense grid for each mean on a dense grid, and the
interval read off where 2·(ℓmax − ℓprofile) crosses the χ²₁ quantile.
"""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from keras_nalu.evaluation.statistics import (
    solved_at_summary,
    sparsity_error_summary,
    success_rate_interval,
)

CUTOFF_95 = stats.chi2.ppf(0.95, df=1)


def grid_interval(means, profile, cutoff=CUTOFF_95):
    """Where the profile deviance crosses `cutoff`, by linear interpolation."""
    deviance = 2.0 * (profile.max() - profile) - cutoff
    best = int(np.argmax(profile))
    assert 0 < best < len(means) - 1, "the grid must contain the maximum"

    def crossing(indices):
        for previous, current in zip(indices[:-1], indices[1:]):
            if deviance[current] > 0:
                weight = -deviance[previous] / (deviance[current] - deviance[previous])
                return means[previous] + weight * (means[current] - means[previous])
        raise AssertionError("the grid does not reach the cutoff")

    return crossing(np.arange(best, -1, -1)), crossing(np.arange(best, len(means)))


def gamma_profile(values, log_means, log_shapes):
    """Profile log-likelihood of the gamma mean, shape maximized on a grid."""
    n, total, total_log = values.size, values.sum(), np.log(values).sum()
    mean = np.exp(log_means)[:, None]
    shape = np.exp(log_shapes)[None, :]
    log_likelihood = (
        n * (shape * np.log(shape) - shape * np.log(mean) - special.gammaln(shape))
        + (shape - 1.0) * total_log
        - shape * total / mean
    )
    return log_likelihood.max(axis=1)


def beta_profile(unit, means, log_concentrations):
    """Profile log-likelihood of the beta mean, concentration on a grid."""
    n = unit.size
    total_log, total_log_complement = np.log(unit).sum(), np.log1p(-unit).sum()
    alpha = means[:, None] * np.exp(log_concentrations)[None, :]
    beta = (1.0 - means[:, None]) * np.exp(log_concentrations)[None, :]
    log_likelihood = (
        (alpha - 1.0) * total_log
        + (beta - 1.0) * total_log_complement
        - n * special.betaln(alpha, beta)
    )
    return log_likelihood.max(axis=1)


# --- success rate ----------------------------------------------------------


@pytest.mark.parametrize(
    "successes, trials, expected",
    [(98, 100, (0.98, 0.930, 0.994)), (100, 100, (1.0, 0.963, 1.0))],
)
def test_wilson_interval_matches_the_paper(successes, trials, expected):
    rate, lower, upper = success_rate_interval(successes, trials)
    assert (round(rate, 3), round(lower, 3), round(upper, 3)) == expected


def test_wilson_interval_edges_and_confidence():
    assert success_rate_interval(0, 10)[:2] == (0.0, 0.0)
    assert success_rate_interval(10, 10)[2] == 1.0
    assert all(math.isnan(v) for v in success_rate_interval(0, 0))
    _, lower_95, upper_95 = success_rate_interval(50, 100)
    _, lower_99, upper_99 = success_rate_interval(50, 100, confidence=0.99)
    assert lower_99 < lower_95 < 0.5 < upper_95 < upper_99


@pytest.mark.parametrize(
    "successes, trials, confidence", [(11, 10, 0.95), (-1, 10, 0.95), (5, 10, 1.0)]
)
def test_wilson_interval_rejects_bad_arguments(successes, trials, confidence):
    with pytest.raises(ValueError):
        success_rate_interval(successes, trials, confidence)


# --- solved at: gamma ------------------------------------------------------


@pytest.mark.parametrize("shape, size", [(2.5, 40), (0.8, 12), (20.0, 100)])
def test_gamma_interval_matches_brute_force_profile(shape, size):
    rng = np.random.default_rng(size)
    values = 1000.0 * np.ceil(rng.gamma(shape, 4e5 / shape, size=size) / 1000.0)
    summary = solved_at_summary(values)

    fitted_shape, _, fitted_scale = stats.gamma.fit(values, floc=0)
    assert summary["mean"] == pytest.approx(fitted_shape * fitted_scale, rel=1e-9)
    assert summary["mean"] == pytest.approx(values.mean(), rel=1e-6)
    assert summary["median"] == np.median(values)
    assert summary["n"] == size

    log_means = np.log(values.mean()) + np.linspace(-1.2, 1.5, 1351)
    log_shapes = np.log(fitted_shape) + np.linspace(-3.0, 3.0, 601)
    lower, upper = grid_interval(
        log_means, gamma_profile(values, log_means, log_shapes)
    )
    assert summary["mean_lower"] == pytest.approx(math.exp(lower), rel=0.01)
    assert summary["mean_upper"] == pytest.approx(math.exp(upper), rel=0.01)


def test_gamma_interval_widens_with_confidence_and_shrinks_with_data():
    rng = np.random.default_rng(0)
    values = rng.gamma(2.0, 5e5, size=400)
    small = solved_at_summary(values[:20])
    wide = solved_at_summary(values[:20], confidence=0.99)
    large = solved_at_summary(values)
    assert wide["mean_lower"] < small["mean_lower"] < small["mean"]
    assert small["mean"] < small["mean_upper"] < wide["mean_upper"]
    width = small["mean_upper"] - small["mean_lower"]
    assert large["mean_upper"] - large["mean_lower"] < width / 2


def test_solved_at_degenerate_inputs():
    empty = solved_at_summary([])
    assert empty["n"] == 0
    assert all(math.isnan(empty[key]) for key in empty if key != "n")

    one = solved_at_summary([3000])
    assert (one["median"], one["mean"], one["n"]) == (3000.0, 3000.0, 1)
    assert math.isnan(one["mean_lower"]) and math.isnan(one["mean_upper"])

    equal = solved_at_summary([5000, 5000, 5000])
    assert equal["mean"] == equal["mean_lower"] == equal["mean_upper"] == 5000.0


def test_solved_at_drops_missing_values():
    with_missing = pd.Series([1000, None, 3000, 2000], dtype="Int64")
    without = solved_at_summary([1000, 3000, 2000])
    assert solved_at_summary(with_missing) == without
    assert solved_at_summary([1000, np.nan, 3000, 2000]) == without


@pytest.mark.parametrize("steps", [[-5, 1000], [1000, np.inf]])
def test_solved_at_rejects_steps_outside_the_support(steps):
    with pytest.raises(ValueError, match="solved_at_summary"):
        solved_at_summary(steps)


def test_solved_at_step_zero_counts_as_one_in_the_fit():
    with_zero = solved_at_summary([0, 1000, 2000])
    with_one = solved_at_summary([1, 1000, 2000])
    assert with_zero["median"] == 1000.0
    assert with_zero["mean"] == with_one["mean"]
    assert with_zero["mean_lower"] == with_one["mean_lower"]


# --- sparsity error: beta --------------------------------------------------


@pytest.mark.parametrize(
    "alpha, beta, size", [(1.5, 4000.0, 40), (2.0, 5.0, 25), (0.7, 1.2, 60)]
)
def test_beta_interval_matches_brute_force_profile(alpha, beta, size):
    rng = np.random.default_rng(size)
    errors = 0.5 * rng.beta(alpha, beta, size=size)
    summary = sparsity_error_summary(errors)

    fitted_alpha, fitted_beta, _, _ = stats.beta.fit(2 * errors, floc=0, fscale=1)
    expected_mean = 0.5 * fitted_alpha / (fitted_alpha + fitted_beta)
    assert summary["mean"] == pytest.approx(expected_mean, rel=1e-6)
    assert summary["n"] == size

    unit_mean = 2 * expected_mean
    logits = special.logit(unit_mean) + np.linspace(-1.0, 1.0, 1001)
    log_concentrations = np.log(fitted_alpha + fitted_beta) + np.linspace(-3, 3, 601)
    lower, upper = grid_interval(
        logits, beta_profile(2 * errors, special.expit(logits), log_concentrations)
    )
    assert summary["lower"] == pytest.approx(0.5 * special.expit(lower), rel=0.01)
    assert summary["upper"] == pytest.approx(0.5 * special.expit(upper), rel=0.01)


def test_sparsity_error_accepts_the_edges_of_its_range():
    summary = sparsity_error_summary([0.0, 0.5, 0.1, 0.2, 0.0])
    assert summary["n"] == 5
    assert 0.0 <= summary["lower"] < summary["mean"] < summary["upper"] <= 0.5
    assert sparsity_error_summary([0.0, 0.0])["upper"] == 0.0


def test_sparsity_error_degenerate_inputs():
    empty = sparsity_error_summary([np.nan])
    assert empty["n"] == 0 and math.isnan(empty["mean"])
    one = sparsity_error_summary([0.01])
    assert one["mean"] == 0.01 and math.isnan(one["lower"])


@pytest.mark.parametrize("errors", [[-0.1, 0.1], [0.6, 0.1]])
def test_sparsity_error_rejects_values_outside_its_range(errors):
    with pytest.raises(ValueError, match=r"\[0, 0.5\]"):
        sparsity_error_summary(errors)


def test_confidence_must_be_a_probability():
    with pytest.raises(ValueError, match="confidence"):
        solved_at_summary([1000, 2000], confidence=95)
    with pytest.raises(ValueError, match="confidence"):
        sparsity_error_summary([0.1, 0.2], confidence=0.0)


def test_beta_fit_falls_back_to_direct_maximization(monkeypatch):
    errors = 0.5 * np.random.default_rng(3).beta(2.0, 30.0, size=30)
    expected = sparsity_error_summary(errors)

    def failing_fit(*args, **kwargs):
        raise stats.FitError("solver failed")

    monkeypatch.setattr(stats.beta, "fit", failing_fit)
    fallback = sparsity_error_summary(errors)
    for key in ("mean", "lower", "upper"):
        assert fallback[key] == pytest.approx(expected[key], rel=1e-3), key
