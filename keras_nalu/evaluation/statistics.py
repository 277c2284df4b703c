"""Confidence intervals over seeds: success rate, solved-at step, sparsity error.

Madsen & Johansen (2020), §4.1.1 summarizes many seeds of one configuration by three
numbers, each with a 95 % interval:

- the success rate, with a Wilson (binomial) interval;
- the first step that reached success, through a gamma distribution fitted by
  maximum likelihood, with a profile-likelihood interval for its mean;
- the sparsity error, through a beta distribution on [0, 0.5] fitted by maximum
  likelihood, with a profile-likelihood interval for its mean.

The last two enter only the seeds that solved the task; the caller selects them.

Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §4.1.1 and
Table 2.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, special, stats
from statsmodels.stats.proportion import proportion_confint

# Errors 0 and 0.5 are outside the open support of the beta distribution; they
# are moved inside by this amount on the [0, 1] scale (1e-12 on the error
# scale is 5e-13), far below any sparsity error a float32 weight can show.
_OPEN_INTERVAL_MARGIN = 1e-12

# The profile search walks away from the estimate in steps that double from
# _INITIAL_STEP up to _SEARCH_LIMIT on the unconstrained scale (log of the mean
# for the gamma, logit for the beta). A bound not reached by then is the edge
# of the parameter space: 0 or infinity for the gamma, 0 or 0.5 for the beta.
_INITIAL_STEP = 0.01
_SEARCH_LIMIT = 50.0
# The nuisance parameter (log shape, log concentration) is profiled within this
# distance of its estimate.
_NUISANCE_RANGE = 25.0
# Stand-in for an infinite deviance, so root finders see a finite number.
_HUGE_DEVIANCE = 1e12


def success_rate_interval(
    successes: int, trials: int, confidence: float = 0.95
) -> tuple[float, float, float]:
    """Success rate with a Wilson score interval.

    rate = successes / trials; the interval inverts the binomial score test
    (Wilson, 1927), so it stays inside [0, 1] and does not collapse at 0 % or
    100 %.

    Args:
        successes: number of seeds that solved the task, `0 <= successes <= trials`.
        trials: number of seeds, `>= 0`. With 0 trials everything is NaN.
        confidence: coverage of the interval, in (0, 1).

    Returns:
        `(rate, lower, upper)` as floats in [0, 1].

    Example:

    >>> rate, lower, upper = success_rate_interval(98, 100)
    >>> round(rate, 2), round(lower, 3), round(upper, 3)
    (0.98, 0.93, 0.994)

    Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §4.1.1.
    """
    _check_confidence(confidence)
    successes, trials = int(successes), int(trials)
    if trials < 0 or not 0 <= successes <= max(trials, 0):
        raise ValueError(
            "success_rate_interval expects 0 <= successes <= trials. "
            f"Received: successes={successes}, trials={trials}"
        )
    if trials == 0:
        return math.nan, math.nan, math.nan
    lower, upper = proportion_confint(
        successes, trials, alpha=1.0 - confidence, method="wilson"
    )
    # statsmodels can return 1 - 1e-16 for 100 %; the interval's edge is exact.
    lower = 0.0 if successes == 0 else float(lower)
    upper = 1.0 if successes == trials else float(upper)
    return successes / trials, lower, upper


def solved_at_summary(steps: ArrayLike, confidence: float = 0.95) -> dict[str, float]:
    """Median and gamma-MLE mean, with a profile-likelihood interval, of steps.

    A gamma distribution (location 0) is fitted by maximum likelihood; its mean
    shape·scale is the reported mean. The interval is every mean μ whose
    profile log-likelihood ℓp(μ) = max_k ℓ(μ, k) (shape k, scale μ/k) satisfies

        2·(ℓmax − ℓp(μ)) <= χ²₁(confidence).

    NaN entries (runs that never solved the task) are dropped. A run solved
    at step 0 (already solved when training began, e.g. a hand-set model) is
    counted as step 1 in the fit, the gamma's support being > 0; the median
    keeps the 0. With one value
    the interval is NaN; with several equal values the fit is degenerate (the
    likelihood grows without bound as the shape grows) and the interval is
    that value.

    Args:
        steps: the "solved at" steps of the seeds that solved the task; values
            must be >= 0.
        confidence: coverage of the interval, in (0, 1).

    Returns:
        dict with `median` (sample median), `mean` (MLE), `mean_lower`,
        `mean_upper` and `n` (number of values used). All NaN when empty.

    Example:

    >>> summary = solved_at_summary([1000, 2000, 2000, 3000, 5000])
    >>> summary["median"], round(summary["mean"]), summary["n"]
    (2000.0, 2600, 5)
    >>> bool(summary["mean_lower"] < summary["mean"] < summary["mean_upper"])
    True

    Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §4.1.1.
    """
    _check_confidence(confidence)
    values = _finite_values(steps, "solved_at_summary", "steps")
    if np.any(values < 0):
        raise ValueError(
            "solved_at_summary expects steps >= 0. "
            f"Received: {values[values < 0].tolist()}"
        )
    n = values.size
    if n == 0:
        return _solved_at_result(math.nan, math.nan, math.nan, math.nan, 0)
    median = float(np.median(values))
    values = np.maximum(values, 1.0)
    if _is_degenerate(values):
        bound = math.nan if n == 1 else float(values[0])
        return _solved_at_result(median, float(values.mean()), bound, bound, n)

    def log_likelihood(log_mean: float, log_shape: float) -> float:
        shape = math.exp(log_shape)
        return float(
            np.sum(stats.gamma.logpdf(values, shape, scale=math.exp(log_mean) / shape))
        )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        shape, _, scale = stats.gamma.fit(values, floc=0)
    log_mean_hat = math.log(shape * scale)
    lower, upper = _profile_likelihood_interval(
        log_likelihood, log_mean_hat, math.log(shape), confidence
    )
    return _solved_at_result(median, shape * scale, math.exp(lower), math.exp(upper), n)


def sparsity_error_summary(
    errors: ArrayLike, confidence: float = 0.95
) -> dict[str, float]:
    """Beta-MLE mean sparsity error with a profile-likelihood interval.

    The sparsity error lies in [0, 0.5] (Madsen & Johansen 2020, eq. 17), so 2·error is
    modelled as Beta(α, β) fitted by maximum likelihood, and the mean error is
    0.5·α/(α+β). The interval is every mean m whose profile log-likelihood
    ℓp(m) = max_κ ℓ(α = 2m·κ, β = (1 − 2m)·κ) satisfies
    2·(ℓmax − ℓp(m)) <= χ²₁(confidence).

    Errors of exactly 0 or 0.5 (possible with clamped weights) are outside the
    beta's open support; they are moved inside by 1e-12 on the [0, 1] scale
    before fitting. NaN entries are dropped. With one value the interval is
    NaN; with several equal values it is that value.

    Args:
        errors: sparsity errors of the seeds that solved the task, in [0, 0.5].
        confidence: coverage of the interval, in (0, 1).

    Returns:
        dict with `mean` (MLE), `lower`, `upper` and `n` (number of values
        used). All NaN when empty.

    Example:

    >>> summary = sparsity_error_summary([0.01, 0.02, 0.015, 0.03, 0.005])
    >>> round(summary["mean"], 3), summary["n"]
    (0.016, 5)
    >>> bool(summary["lower"] < summary["mean"] < summary["upper"])
    True

    Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §4.1.1.
    """
    _check_confidence(confidence)
    values = _finite_values(errors, "sparsity_error_summary", "errors")
    if np.any((values < 0) | (values > 0.5)):
        outside = values[(values < 0) | (values > 0.5)]
        raise ValueError(
            "sparsity_error_summary expects errors in [0, 0.5]. "
            f"Received: {outside.tolist()}"
        )
    n = values.size
    if n == 0:
        return _sparsity_result(math.nan, math.nan, math.nan, 0)
    if _is_degenerate(values):
        bound = math.nan if n == 1 else float(values[0])
        return _sparsity_result(float(values.mean()), bound, bound, n)
    unit = np.clip(2.0 * values, _OPEN_INTERVAL_MARGIN, 1.0 - _OPEN_INTERVAL_MARGIN)

    def log_likelihood(logit_mean: float, log_concentration: float) -> float:
        concentration = math.exp(log_concentration)
        alpha = special.expit(logit_mean) * concentration
        beta = special.expit(-logit_mean) * concentration
        return float(np.sum(stats.beta.logpdf(unit, alpha, beta)))

    alpha, beta = _fit_beta(unit, log_likelihood)
    lower, upper = _profile_likelihood_interval(
        log_likelihood, math.log(alpha / beta), math.log(alpha + beta), confidence
    )
    return _sparsity_result(
        0.5 * alpha / (alpha + beta),
        0.5 * float(special.expit(lower)),
        0.5 * float(special.expit(upper)),
        n,
    )


def _profile_likelihood_interval(
    log_likelihood: Callable[[float, float], float],
    mean_hat: float,
    nuisance_hat: float,
    confidence: float,
) -> tuple[float, float]:
    """Profile-likelihood interval for the first of two parameters.

    Both parameters are on unconstrained scales: `log_likelihood(mean, nuisance)`
    takes, e.g., (log mean, log shape). The interval is where
    2·(ℓmax − max_nuisance ℓ(mean, ·)) stays below the χ²₁ quantile; each end is
    bracketed by doubling steps away from the estimate and then found with
    Brent's method. Returns (lower, upper) on the same scale, ∓inf when the
    deviance never reaches the cutoff within `_SEARCH_LIMIT`.
    """
    cutoff = float(stats.chi2.ppf(confidence, df=1))

    def negative(mean: float, nuisance: float) -> float:
        with np.errstate(all="ignore"):
            value = log_likelihood(mean, nuisance)
        return -value if math.isfinite(value) else _HUGE_DEVIANCE

    def profile(mean: float) -> float:
        result = optimize.minimize_scalar(
            lambda nuisance: negative(mean, nuisance),
            bounds=(nuisance_hat - _NUISANCE_RANGE, nuisance_hat + _NUISANCE_RANGE),
            method="bounded",
            options={"xatol": 1e-7},
        )
        return -float(result.fun)

    log_likelihood_max = max(-negative(mean_hat, nuisance_hat), profile(mean_hat))

    def excess_deviance(mean: float) -> float:
        return min(2.0 * (log_likelihood_max - profile(mean)), _HUGE_DEVIANCE) - cutoff

    def crossing(direction: float) -> float:
        inner, step = mean_hat, _INITIAL_STEP
        while step <= _SEARCH_LIMIT:
            outer = mean_hat + direction * step
            if excess_deviance(outer) > 0:
                low, high = sorted((inner, outer))
                return optimize.brentq(excess_deviance, low, high, xtol=1e-10)
            inner, step = outer, 2.0 * step
        return direction * math.inf

    return crossing(-1.0), crossing(1.0)


def _fit_beta(unit: np.ndarray, log_likelihood) -> tuple[float, float]:
    """(α, β) by maximum likelihood on [0, 1]: SciPy's fit, or direct search.

    SciPy solves the likelihood equations and reports failure on very skewed
    samples; the fallback maximizes the same likelihood from the moment
    estimates.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            alpha, beta, _, _ = stats.beta.fit(unit, floc=0, fscale=1)
        if np.isfinite([alpha, beta]).all() and alpha > 0 and beta > 0:
            return float(alpha), float(beta)
    except (stats.FitError, RuntimeError, ValueError):
        pass
    mean, variance = unit.mean(), unit.var()
    concentration = max(mean * (1.0 - mean) / variance - 1.0, 1e-3)
    start = [math.log(mean / (1.0 - mean)), math.log(concentration)]
    with np.errstate(all="ignore"):
        result = optimize.minimize(
            lambda p: -log_likelihood(p[0], p[1]), start, method="Nelder-Mead"
        )
    logit_mean, log_concentration = result.x
    concentration = math.exp(log_concentration)
    return (
        float(special.expit(logit_mean) * concentration),
        float(special.expit(-logit_mean) * concentration),
    )


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(
            f"confidence must be in (0, 1). Received: confidence={confidence!r}"
        )


def _finite_values(values, owner: str, name: str) -> np.ndarray:
    """A flat float array without NaN; infinite values are an error."""
    if hasattr(values, "to_numpy"):
        array = values.to_numpy(dtype=float, na_value=np.nan)
    else:
        array = np.asarray(values, dtype=float)
    array = array.ravel()
    array = array[~np.isnan(array)]
    if np.isinf(array).any():
        raise ValueError(f"{owner} expects finite {name}. Received: inf")
    return array


def _is_degenerate(values: np.ndarray) -> bool:
    """True when the values have no spread to fit a two-parameter law to."""
    return bool(np.ptp(values) <= 1e-9 * np.max(np.abs(values)))


def _solved_at_result(median, mean, lower, upper, n) -> dict[str, float]:
    return {
        "median": float(median),
        "mean": float(mean),
        "mean_lower": float(lower),
        "mean_upper": float(upper),
        "n": int(n),
    }


def _sparsity_result(mean, lower, upper, n) -> dict[str, float]:
    return {"mean": float(mean), "lower": float(lower), "upper": float(upper), "n": n}
