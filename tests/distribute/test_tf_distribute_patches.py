"""`keras_nalu.tf_distribute_patches`: Keras 3.15's `fit` under a strategy.

In this process (one device): both functions are no-ops without the strategy
they are for, idempotent, and fail clearly if Keras' private names go. The
multi-step loop itself is checked here against Keras' on one device. Under a
real MultiWorkerMirroredStrategy (one worker): `_multi_worker_fit_script.py`,
in a fresh process (TensorFlow once crashed deleting such a strategy's
iterator in this one). With two replicas: `_mirrored_script.py` (a fresh
process with two logical CPUs) and the multi-worker cluster, both started by
`conftest.py`, train NAU → NMU with steps_per_execution = 5 and must end
where one device does.
"""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras.src.backend.tensorflow import trainer

from keras_nalu import tf_distribute_patches
from keras_nalu.tf_distribute_patches import (
    enable_multi_worker_fit,
    enable_steps_per_execution,
)
from tests.distribute import _worker
from tests.distribute._dense import data, dense_model, fit

HERE = Path(__file__).parent
TIMEOUT_SECONDS = 600
#: runs of a script killed by a signal that are tried again (see `run_script`)
CRASH_RETRIES = 2
#: the single-device reference runs the same steps with the same float32
#: arithmetic; only the order of the replicas' gradient sum differs.
TOLERANCE = {"rtol": 1e-6, "atol": 1e-6}


def run_script(name: str, out_dir: Path) -> None:
    """Runs `name` in a fresh process; its facts land in `out_dir`.

    TensorFlow has crashed (SIGSEGV) inside a MultiWorkerMirroredStrategy
    under load, in one run of many, in its own code. A run killed by a signal
    is therefore run again, up to `CRASH_RETRIES` times, with a warning that
    carries the crash's Python stack (faulthandler); any other failure, or a
    crash every time, fails the tests that read the facts.
    """
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONFAULTHANDLER": "1"}
    for attempt in range(1 + CRASH_RETRIES):
        completed = subprocess.run(
            [sys.executable, str(HERE / name), str(out_dir)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            env=env,
        )
        output = (completed.stdout + completed.stderr)[-4000:]
        if completed.returncode == 0:
            return
        if completed.returncode > 0 or attempt == CRASH_RETRIES:
            pytest.fail(f"{name} ended with {completed.returncode}:\n{output}")
        warnings.warn(
            f"{name} was killed by signal {-completed.returncode} (a TensorFlow "
            f"crash); running it again:\n{output}",
            stacklevel=2,
        )


@pytest.fixture
def restore_keras(monkeypatch):
    """Puts Keras' `reduce_per_replica` back after the test, patched or not."""
    monkeypatch.setattr(trainer, "reduce_per_replica", trainer.reduce_per_replica)
    return trainer


@pytest.fixture(scope="module")
def multi_worker_fit(tmp_path_factory):
    """The facts `_multi_worker_fit_script.py` gathers in a fresh process."""
    out_dir = tmp_path_factory.mktemp("multi_worker_fit")
    run_script("_multi_worker_fit_script.py", out_dir)
    return json.loads((out_dir / "multi_worker_fit.json").read_text())


# -- enable_multi_worker_fit ------------------------------------------------


@pytest.mark.parametrize("strategy", [None, "mirrored"])
def test_multi_worker_fit_is_a_no_op_without_a_multi_worker_strategy(
    restore_keras, strategy
):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"]) if strategy else None
    model = dense_model(strategy=strategy)
    keras_reduce = trainer.reduce_per_replica
    assert enable_multi_worker_fit(model) is model
    assert "_maybe_symbolic_build" not in vars(model)
    assert trainer.reduce_per_replica is keras_reduce
    assert fit(model)[1] == 11


def test_multi_worker_fit_patches_once_and_keeps_the_strategy(multi_worker_fit):
    patches = multi_worker_fit["patches"]
    assert patches["reduction_patched"]
    assert patches["second_call_returns_the_model"]
    assert patches["second_call_keeps_the_build_patch"]
    assert patches["second_call_keeps_the_reduction"]
    # A second model: its own build patch, the same process-wide reduction.
    assert patches["other_model_has_its_own_build_patch"]
    assert patches["other_model_shares_the_reduction"]
    # `fit` outside the scope still uses the strategy the model was built in.
    assert patches["strategy_kept"]
    fitted = multi_worker_fit["fit"]
    assert fitted["iterations"] == fitted["want_iterations"] == 11
    for got, expected in zip(fitted["weights"], fitted["want_weights"]):
        np.testing.assert_allclose(got, expected, **TOLERANCE)
    np.testing.assert_allclose(fitted["loss"], fitted["want_loss"], rtol=1e-6)
    assert fitted["history_keys"] == ["loss", "val_loss"]


def test_patched_reduction_leaves_other_strategies_to_keras(restore_keras):
    calls = []

    def keras_reduce(values, strategy, reduction):
        calls.append(reduction)
        return values

    trainer.reduce_per_replica = keras_reduce
    tf_distribute_patches._patch_reduce_per_replica(trainer)
    assert trainer.reduce_per_replica is not keras_reduce
    default = tf.distribute.get_strategy()
    for reduction in ("auto", "mean", "sum", "concat"):
        trainer.reduce_per_replica({"loss": tf.constant(1.0)}, default, reduction)
    assert calls == ["auto", "mean", "sum", "concat"]


@pytest.mark.parametrize("broken", ["missing", "signature"])
@pytest.mark.parametrize(
    "enable", ["enable_multi_worker_fit", "enable_steps_per_execution"]
)
def test_a_missing_private_keras_symbol_fails_clearly(multi_worker_fit, broken, enable):
    outcome = multi_worker_fit["broken"][f"{broken}/{enable}"]
    assert outcome["error"] is not None and (
        "trainer.reduce_per_replica" in outcome["error"]
    )
    assert outcome["unpatched"]


# -- enable_steps_per_execution ---------------------------------------------


@pytest.mark.parametrize("strategy", [None, "mirrored"])
def test_steps_per_execution_keeps_keras_function_on_one_replica(strategy):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"]) if strategy else None
    model = dense_model(steps_per_execution=4, strategy=strategy)
    want = fit(dense_model(steps_per_execution=4, strategy=strategy))
    enable_steps_per_execution(model)
    make = model.make_train_function
    assert enable_steps_per_execution(model) is model
    assert model.make_train_function is make
    got = fit(model)
    # Keras' own function, built by Keras' make_train_function.
    assert model.train_function.__module__ == trainer.__name__
    assert got[1] == want[1] == 11
    for a, b in zip(got[0], want[0]):
        np.testing.assert_array_equal(a, b)


def unknown_cardinality(x, y, batch_size):
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).filter(lambda *_: True)
    return dataset.batch(batch_size)


@pytest.mark.parametrize("cardinality", ["known", "unknown"])
def test_multi_step_loop_runs_the_steps_keras_runs(monkeypatch, cardinality):
    """Forced on one device, the loop matches Keras' step for step.

    11 batches per epoch in executions of 4: 4, 4 and a partial 3, and with
    unknown cardinality the end of the data found at an execution's start.
    """
    x, y = data()

    def run(model):
        seen = []
        record = keras.callbacks.LambdaCallback(
            on_train_batch_end=lambda batch, logs: seen.append((batch, logs["loss"]))
        )
        inputs = (
            {"x": x, "y": y, "batch_size": 32, "shuffle": False}
            if cardinality == "known"
            else {"x": unknown_cardinality(x, y, 32), "shuffle": False}
        )
        history = model.fit(
            **inputs,
            epochs=2,
            verbose=0,
            callbacks=[record],
            validation_data=data(96),
        )
        evaluation = model.evaluate(x, y, batch_size=32, verbose=0)
        iterations = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
        return model.get_weights(), iterations, seen, history.history, evaluation

    want = run(dense_model(steps_per_execution=4))
    monkeypatch.setattr(
        tf_distribute_patches, "_needs_multi_step_workaround", lambda m: True
    )
    model = enable_steps_per_execution(dense_model(steps_per_execution=4))
    got = run(model)
    assert model.train_function.__module__ == tf_distribute_patches.__name__
    assert model.test_function.__module__ == tf_distribute_patches.__name__
    assert got[1] == want[1] == 22
    assert [batch for batch, _ in got[2]] == [3, 7, 11] * 2
    assert [batch for batch, _ in got[2]] == [batch for batch, _ in want[2]]
    np.testing.assert_allclose(
        [loss for _, loss in got[2]], [loss for _, loss in want[2]]
    )
    for a, b in zip(got[0], want[0]):
        np.testing.assert_array_equal(a, b)
    assert got[3].keys() == want[3].keys()
    for key in want[3]:
        np.testing.assert_allclose(got[3][key], want[3][key], rtol=1e-6)
    np.testing.assert_allclose(got[4], want[4], rtol=1e-6)
    # train_on_batch goes through the same function (one batch).
    model.train_on_batch(x[:32], y[:32])
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 23


def test_steps_per_execution_survives_recompiling(monkeypatch):
    monkeypatch.setattr(
        tf_distribute_patches, "_needs_multi_step_workaround", lambda m: True
    )
    model = enable_steps_per_execution(dense_model(steps_per_execution=4))
    fit(model)
    model.compile("sgd", "mse", steps_per_execution=2)  # a new optimizer
    assert model.train_function is None
    assert fit(model)[1] == 11
    assert model.train_function.__module__ == tf_distribute_patches.__name__


# -- two replicas ------------------------------------------------------------


@pytest.fixture(scope="module")
def mirrored_multi_step(distributed_runs):
    distributed_runs.wait("mirrored")
    out_dir = distributed_runs.out_dir
    return {
        "result": _worker.load_result(out_dir / "multi_step.npz")[_worker.MULTI_STEP],
        "facts": json.loads((out_dir / "multi_step.json").read_text()),
    }


def assert_matches_one_device(result):
    reference = _worker.reference(_worker.MULTI_STEP_CONFIG)
    assert int(result["iterations"]) == _worker.STEPS
    # The callbacks ran once per execution of 5 steps, on every replica.
    executions = _worker.STEPS // _worker.MULTI_STEP_CONFIG[2]
    assert result["strengths"].shape[:2] == (executions, 2)
    np.testing.assert_allclose(
        result["strengths"][..., 0], reference["strengths"][..., 0], rtol=1e-6
    )
    for got, want in zip(result["weights"], reference["weights"]):
        np.testing.assert_allclose(got, want, **TOLERANCE)
    np.testing.assert_allclose(
        result["evaluations"], reference["evaluations"], rtol=1e-5
    )


def test_mirrored_steps_per_execution_matches_one_device(mirrored_multi_step):
    assert mirrored_multi_step["facts"]["replicas"] == 2
    result = mirrored_multi_step["result"]
    assert result["strength_types"] == ["MirroredVariable"] * 2
    assert result["strengths"].shape[2] == 2
    np.testing.assert_array_equal(
        result["strengths"][..., 0], result["strengths"][..., 1]
    )
    assert_matches_one_device(result)


def test_mirrored_evaluate_with_steps_per_execution_matches_one_step(
    mirrored_multi_step,
):
    # 4 validation batches: one partial execution of 5.
    evaluate = mirrored_multi_step["facts"]["evaluate"]
    assert evaluate["5"] == pytest.approx(evaluate["1"], rel=1e-6)


def test_multi_worker_steps_per_execution_matches_one_device(distributed_runs):
    names = [f"worker_{index}" for index in range(_worker.WORKERS)]
    for name in names:
        distributed_runs.wait(name)
    first, second = (
        _worker.load_result(distributed_runs.out_dir / f"{name}.npz")[
            _worker.MULTI_STEP
        ]
        for name in names
    )
    for got, other in zip(first["weights"], second["weights"]):
        np.testing.assert_array_equal(got, other)
    assert_matches_one_device(first)
