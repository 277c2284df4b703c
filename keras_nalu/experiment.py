"""One run of the arithmetic task: task + preset → model.fit → result record."""

import dataclasses
import math
import time

import keras

from keras_nalu._validation import check_positive, check_positive_int
from keras_nalu.callbacks import ProgressBar
from keras_nalu.evaluation import SuccessCriterion, success_threshold
from keras_nalu.models import build_model, get_preset
from keras_nalu.tasks import ArithmeticTask

TASK_FIELDS = (
    "operation",
    "input_size",
    "subset_ratio",
    "overlap_ratio",
    "num_subsets",
    "interpolation_range",
    "extrapolation_range",
    "batch_size",
)


@dataclasses.dataclass(frozen=True)
class ExperimentConfig:
    """Everything that defines one run; every field is a `train` flag.

    The defaults are Madsen & Johansen's (2020) arithmetic task (App. C, a + b) with the
    `nau_sparse` preset: NAU → NAU with the paper's schedule (5·10³ → 5·10⁴)
    but λ = 0.1 instead of 0.01, trained for 10⁵ steps — enough for success and
    for discrete weights. `model="nau"` is the paper's preset exactly (it
    succeeds as fast but sparsifies over ~10⁶ steps).

    `epsilon` is the optimizer's ε; None keeps Keras' 10⁻⁷. The papers' PyTorch
    code ran Adam with 10⁻⁸ (Keras adds ε before Adam's bias correction,
    PyTorch after, so the two agree only once that correction is near 1).
    """

    model: str = "nau_sparse"
    operation: str = "add"
    seed: int = 0
    iterations: int = 100_000
    hidden_size: int = 2
    learning_rate: float = 1e-3
    optimizer: str = "adam"
    epsilon: float | None = None
    sparsity: float | None = None
    sparsity_start: int | None = None
    sparsity_end: int | None = None
    input_size: int = 100
    subset_ratio: float = 0.25
    overlap_ratio: float = 0.5
    num_subsets: int = 2
    interpolation_range: str = "U[1,2]"
    extrapolation_range: str = "U[2,6]"
    batch_size: int = 128
    eval_every: int = 1_000
    stop_on_success: bool = False
    steps_per_execution: int = 50

    def __post_init__(self):
        get_preset(self.model)
        check_positive_int("ExperimentConfig", "iterations", self.iterations)
        check_positive_int("ExperimentConfig", "eval_every", self.eval_every)
        check_positive_int(
            "ExperimentConfig", "steps_per_execution", self.steps_per_execution
        )
        if (
            isinstance(self.seed, bool)
            or not isinstance(self.seed, int)
            or self.seed < 0
        ):
            raise ValueError(
                f"ExperimentConfig expects seed to be an integer >= 0. "
                f"Received: seed={self.seed!r}"
            )
        if self.epsilon is not None:
            check_positive("ExperimentConfig", "epsilon", self.epsilon)
        self.task()  # validates the task parameters now, with their names

    def task(self) -> ArithmeticTask:
        fields = {name: getattr(self, name) for name in TASK_FIELDS}
        return ArithmeticTask(seed=self.seed, **fields)

    def to_config(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def name(self) -> str:
        return f"{self.model}-{self.operation}-seed{self.seed}"


def _execution_size(config: ExperimentConfig) -> int:
    """steps_per_execution that divides eval_every, so evaluations are exact."""
    return math.gcd(config.steps_per_execution, config.eval_every)


def run_experiment(
    config: ExperimentConfig, verbose: bool = True, callbacks=()
) -> tuple[keras.Model, dict]:
    """Trains `config` and returns `(model, record)`.

    The record is JSON-able: the config, the task's subsets, and the verdict
    of `SuccessCriterion` (success, solved_at, best_step, interpolation and
    extrapolation MSE at the best step, sparsity error, diverged) plus
    iterations, wall time, iterations per second, and the `history` of
    evaluations as `[step, interpolation_mse, extrapolation_mse,
    sparsity_error]` rows.

    Example:

    >>> from keras_nalu.experiment import ExperimentConfig, run_experiment
    >>> model, record = run_experiment(
    ...     ExperimentConfig(iterations=2_000, eval_every=1_000), verbose=False)
    >>> sorted(record)[:3]
    ['best_step', 'config', 'diverged']
    """
    task = config.task()
    threshold = success_threshold(task)
    keras.utils.set_random_seed(config.seed)
    model, unit_callbacks = build_model(
        config.model,
        input_size=task.input_size,
        hidden_size=config.hidden_size,
        learning_rate=config.learning_rate,
        optimizer=config.optimizer,
        epsilon=config.epsilon,
        sparsity=config.sparsity,
        start=config.sparsity_start,
        end=config.sparsity_end,
        steps_per_execution=_execution_size(config),
    )
    judge = SuccessCriterion(
        task.validation_data(),
        task.test_data(),
        threshold=threshold,
        eval_every=config.eval_every,
        stop_on_success=config.stop_on_success,
    )
    all_callbacks = [*unit_callbacks, judge, *callbacks]
    if verbose:
        all_callbacks.append(ProgressBar(config.iterations, description=config.name))
    steps_per_epoch = min(config.eval_every, config.iterations)
    epochs = math.ceil(config.iterations / steps_per_epoch)
    started = time.perf_counter()
    model.fit(
        task.train_dataset(),
        steps_per_epoch=steps_per_epoch,
        epochs=epochs,
        callbacks=all_callbacks,
        shuffle=False,
        verbose=0,
    )
    wall_time = time.perf_counter() - started
    iterations = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    record = {
        "name": config.name,
        "config": config.to_config(),
        "task": task.to_config(),
        "subsets": [list(subset) for subset in task.subsets],
        **judge.result(),
        "iterations": iterations,
        "wall_time": wall_time,
        "iterations_per_second": iterations / wall_time if wall_time > 0 else None,
        "history": [dataclasses.astuple(e) for e in judge.evaluations],
    }
    return model, record
