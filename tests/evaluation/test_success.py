import json
import math

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import keras_nalu
from keras_nalu.evaluation import (
    Evaluation,
    EvaluationSummary,
    SuccessCriterion,
    sparsity_error,
    summarize_evaluations,
)
from keras_nalu.evaluation.thresholds import nearly_perfect_kernel
from keras_nalu.tasks import ArithmeticTask


def _scripted(points):
    return [Evaluation(step, val, test, 0.0) for step, val, test in points]


def test_summary_of_a_scripted_sequence():
    evaluations = _scripted(
        [
            (0, 5.0, 50.0),
            (1000, 1.0, 0.5),  # first below the threshold 1.0
            (2000, 0.1, 2.0),  # best by validation, but not solved
            (3000, 0.2, 0.1),
        ]
    )
    result = summarize_evaluations(evaluations, threshold=1.0)
    assert result["solved_at"] == 1000
    assert result["best_step"] == 2000
    assert result["success"] is False
    assert result["extrapolation_mse"] == 2.0
    assert result["diverged"] is False
    assert result["last_solved_at"] == 3000
    assert result["final_success"] is True


def test_a_solution_found_and_lost_is_told_apart():
    evaluations = _scripted([(0, 5.0, 50.0), (1000, 0.2, 0.5), (2000, 0.3, 3.0)])
    result = summarize_evaluations(evaluations, threshold=1.0)
    assert (result["success"], result["solved_at"]) == (True, 1000)
    assert (result["last_solved_at"], result["final_success"]) == (1000, False)


def test_success_is_judged_at_the_best_validation_step():
    evaluations = _scripted([(0, 5.0, 50.0), (1000, 0.3, 3.0), (2000, 0.2, 0.5)])
    result = summarize_evaluations(evaluations, threshold=1.0)
    assert (result["success"], result["solved_at"], result["best_step"]) == (
        True,
        2000,
        2000,
    )


def test_a_run_stopped_for_its_loss_is_diverged_never_success():
    evaluations = _scripted([(0, 5.0, 50.0), (1000, 0.2, 0.5)])
    solved = summarize_evaluations(evaluations, threshold=1.0)
    assert (solved["success"], solved["diverged"]) == (True, False)
    stopped = summarize_evaluations(evaluations, threshold=1.0, loss_diverged=True)
    assert (stopped["success"], stopped["diverged"]) == (False, True)
    assert stopped["best_step"] == solved["best_step"] == 1000


def test_nan_is_diverged_never_success():
    evaluations = _scripted([(0, 1.0, 0.5), (1000, math.nan, math.nan)])
    result = summarize_evaluations(evaluations, threshold=1.0)
    assert result["diverged"] is True
    assert result["success"] is False
    assert result["final_success"] is False and result["last_solved_at"] == 0


def _nau_nmu(task, perturbation=0.0):
    model = keras.Sequential(
        [
            keras.Input((task.input_size,)),
            keras_nalu.layers.NAU(2),
            keras_nalu.layers.NMU(1),
        ]
    )
    kernel = nearly_perfect_kernel(task, 0.0) + perturbation
    model.layers[0].kernel.assign(kernel.astype("float32"))
    model.layers[1].kernel.assign(np.ones((2, 1), "float32"))
    model.compile(keras.optimizers.SGD(0.0), "mse")
    return model


@pytest.mark.parametrize("perturbation, solved", [(0.0, True), (0.01, False)])
def test_exact_model_succeeds_at_first_evaluation_perturbed_fails(perturbation, solved):
    task = ArithmeticTask(operation="mul", input_size=20, seed=1)
    threshold = 0.01
    judge = SuccessCriterion(
        task.validation_data(), task.test_data(), threshold, eval_every=5
    )
    model = _nau_nmu(task, perturbation)
    model.fit(
        task.train_dataset(), steps_per_epoch=10, epochs=1, verbose=0, callbacks=[judge]
    )
    result = judge.result()
    assert result["success"] is solved
    assert result["solved_at"] == (0 if solved else None)
    assert [e.step for e in judge.evaluations] == [0, 5, 10]
    assert result["diverged"] is False


def test_nan_loss_stops_training_and_is_recorded_diverged():
    x = np.ones((64, 2), "float32")
    model = keras.Sequential([keras.Input((2,)), keras_nalu.layers.NAU(1)])
    model.compile(keras.optimizers.SGD(1.0), "mse")
    judge = SuccessCriterion((x, x[:, :1]), (x, x[:, :1]), 1.0, eval_every=100)
    target = np.full((64, 1), np.nan, "float32")
    history = model.fit(x, target, batch_size=8, epochs=3, verbose=0, callbacks=[judge])
    result = judge.result()
    assert result["diverged"] is True
    assert result["success"] is False
    assert len(history.history["loss"]) == 1  # stopped in the first epoch


def test_logs_carry_the_figures():
    task = ArithmeticTask(operation="add", input_size=10, seed=0)
    model = keras.Sequential(
        [keras.Input((10,)), keras_nalu.layers.NAU(2), keras_nalu.layers.NAU(1)]
    )
    model.compile("adam", "mse")
    judge = SuccessCriterion(task.validation_data(), task.test_data(), 1e-5, 2)
    history = model.fit(
        task.train_dataset(), steps_per_epoch=4, epochs=2, verbose=0, callbacks=[judge]
    )
    for key in ("interpolation_mse", "extrapolation_mse", "solved"):
        assert len(history.history[key]) == 2


def test_sparsity_error_of_hand_set_weights():
    model = keras.Sequential(
        [keras.Input((3,)), keras_nalu.layers.NAU(2), keras_nalu.layers.NMU(1)]
    )
    model.layers[0].kernel.assign([[1, 0], [-1, 0], [0, 1]])
    model.layers[1].kernel.assign([[1], [0]])
    assert sparsity_error(model) == 0.0
    model.layers[1].kernel.assign([[0.5], [0.1]])
    assert sparsity_error(model) == pytest.approx(0.5)


def test_invalid_arguments_name_the_argument():
    data = (np.ones((2, 1)), np.ones((2, 1)))
    with pytest.raises(ValueError, match="eval_every=0"):
        SuccessCriterion(data, data, 1.0, eval_every=0)
    with pytest.raises(ValueError, match="threshold=-1"):
        SuccessCriterion(data, data, -1.0)


# -- the running summary --------------------------------------------------------


def _listed_verdict(evaluations, threshold, loss_diverged=False):
    """The verdict taken from the whole list, written independently of the fold."""
    finite = [
        e
        for e in evaluations
        if math.isfinite(e.interpolation_mse) and math.isfinite(e.extrapolation_mse)
    ]
    diverged = loss_diverged or len(finite) < len(evaluations)
    solved = [e.step for e in finite if e.extrapolation_mse < threshold]
    last = evaluations[-1] if evaluations else None
    best = min(finite, key=lambda e: e.interpolation_mse) if finite else None
    return {
        "success": best is not None
        and bool(best.extrapolation_mse < threshold)
        and not diverged,
        "solved_at": solved[0] if solved else None,
        "best_step": best.step if best else None,
        "interpolation_mse": best.interpolation_mse if best else math.nan,
        "extrapolation_mse": best.extrapolation_mse if best else math.nan,
        "sparsity_error": best.sparsity_error if best else math.nan,
        "diverged": diverged,
        "last_solved_at": solved[-1] if solved else None,
        "final_success": bool(
            last is not None
            and math.isfinite(last.interpolation_mse)
            and last.extrapolation_mse < threshold
        ),
    }


# Few distinct values, so that ties, NaN and infinities are common.
_mse = st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.0, math.nan, math.inf, -math.inf])
_evaluations = st.lists(
    st.builds(
        Evaluation,
        step=st.integers(0, 10**7),
        interpolation_mse=_mse,
        extrapolation_mse=_mse | st.floats(allow_nan=True, allow_infinity=True),
        sparsity_error=st.floats(0, 0.5) | st.just(math.nan),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(
    _evaluations,
    st.sampled_from([0.0, 0.5, 1.0, 3.0]),
    st.booleans(),
    st.integers(0, 12),
)
def test_the_running_summary_equals_the_listed_verdict(
    evaluations, threshold, loss_diverged, cut
):
    """Folded one by one, and saved and restored midway as a backup does."""
    expected = json.dumps(_listed_verdict(evaluations, threshold, loss_diverged))
    assert (
        json.dumps(
            summarize_evaluations(evaluations, threshold, loss_diverged=loss_diverged)
        )
        == expected
    )
    summary = EvaluationSummary(threshold)
    for evaluation in evaluations[:cut]:
        summary.update(evaluation)
    config = json.loads(json.dumps(summary.get_config()))
    summary = EvaluationSummary.from_config(config)
    for evaluation in evaluations[cut:]:
        summary.update(evaluation)
    assert json.dumps(summary.result(loss_diverged=loss_diverged)) == expected
    assert summary.evaluations == len(evaluations)


def test_the_first_of_equal_minima_is_best():
    evaluations = _scripted([(0, 1.0, 5.0), (1000, 0.5, 5.0), (2000, 0.5, 0.1)])
    assert summarize_evaluations(evaluations, threshold=1.0)["best_step"] == 1000
    assert summarize_evaluations([], threshold=1.0)["best_step"] is None


@pytest.mark.parametrize(
    "change, message",
    [
        ({"threshold": -1.0}, "threshold"),
        ({"evaluations": -1}, "evaluations"),
        ({"evaluations": True}, "evaluations"),
        ({"nonfinite": 0}, "nonfinite"),
        ({"best": [0, 1.0, 2.0]}, "best"),
        ({"last": [0.5, 1.0, 2.0, 0.0]}, "last"),
        ({"last": None}, "last evaluation exactly when"),
        ({"solved_at": 1.0}, "solved_at"),
        ({"extra": 1}, "a dict of"),
    ],
)
def test_a_bad_summary_config_is_one_clear_error(change, message):
    summary = EvaluationSummary(threshold=1.0)
    summary.update(Evaluation(0, 0.5, 0.5, 0.0))
    config = {**summary.get_config(), **change}
    with pytest.raises(ValueError, match=message):
        EvaluationSummary.from_config(config)
    assert EvaluationSummary.from_config(summary.get_config()).result() == (
        summary.result()
    )
