"""benchmarks/overflow.py: Adam's second moment, as Keras and as PyTorch write it."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import overflow  # noqa: E402


def _two_steps(form, gradient, dtype):
    weights = np.full(3, 0.5, dtype)
    m, v = np.zeros_like(weights), np.zeros_like(weights)
    gradient = np.full(3, gradient, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        for step in (1, 2):
            weights, m, v = overflow.adam(form, weights, gradient, m, v, step)
    return weights, v


def test_a_float32_overflow_is_nan_in_keras_form_and_frozen_in_torch_form():
    weights, v = _two_steps("keras", 4e21, np.float32)  # g² > 3.4·10³⁸
    assert np.isnan(weights).all() and np.isnan(v).all()  # inf − inf
    weights, v = _two_steps("torch", 4e21, np.float32)
    assert np.isinf(v).all() and (weights == np.float32(0.5)).all()


def test_in_float64_both_forms_take_the_same_step():
    keras_weights, _ = _two_steps("keras", 4e21, np.float64)
    torch_weights, _ = _two_steps("torch", 4e21, np.float64)
    assert np.all(np.isfinite(keras_weights))
    np.testing.assert_allclose(keras_weights, torch_weights)
    np.testing.assert_allclose(keras_weights, 0.5 - 2 * overflow.LEARNING_RATE)
