import math

import keras
import numpy as np
import pytest

import keras_nalu
from keras_nalu.evaluation import (
    Evaluation,
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
        [keras.Input((task.input_size,)), keras_nalu.NAU(2), keras_nalu.NMU(1)]
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
    model = keras.Sequential([keras.Input((2,)), keras_nalu.NAU(1)])
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
    model = keras.Sequential([keras.Input((10,)), keras_nalu.NAU(2), keras_nalu.NAU(1)])
    model.compile("adam", "mse")
    judge = SuccessCriterion(task.validation_data(), task.test_data(), 1e-5, 2)
    history = model.fit(
        task.train_dataset(), steps_per_epoch=4, epochs=2, verbose=0, callbacks=[judge]
    )
    for key in ("interpolation_mse", "extrapolation_mse", "solved"):
        assert len(history.history[key]) == 2


def test_sparsity_error_of_hand_set_weights():
    model = keras.Sequential([keras.Input((3,)), keras_nalu.NAU(2), keras_nalu.NMU(1)])
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
