"""NAU → NMU under `MirroredStrategy` on two logical CPUs vs one device.

The strategy runs in a fresh process (`_mirrored_script.py`, started by
`conftest.py`): logical devices can only be configured before TensorFlow
initializes, which this pytest process already did. The single-device
reference trains here.
"""

import json

import keras
import numpy as np
import pytest

from tests.distribute import _worker
from tests.serving import serve_in_fresh_process

TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


@pytest.fixture(scope="module")
def mirrored(distributed_runs):
    distributed_runs.wait("mirrored")
    out_dir = distributed_runs.out_dir
    return {
        "dir": out_dir,
        "results": _worker.load_result(out_dir / "mirrored.npz"),
        "facts": json.loads((out_dir / "facts.json").read_text()),
    }


def test_two_replicas_ran_every_step(mirrored):
    assert mirrored["facts"]["replicas"] == 2
    assert set(mirrored["results"]) == {*_worker.CONFIGS, "sgd_outside"}
    for result in mirrored["results"].values():
        assert int(result["iterations"]) == _worker.STEPS


def test_strength_is_mirrored_and_follows_the_schedule_on_every_replica(mirrored):
    for config in _worker.CONFIGS:
        result = mirrored["results"][config]
        # Built in the strategy's scope, each regularizer's strength variable
        # is a MirroredVariable, assigned on every replica by the callback.
        assert result["strength_types"] == ["MirroredVariable"] * 2
        strengths = result["strengths"]  # (execution, regularizer, replica)
        assert strengths.shape == (_worker.STEPS, 2, 2)
        np.testing.assert_array_equal(strengths[..., 0], strengths[..., 1])
        expected = _worker.reference(config)["strengths"][..., 0]
        np.testing.assert_allclose(strengths[..., 0], expected, rtol=1e-6)
        # The run crosses the switch-on: 0 up to step 5, full from step 15.
        ramp = strengths[:, 0, 0]
        assert ramp[5] == 0.0 and 0.0 < ramp[10] < 1.0 and ramp[15] == 1.0


@pytest.mark.parametrize("config", sorted(_worker.CONFIGS))
def test_weights_match_the_single_device_run(mirrored, config):
    reference = _worker.reference(config)
    for got, want in zip(mirrored["results"][config]["weights"], reference["weights"]):
        np.testing.assert_allclose(got, want, **TOLERANCE)
    # The comparison can see the regularizer: without the schedule's switch-on
    # the weights end far outside the tolerance (also a 2x loss-scale error).
    unregularized = _worker.reference(config, scheduled=False)
    effect = max(
        np.abs(a - b).max()
        for a, b in zip(reference["weights"], unregularized["weights"])
    )
    assert effect > 1e-3


def test_regularizer_created_outside_the_scope_is_read_by_every_replica(mirrored):
    result = mirrored["results"]["sgd_outside"]
    # One ordinary variable (on the first device), which both replicas read.
    assert result["strength_types"] == ["ResourceVariable"] * 2
    reference = _worker.reference("sgd", regularizers_outside_scope=True)
    np.testing.assert_allclose(
        result["strengths"][..., 0], reference["strengths"][..., 0], rtol=1e-6
    )
    for got, want in zip(result["weights"], reference["weights"]):
        np.testing.assert_allclose(got, want, **TOLERANCE)


@pytest.mark.parametrize("config", sorted(_worker.CONFIGS))
def test_success_criterion_records_the_same_evaluations(mirrored, config):
    got = mirrored["results"][config]["evaluations"]
    want = _worker.reference(config)["evaluations"]
    np.testing.assert_array_equal(got[:, 0], [0, 10, 20, 30])
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_steps_per_execution_above_one_still_fails_inside_keras(mirrored):
    """Keras 3.15 cannot run steps_per_execution > 1 under a multi-replica
    strategy (keras-team/keras#19246: a `tf.cond` around the replicated step
    in its multi-step loop), whatever the model: a plain Dense fails the same
    way. When this starts to fail, Keras has fixed it: compare the weights
    below with `_worker.reference(_worker.MULTI_STEP_CONFIG)` here and drop
    the note in docs/distributed.md.
    """
    outcome = mirrored["facts"]["multi_step"]
    assert outcome["error"] is not None, "steps_per_execution > 1 now works"
    assert "You must feed a value for placeholder tensor" in outcome["error"]


def test_keras_file_of_a_mirrored_model_loads_and_predicts(mirrored):
    predictions = np.load(mirrored["dir"] / "predictions.npz")
    loaded = keras.models.load_model(mirrored["dir"] / "model.keras")
    np.testing.assert_allclose(
        loaded.predict(predictions["inputs"], verbose=0),
        predictions["outputs"],
        rtol=1e-6,
    )
    # ... and equal to the single-device model's predictions.
    single = _worker.make_model("sgd")[0]
    single.set_weights(_worker.reference("sgd")["weights"])
    np.testing.assert_allclose(
        single.predict(predictions["inputs"], verbose=0),
        predictions["outputs"],
        rtol=1e-5,
    )


def test_saved_model_of_a_mirrored_model_serves_in_a_fresh_process(mirrored, tmp_path):
    predictions = np.load(mirrored["dir"] / "predictions.npz")
    served = serve_in_fresh_process(
        mirrored["dir"] / "saved_models" / "mirrored" / "1",
        predictions["inputs"],
        tmp_path,
    )
    np.testing.assert_allclose(served, predictions["outputs"], rtol=1e-6)
