"""The success-criterion callback: evaluate, early-stop by validation, judge."""

import dataclasses
import math

import keras
import numpy as np

from keras_nalu._api import export
from keras_nalu._validation import (
    check_non_negative,
    check_positive_int,
    is_integer,
    is_real,
)
from keras_nalu.evaluation.sparsity import sparsity_error
from keras_nalu.keras_utils import optimizer_step


@dataclasses.dataclass
class Evaluation:
    """One evaluation point of a run."""

    step: int
    interpolation_mse: float
    extrapolation_mse: float
    sparsity_error: float


def _evaluation_from(value, name: str) -> Evaluation | None:
    """An `Evaluation` from its `[step, interpolation, extrapolation, sparsity]`."""
    if value is None:
        return None
    valid = (
        isinstance(value, list | tuple)
        and len(value) == 4
        and is_integer(value[0])
        and all(is_real(v) for v in value[1:])
    )
    if not valid:
        raise ValueError(
            "EvaluationSummary expects "
            f"{name} to be null or [step, interpolation_mse, extrapolation_mse, "
            f"sparsity_error]. Received: {name}={value!r}"
        )
    return Evaluation(int(value[0]), *(float(v) for v in value[1:]))


class EvaluationSummary:
    """A run's evaluations folded into what its verdict needs, at constant size.

    `update` takes the evaluations one at a time, in order; `result` gives
    exactly `summarize_evaluations` of the list so far (which is this fold),
    while the summary keeps only the count, the best-validation evaluation,
    the last evaluation, the first and last solved steps and whether an MSE
    was ever non-finite. A run of 5,000 evaluations thus needs no list of
    them to be judged, and its backup (`ReplicaRun.save_backup`) stores the
    summary (`get_config`) instead.

    The rules (Madsen & Johansen (2020), §4.1.1):

    - best step: the evaluation with the lowest finite interpolation
      (validation) MSE, the first of equal minima;
    - success: the extrapolation MSE at the best step is below `threshold`,
      and the run has not diverged;
    - solved at / last solved at: the first / last step whose MSEs are
      finite and whose extrapolation MSE is below `threshold`;
    - final success: the last evaluation's interpolation MSE is finite and
      its extrapolation MSE below `threshold`;
    - diverged: an evaluation with a non-finite MSE, or `loss_diverged`.

    Args:
        threshold: the ε-threshold (see `success_threshold`), `>= 0`.

    Example:

    >>> from keras_nalu.evaluation import Evaluation, EvaluationSummary
    >>> summary = EvaluationSummary(threshold=1.0)
    >>> for point in [(0, 5.0, 50.0), (1000, 0.2, 0.5), (2000, 0.3, 3.0)]:
    ...     summary.update(Evaluation(*point, sparsity_error=0.0))
    >>> verdict = summary.result()
    >>> summary.evaluations, verdict["success"], verdict["best_step"]
    (3, True, 1000)
    >>> verdict["last_solved_at"], verdict["final_success"]
    (1000, False)
    """

    def __init__(self, threshold: float):
        self.threshold = check_non_negative("EvaluationSummary", "threshold", threshold)
        self.evaluations = 0
        self.nonfinite = False
        self.best: Evaluation | None = None
        self.last: Evaluation | None = None
        self.solved_at: int | None = None
        self.last_solved_at: int | None = None

    def update(self, evaluation: Evaluation) -> None:
        """Adds the next evaluation of the run."""
        self.evaluations += 1
        self.last = evaluation
        interpolation = evaluation.interpolation_mse
        if not (
            math.isfinite(interpolation) and math.isfinite(evaluation.extrapolation_mse)
        ):
            self.nonfinite = True  # neither "best" nor solved
            return
        if self.best is None or interpolation < self.best.interpolation_mse:
            self.best = evaluation
        if evaluation.extrapolation_mse < self.threshold:
            if self.solved_at is None:
                self.solved_at = evaluation.step
            self.last_solved_at = evaluation.step

    def result(self, loss_diverged: bool = False) -> dict:
        """The verdict of the evaluations so far (see `summarize_evaluations`).

        Args:
            loss_diverged: the run stopped because its training loss stopped
                being finite (it has then diverged, never succeeded).
        """
        diverged = bool(loss_diverged) or self.nonfinite
        last = self.last
        final_success = bool(
            last is not None
            and math.isfinite(last.interpolation_mse)
            and last.extrapolation_mse < self.threshold
        )
        best = self.best
        return {
            "success": best is not None
            and bool(best.extrapolation_mse < self.threshold)
            and not diverged,
            "solved_at": self.solved_at,
            "best_step": None if best is None else best.step,
            "interpolation_mse": math.nan if best is None else best.interpolation_mse,
            "extrapolation_mse": math.nan if best is None else best.extrapolation_mse,
            "sparsity_error": math.nan if best is None else best.sparsity_error,
            "diverged": diverged,
            "last_solved_at": self.last_solved_at,
            "final_success": final_success,
        }

    def get_config(self) -> dict:
        """The summary as JSON-native values (`from_config` reads it back)."""
        return {
            "threshold": self.threshold,
            "evaluations": self.evaluations,
            "nonfinite": self.nonfinite,
            "best": None if self.best is None else list(dataclasses.astuple(self.best)),
            "last": None if self.last is None else list(dataclasses.astuple(self.last)),
            "solved_at": self.solved_at,
            "last_solved_at": self.last_solved_at,
        }

    @classmethod
    def from_config(cls, config: dict) -> "EvaluationSummary":
        """The summary `get_config` described.

        Raises:
            ValueError: `config` lacks a field, has another, or holds a value
                of the wrong type (the message names it).
        """
        fields = {
            "threshold",
            "evaluations",
            "nonfinite",
            "best",
            "last",
            "solved_at",
            "last_solved_at",
        }
        if not isinstance(config, dict) or set(config) != fields:
            raise ValueError(
                f"EvaluationSummary.from_config expects a dict of {sorted(fields)}. "
                f"Received: {config!r}"
            )
        summary = cls(config["threshold"])
        count = config["evaluations"]
        if not (is_integer(count) and count >= 0):
            raise ValueError(
                "EvaluationSummary expects evaluations to be an integer >= 0. "
                f"Received: evaluations={count!r}"
            )
        if not isinstance(config["nonfinite"], bool):
            raise ValueError(
                "EvaluationSummary expects nonfinite to be a bool. "
                f"Received: nonfinite={config['nonfinite']!r}"
            )
        for name in ("solved_at", "last_solved_at"):
            if not (config[name] is None or is_integer(config[name])):
                raise ValueError(
                    f"EvaluationSummary expects {name} to be null or an integer. "
                    f"Received: {name}={config[name]!r}"
                )
        summary.evaluations = count
        summary.nonfinite = config["nonfinite"]
        summary.best = _evaluation_from(config["best"], "best")
        summary.last = _evaluation_from(config["last"], "last")
        summary.solved_at = config["solved_at"]
        summary.last_solved_at = config["last_solved_at"]
        if (summary.last is None) != (count == 0):
            raise ValueError(
                "EvaluationSummary expects a last evaluation exactly when it has "
                f"evaluations. Received: evaluations={count}, last={config['last']!r}"
            )
        return summary


def summarize_evaluations(
    evaluations, threshold: float, *, loss_diverged: bool = False
) -> dict:
    """Success, solved-at and the early-stopping choice from evaluation points.

    - best step: the evaluation with the lowest interpolation (validation) MSE;
    - success: the extrapolation MSE at the best step is below `threshold`;
    - solved at: the first step whose extrapolation MSE is below `threshold`;
    - last solved at: the last such step (a run may find a solution and
      lose it again);
    - final success: the last evaluation's extrapolation MSE is below
      `threshold`;
    - diverged: any MSE that is not finite, or `loss_diverged` (a run
      stopped because its training loss stopped being finite).

    NaN never counts as success: a non-finite MSE is neither "best" nor below
    the threshold, and a diverged run has failed. This is `EvaluationSummary`
    folded over `evaluations` (the first of equal minima is "best").
    """
    summary = EvaluationSummary(threshold)
    for evaluation in evaluations:
        summary.update(evaluation)
    return summary.result(loss_diverged=loss_diverged)


@export
class SuccessCriterion(keras.callbacks.Callback):
    """Evaluates interpolation and extrapolation MSE every `eval_every` steps.

    At the start of training and whenever the optimizer step reaches a
    multiple of `eval_every` (and at the end), it measures the MSE on the
    fixed validation set (interpolation range) and test set (extrapolation
    range) and the sparsity error. It keeps the step with the lowest
    validation MSE (early stopping), records the first step whose
    extrapolation MSE is below `threshold` (solved at), writes its figures
    into `logs`, stops training on a non-finite loss or MSE (recorded as
    `diverged`, never success), and optionally stops once solved.

    Args:
        validation_data: `(x, t)` arrays from the interpolation range.
        test_data: `(x, t)` arrays from the extrapolation range.
        threshold: the ε-threshold (see `success_threshold`), `>= 0`.
        eval_every: steps between evaluations; default 1,000.
        stop_on_success: stop training at the first evaluation that is solved.
        batch_size: evaluation batch size; None evaluates each set at once.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> x = np.random.uniform(1, 2, (64, 2)).astype("float32")
    >>> model = keras.Sequential([keras.Input((2,)), keras_nalu.layers.NAU(1)])
    >>> _ = model.layers[0].kernel.assign([[1.0], [1.0]])
    >>> model.compile("adam", "mse")
    >>> judge = keras_nalu.evaluation.SuccessCriterion(
    ...     (x, x.sum(1, keepdims=True)), (3 * x, 3 * x.sum(1, keepdims=True)),
    ...     threshold=1e-6, eval_every=1)
    >>> _ = model.fit(x, x.sum(1), epochs=1, verbose=0, callbacks=[judge])
    >>> judge.result()["success"], judge.result()["solved_at"]
    (True, 0)

    Reference: Madsen & Johansen (2020), §4.1.1 and App. C.2.
    """

    def __init__(
        self,
        validation_data,
        test_data,
        threshold: float,
        eval_every: int = 1000,
        stop_on_success: bool = False,
        batch_size: int | None = None,
    ):
        super().__init__()
        self.threshold = check_non_negative("SuccessCriterion", "threshold", threshold)
        self.eval_every = check_positive_int(
            "SuccessCriterion", "eval_every", eval_every
        )
        self.stop_on_success = bool(stop_on_success)
        self.batch_size = batch_size
        self.validation_data = tuple(np.asarray(a, np.float32) for a in validation_data)
        self.test_data = tuple(np.asarray(a, np.float32) for a in test_data)
        self.evaluations: list[Evaluation] = []
        self._predict_fn = None
        self._last_step = None
        self._next_step = 0
        self.loss_diverged = False

    # -- measurement ---------------------------------------------------------
    def _predict(self, x) -> np.ndarray:
        """The model's output now, float32, through a compiled forward pass."""
        if keras.backend.backend() != "tensorflow":
            # The model's own compiled predict step (jax.jit, ...), which
            # reads the weights in force.
            return np.asarray(self.model.predict_on_batch(x))
        if self._predict_fn is None:
            # A tf.function of the model itself: it also runs in the cross-
            # replica context of a tf.distribute strategy, where
            # predict_on_batch would split the batch over the replicas.
            import tensorflow as tf

            model = self.model
            self._predict_fn = tf.function(
                lambda x: model(x, training=False), reduce_retracing=True
            )
        return self._predict_fn(x).numpy()

    def _mse(self, data) -> float:
        # The error is taken in float64, on the host.
        x, t = data
        size = len(x) if self.batch_size is None else self.batch_size
        total = 0.0
        for start in range(0, len(x), size):
            prediction = self._predict(x[start : start + size])
            target = t[start : start + size].reshape(prediction.shape)
            error = prediction.astype(np.float64) - target.astype(np.float64)
            total += float(np.sum(np.square(error)))
        return total / len(x)

    def evaluate(self, step: int) -> Evaluation:
        """Measures the model now and records it as the evaluation at `step`."""
        evaluation = Evaluation(
            step=int(step),
            interpolation_mse=self._mse(self.validation_data),
            extrapolation_mse=self._mse(self.test_data),
            sparsity_error=sparsity_error(self.model),
        )
        self.evaluations.append(evaluation)
        self._last_step = evaluation.step
        return evaluation

    # -- Keras hooks -----------------------------------------------------------
    def on_train_begin(self, logs=None):
        step = optimizer_step(self.model)
        self._next_step = (step // self.eval_every + 1) * self.eval_every
        if self._last_step != step:
            self._judge(self.evaluate(step))

    def on_train_batch_end(self, batch, logs=None):
        loss = None if logs is None else logs.get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.loss_diverged = True
            self.model.stop_training = True
            self._judge(self.evaluate(optimizer_step(self.model)))
        elif optimizer_step(self.model) >= self._next_step:
            step = optimizer_step(self.model)
            self._next_step = (step // self.eval_every + 1) * self.eval_every
            self._judge(self.evaluate(step))
        self._write_logs(logs)

    def on_epoch_end(self, epoch, logs=None):
        self._write_logs(logs)

    def on_train_end(self, logs=None):
        step = optimizer_step(self.model)
        if self._last_step != step:
            self._judge(self.evaluate(step))

    def _judge(self, evaluation: Evaluation) -> None:
        finite = math.isfinite(evaluation.interpolation_mse) and math.isfinite(
            evaluation.extrapolation_mse
        )
        if not finite:
            self.model.stop_training = True
        elif self.stop_on_success and evaluation.extrapolation_mse < self.threshold:
            self.model.stop_training = True

    def _write_logs(self, logs):
        if logs is None or not self.evaluations:
            return
        last = self.evaluations[-1]
        logs["interpolation_mse"] = last.interpolation_mse
        logs["extrapolation_mse"] = last.extrapolation_mse
        logs["solved"] = float(last.extrapolation_mse < self.threshold)

    # -- results ---------------------------------------------------------------
    def result(self) -> dict:
        """The run's verdict: success, solved_at, best_step, MSEs, diverged.

        `success` and the MSEs are the paper's: at the best-validation step.
        The `final_*` fields and `solved_at_end` describe the last
        evaluation, i.e. the weights the model ends training with.
        """
        verdict = summarize_evaluations(self.evaluations, self.threshold)
        if self.loss_diverged:
            verdict["diverged"] = True
            verdict["success"] = False
        final = self.evaluations[-1] if self.evaluations else None
        return {
            **verdict,
            "threshold": self.threshold,
            "evaluations": len(self.evaluations),
            # The weights the run ends with (what `train` saves and exports).
            "final_step": None if final is None else final.step,
            "final_interpolation_mse": math.nan
            if final is None
            else final.interpolation_mse,
            "final_extrapolation_mse": math.nan
            if final is None
            else final.extrapolation_mse,
            "final_sparsity_error": math.nan if final is None else final.sparsity_error,
            "solved_at_end": final is not None
            and math.isfinite(final.extrapolation_mse)
            and final.extrapolation_mse < self.threshold,
        }

    def get_config(self):
        return {
            "threshold": self.threshold,
            "eval_every": self.eval_every,
            "stop_on_success": self.stop_on_success,
            "batch_size": self.batch_size,
        }
