"""Training reads the current λ, weights and clamps on every backend.

The scenarios of tests/_parity.py run here and, in a fresh process, under the
other backend (JAX when this run is TensorFlow's, TensorFlow otherwise), from
the same hand-set weights, data and order: the results must agree to float
rounding. Under JAX the compiled train step keeps the variables inside its
loop, so a λ, a clamp or a re-drawn weight the step did not see would show up
here as a difference (the λ schedule did, before the units listed their
regularizers' strengths among their variables).
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests import _parity
from tests.backend import BACKEND

ROOT = Path(__file__).resolve().parents[1]
OTHER = "jax" if BACKEND == "tensorflow" else "tensorflow"
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


@pytest.fixture(scope="module")
def here():
    return _parity.run_all()["results"]


@pytest.fixture(scope="module")
def there(tmp_path_factory):
    # both backends are test dependencies (pyproject's test extra)
    assert importlib.util.find_spec(OTHER) is not None, f"{OTHER} is not installed"
    out = tmp_path_factory.mktemp("parity") / f"{OTHER}.json"
    completed = subprocess.run(
        [sys.executable, "-m", "tests._parity", str(out)],
        cwd=ROOT,
        env={**os.environ, "KERAS_BACKEND": OTHER, "TF_CPP_MIN_LOG_LEVEL": "3"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    report = json.loads(out.read_text())
    assert report["backend"] == OTHER
    return report["results"]


def result(results, scenario):
    outcome = results[scenario]
    assert "error" not in outcome, outcome.get("error")
    return outcome


def flat(weights):
    return np.concatenate([np.ravel(w) for w in weights])


def assert_same_fit(first, second):
    for a, b in zip(first["weights"], second["weights"]):
        np.testing.assert_allclose(a, b, **TOLERANCE)
    np.testing.assert_allclose(first["loss"], second["loss"], **TOLERANCE)


@pytest.mark.parametrize(
    "scenario",
    [
        "schedule",
        "schedule_blocks_of_4",
        "no_schedule",
        "recurrent_schedule",
        "reinitialization",
    ],
)
def test_fit_matches_the_other_backend(here, there, scenario):
    assert_same_fit(result(here, scenario), result(there, scenario))


def test_the_schedule_changes_the_fit(here):
    # λ ramps to 1 over steps 10 → 20 of 40: without the callback it stays 0.
    scheduled = flat(result(here, "schedule")["weights"])
    unscheduled = flat(result(here, "no_schedule")["weights"])
    assert np.abs(scheduled - unscheduled).max() > 0.1


def test_lambda_is_held_over_each_execution_block(here, there):
    # With 4 steps per execution the callback sets λ every 4 steps (λ(8),
    # λ(12), ...): another fit, the same one on both backends.
    for results in (here, there):
        every_step = flat(result(results, "schedule")["weights"])
        blocks = flat(result(results, "schedule_blocks_of_4")["weights"])
        assert np.abs(every_step - blocks).max() > 1e-3


def test_clamps_hold_the_weights_on_their_bounds(here, there):
    # The NMU's weights are pushed past 1 and put back on it after each step.
    for results in (here, there):
        nau, nmu = result(results, "schedule")["weights"]
        np.testing.assert_array_equal(nmu, [[1.0], [1.0]])
        assert np.abs(nau).max() <= 1.0


def test_reinitialization_is_seen_by_the_next_steps(here, there):
    for results in (here, there):
        outcome = result(results, "reinitialization")
        # Frozen weights stall the loss; every 2 epochs it re-draws them.
        assert outcome["reinitializations"] == [0, 1, 1, 2]
        for weights in outcome["weights"]:
            np.testing.assert_array_equal(
                weights, np.full_like(weights, np.float32(0.3))
            )
        first, _, third, _ = outcome["loss"]
        assert abs(first - third) > 0.1  # epoch 3 trains on the new weights


def test_success_criterion_measures_the_current_weights(here, there):
    ours = result(here, "success_criterion")["evaluations"]
    theirs = result(there, "success_criterion")["evaluations"]
    assert [step for step, _, _ in ours] == [0, 3, 6, 9, 12]
    np.testing.assert_allclose(ours, theirs, **TOLERANCE)
    interpolation = [mse for _, mse, _ in ours]
    assert len(set(interpolation)) == len(interpolation)  # the model moved
