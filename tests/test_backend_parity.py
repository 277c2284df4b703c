"""Training reads the current λ, weights and clamps on every backend.

The scenarios of tests/_parity.py run under each backend (TensorFlow, JAX,
PyTorch), from the same hand-set weights, data and order: the results must
agree to float rounding. A compiled train step (JAX's, or any backend's with
`jit_compile=True`) takes the model's variables as arguments, so a λ, a clamp
or a re-drawn weight the step did not see would show up here as a difference
(the λ schedule did on JAX, before the units listed their regularizers'
strengths among their variables).

`.keras` files move between the backends too: each backend saves a model of
every unit (tests/_keras_files.py), and each of the other two loads it and
predicts the same to float32 rounding.

Where each part runs (`fill`, once per test run, shared by the test workers):
this process's backend in-process, each other backend in one fresh process
(tests/_other_backend.py) that runs the scenarios, saves its file and reads
the two others' files (`fill` gives the order).
"""

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests import _keras_files, _other_backend, _parity
from tests.backend import BACKEND
from tests.helpers import shared_folder

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ("tensorflow", "jax", "torch")
OTHERS = [name for name in BACKENDS if name != BACKEND]
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
#: Seconds a fresh process may take for its part (each takes well under one
#: minute on a 2-core CPU).
TIMEOUT = 600


@contextlib.contextmanager
def running(backend: str, folder: Path):
    """`python -m tests._other_backend folder` in a fresh process under `backend`.

    Its output goes to `folder/<backend>.log`, its input stays open until
    `finish`; a process still running when the block ends is killed.
    """
    # every backend is a test dependency (pyproject's test extra)
    assert importlib.util.find_spec(backend) is not None, f"{backend} is not installed"
    with open(folder / f"{backend}.log", "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests._other_backend", str(folder)],
            cwd=ROOT,
            env={
                **os.environ,
                "KERAS_BACKEND": backend,
                "TF_CPP_MIN_LOG_LEVEL": "3",
                # one thread per process: PyTorch's second one only spins when
                # the other test worker holds the other core
                "OMP_NUM_THREADS": "1",
            },
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    with process:
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()


def log_tail(folder: Path, backend: str) -> str:
    return (folder / f"{backend}.log").read_text()[-4000:]


def wait_until_waiting(process, backend: str, folder: Path) -> None:
    """Until `backend`'s process has saved its file and read the ones before."""
    marker = _other_backend.waiting_marker(folder, backend)
    deadline = time.monotonic() + TIMEOUT
    while not marker.exists():
        assert process.poll() is None, log_tail(folder, backend)
        assert time.monotonic() < deadline, f"{backend}: not waiting after {TIMEOUT} s"
        time.sleep(0.1)


def finish(process, backend: str, folder: Path) -> None:
    """Ends `backend`'s input (it reads the files saved since) and waits for it."""
    process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0, log_tail(folder, backend)


def fill(folder: Path) -> None:
    """Every backend's parity results and `.keras` files, in this order:

    | process                | does                                             |
    | ---------------------- | ------------------------------------------------ |
    | this one               | scenarios, saves                                 |
    | fresh, 1st other       | scenarios, saves, reads this one's; then waits   |
    | fresh, 2nd other       | scenarios, saves, reads this one's and the 1st's |
    | 1st other, input ended | reads the 2nd's                                  |
    | this one               | reads the two others'                            |

    Two fresh processes in all, one running at a time (the 1st waits, idle,
    while the 2nd runs).
    """
    first, second = OTHERS
    _parity.write(folder)
    _keras_files.save(folder)
    with running(first, folder) as waiting:
        wait_until_waiting(waiting, first, folder)
        with running(second, folder) as process:
            finish(process, second, folder)
        finish(waiting, first, folder)
    _keras_files.load(folder)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return shared_folder(tmp_path_factory, "backends", fill)


def parity_results(folder: Path, backend: str) -> dict:
    report = json.loads(_parity.results_path(folder, backend).read_text())
    assert report["backend"] == backend
    return report["results"]


@pytest.fixture(scope="module")
def here(folder):
    return parity_results(folder, BACKEND)


@pytest.fixture(scope="module", params=OTHERS)
def there(request, folder):
    return parity_results(folder, request.param)


def result(results, scenario):
    outcome = results[scenario]
    assert "error" not in outcome, outcome.get("error")
    return outcome


def both_run(scenarios):
    """`(other backend, scenario)` pairs that this backend and the other run."""
    here_runs = set(_parity.supported(BACKEND))
    return [
        (other, scenario)
        for other in OTHERS
        for scenario in scenarios
        if scenario in here_runs and scenario in _parity.supported(other)
    ]


def flat(weights):
    return np.concatenate([np.ravel(w) for w in weights])


def assert_same_fit(first, second):
    for a, b in zip(first["weights"], second["weights"]):
        np.testing.assert_allclose(a, b, **TOLERANCE)
    np.testing.assert_allclose(first["loss"], second["loss"], **TOLERANCE)


@pytest.mark.parametrize(
    ("there", "scenario"),
    both_run(
        [
            "schedule",
            "schedule_blocks_of_4",
            "schedule_compiled",
            "no_schedule",
            "regularizers",
            "no_regularizers",
            "recurrent_schedule",
            "reinitialization",
        ]
    ),
    indirect=["there"],
)
def test_fit_matches_the_other_backend(here, there, scenario):
    assert_same_fit(result(here, scenario), result(there, scenario))


def test_the_schedule_changes_the_fit(here, there):
    # λ ramps to 1 over steps 10 → 20 of 40: without the callback it stays 0.
    for results in (here, there):
        scheduled = flat(result(results, "schedule")["weights"])
        unscheduled = flat(result(results, "no_schedule")["weights"])
        assert np.abs(scheduled - unscheduled).max() > 0.1


@pytest.mark.parametrize(
    ("there", "scenario"), both_run(["schedule_blocks_of_4"]), indirect=["there"]
)
def test_lambda_is_held_over_each_execution_block(here, there, scenario):
    # With 4 steps per execution the callback sets λ every 4 steps (λ(8),
    # λ(12), ...): another fit, the same one on both backends.
    for results in (here, there):
        every_step = flat(result(results, "schedule")["weights"])
        blocks = flat(result(results, scenario)["weights"])
        assert np.abs(every_step - blocks).max() > 1e-3


def test_every_regularizer_acts_at_its_step(here, there):
    # Weights and losses match the other backend (above); here, that the
    # regularizers were in the fit at all, at the strengths they name.
    for results in (here, there):
        outcome = result(results, "regularizers")
        plain = flat(result(results, "no_regularizers")["weights"])
        assert np.abs(flat(outcome["weights"]) - plain).max() > 0.1
        assert outcome["strengths"] == pytest.approx(
            {
                "Sparsity": 1.0,  # ramped over steps 10 → 20 of 40
                "OutOfBounds": 0.5,  # 0 → 10
                "Saturation": 0.1,  # switched on by the loss gate
                "UnitMagnitude": 0.5,  # 5 → 25
                "L1": 0.1,  # 1e-3, ×10 every 10 steps, capped at 0.1
                "NegativeL2": 0.2,  # 20 → 30
            }
        )
        # The loss gate opens after the first epoch (warmup_epochs=1).
        assert outcome["saturation"] == pytest.approx([0.1] * 4)


def test_snmu_noise_acts_in_training_only(here, there):
    # The backends draw other noise from the same seed: what must agree is
    # when it is drawn and applied.
    for results in (here, there):
        outcome = result(results, "snmu")
        noisy, plain = flat(outcome["weights"]), flat(outcome["plain_weights"])
        assert np.abs(noisy - plain).max() > 0.05  # the noise changed the fit
        assert outcome["draws_in_fit"] == 10  # one draw per training step
        assert outcome["draws_after_inference"] == 10  # predict/evaluate: none
        assert outcome["predict_gap"] == 0.0  # inference is the plain NMU
        assert outcome["evaluate_gap"] == 0.0


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


@pytest.mark.parametrize("saved_by", BACKENDS)
def test_keras_files_move_between_backends(folder, saved_by):
    with np.load(folder / f"{saved_by}.npz") as saved:
        expected = saved["predictions"]
    assert np.all(np.isfinite(expected))
    for read_by in BACKENDS:
        if read_by == saved_by:
            continue
        with np.load(folder / f"{saved_by}-read-by-{read_by}.npz") as read:
            np.testing.assert_allclose(
                read["predictions"], expected, rtol=1e-6, atol=1e-6
            )
            assert int(read["iterations"]) == 6  # the optimizer's state too
            assert int(read["regularizers"]) == 11  # the Piecewise NAUs: 2 of them
