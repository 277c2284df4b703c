"""One run of the arithmetic task: task + preset → model.fit → result record."""

import dataclasses
import functools
import hashlib
import json
import math
import os
import time

import keras

from keras_nalu._validation import (
    check_non_negative,
    check_non_negative_int,
    check_positive,
    check_positive_int,
    check_steps,
)
from keras_nalu.callbacks import ProgressBar
from keras_nalu.errors import ArgumentError
from keras_nalu.evaluation import (
    SIMULATION_CHUNK,
    SuccessCriterion,
    is_single_module_task,
    single_module_threshold,
    success_threshold,
)
from keras_nalu.keras_utils import optimizer_step, set_random_seed
from keras_nalu.presets import build_model, get_preset
from keras_nalu.tasks import ArithmeticTask, Range, simple_function_task

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

STATIC_TASKS = ("arithmetic", "simple")
"""The tasks an `ExperimentConfig` trains: the arithmetic task, or the simple
10-parameter function of Madsen & Johansen (2020), §1.1."""

NAME_FIELDS = ("model", "operation", "seed")
"""The fields a run name spells out; a hash stands for the others."""

_RANGE_FIELDS = ("interpolation_range", "extrapolation_range")


def check_run_name(name, argument: str = "name") -> str:
    """A run name is one folder name: not empty, no path separator, no `..`.

    Args:
        name: the run name to check.
        argument: how the caller calls it in the message, e.g. `"--name"`.

    Returns:
        `name`.

    Raises:
        ValueError: for a name that is not one plain folder name.

    Example:

    >>> check_run_name("nau-add-seed0")
    'nau-add-seed0'
    """
    separators = {"/", "\\", os.sep, os.altsep} - {None}
    valid = (
        isinstance(name, str)
        and name.strip() != ""
        and name != "."
        and ".." not in name
        and "\x00" not in name
        and not any(separator in name for separator in separators)
    )
    if not valid:
        raise ValueError(
            "A run name is one folder name, without '/', '\\' or '..'; pick "
            f"another. Received: {argument}={name!r}"
        )
    return name


@functools.lru_cache(maxsize=32)
def _check_optimizer(name: str) -> None:
    keras.optimizers.get(name)


@dataclasses.dataclass(frozen=True)
class ExperimentConfig:
    """Everything that defines one run; every field is a `train` flag.

    The defaults are Madsen & Johansen's (2020) arithmetic task (App. C, a + b) with the
    `nau_sparse` preset: NAU → NAU with the paper's schedule (5·10³ → 5·10⁴)
    but λ = 0.1 instead of 0.01, trained for 10⁵ steps — enough for success and
    for discrete weights. `model="nau"` is the paper's preset exactly (it
    succeeds as fast but sparsifies over ~10⁶ steps).

    `epsilon` is the optimizer's ε; None keeps Keras' 10⁻⁷. The papers' PyTorch
    code ran Adam with 10⁻⁸ (Keras adds ε before Adam's bias correction, as
    the PyTorch of the paper's runs did; PyTorch 1.3 and later add it after).
    `steps_per_execution` also sets how long λ(t) is held: 1 recomputes it
    every step, as the reference code does. `REFERENCE_SETTINGS` holds both
    of the reference's values.

    `task_name` picks the task: "arithmetic" (the default) or "simple", the
    10-parameter function t = (x₁ + x₂)·(x₁ + x₂ + x₃ + x₄) of Madsen &
    Johansen (2020), §1.1 (`simple_function_task`; its four inputs need
    `input_size=4`, and `operation` joins the two sums). The subset fields
    do not apply to it.
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
    task_name: str = "arithmetic"

    def __post_init__(self):
        get_preset(self.model)
        check_positive_int("ExperimentConfig", "iterations", self.iterations)
        check_positive_int("ExperimentConfig", "eval_every", self.eval_every)
        check_steps("ExperimentConfig", self.iterations, self.eval_every)
        check_positive_int(
            "ExperimentConfig", "steps_per_execution", self.steps_per_execution
        )
        # A NumPy integer would not survive to_config's JSON: stored as int.
        seed = check_non_negative_int("ExperimentConfig", "seed", self.seed)
        object.__setattr__(self, "seed", seed)
        if self.epsilon is not None:
            check_positive("ExperimentConfig", "epsilon", self.epsilon)
        check_positive_int("ExperimentConfig", "hidden_size", self.hidden_size)
        check_positive("ExperimentConfig", "learning_rate", self.learning_rate)
        self._check_optimizer()
        self._check_sparsity()
        self._check_task_name()
        self.task()  # validates the task parameters now, with their names

    def _check_task_name(self):
        if self.task_name not in STATIC_TASKS:
            raise ArgumentError(
                "ExperimentConfig",
                "task_name",
                self.task_name,
                requirement=f"be one of {list(STATIC_TASKS)}",
            )
        if self.task_name == "simple" and self.input_size != 4:
            raise ArgumentError(
                "ExperimentConfig",
                "input_size",
                self.input_size,
                requirement="be 4: the simple task has 4 inputs",
            )

    def _check_optimizer(self):
        try:
            if not isinstance(self.optimizer, str):
                raise TypeError(self.optimizer)
            _check_optimizer(self.optimizer)
        except (TypeError, ValueError):
            raise ArgumentError(
                "ExperimentConfig",
                "optimizer",
                self.optimizer,
                requirement="be a Keras optimizer name such as 'adam' or 'sgd'",
            ) from None

    def _check_sparsity(self):
        """The preset's λ schedule with this config's overrides is a valid one."""
        preset = get_preset(self.model)
        if self.sparsity is not None:
            check_non_negative("ExperimentConfig", "sparsity", self.sparsity)
        for name in ("sparsity_start", "sparsity_end"):
            value = getattr(self, name)
            if value is not None:
                value = check_non_negative_int("ExperimentConfig", name, value)
                object.__setattr__(self, name, value)
        start = preset.start if self.sparsity_start is None else self.sparsity_start
        end = preset.end if self.sparsity_end is None else self.sparsity_end
        if (self.sparsity is None and preset.sparsity is None) or (
            start is None and end is None
        ):
            return
        if start is None or end is None or start >= end:
            raise ArgumentError(
                "ExperimentConfig",
                "sparsity_start",
                self.sparsity_start,
                requirement="be < {sparsity_end} (the "
                f"{self.model!r} preset's are {preset.start!r} and {preset.end!r})",
                received={
                    "sparsity_start": self.sparsity_start,
                    "sparsity_end": self.sparsity_end,
                },
            )

    def task(self) -> ArithmeticTask:
        """The task of this run (`task_name`), with its seed."""
        fields = {name: getattr(self, name) for name in TASK_FIELDS}
        if self.task_name == "simple":
            for name in ("input_size", "subset_ratio", "overlap_ratio", "num_subsets"):
                fields.pop(name)
            return simple_function_task(seed=self.seed, **fields)
        # A unit that keeps 1/x finite near 0 may be trained to divide there.
        safe = get_preset(self.model).divides_near_zero
        return ArithmeticTask(seed=self.seed, allow_zero_divisor=safe, **fields)

    def success_threshold(self, task: ArithmeticTask | None = None) -> float:
        """The extrapolation MSE a run of this config must get below.

        A single-module preset (one unit, e.g. `single_nmru`) on t = a ∘ b
        of two single inputs is judged by `single_module_threshold` (Mistry
        et al.'s simulated ε = 10⁻⁴ rule); every other run by Madsen &
        Johansen's `success_threshold`, whose W^ε adds two one-input
        subsets exactly (its threshold for + and − would be 0).

        Args:
            task: `self.task()`, if the caller has it already.
        """
        task = self.task() if task is None else task
        if get_preset(self.model).single_module and is_single_module_task(task):
            return single_module_threshold(task)
        return success_threshold(task)

    def to_config(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def name(self) -> str:
        """`MODEL-OPERATION-seedN`, plus a hash of every other field that differs
        from its default, so that two different configurations never share a
        name.

        Example:

        >>> ExperimentConfig(model="nmu", operation="mul", seed=3).name
        'nmu-mul-seed3'
        >>> ExperimentConfig(model="nmu", operation="mul", hidden_size=4).name
        'nmu-mul-seed0-05a1fd74'
        """
        base = f"{self.model}-{self.operation}-seed{self.seed}"
        changed = {}
        for field in dataclasses.fields(self):
            if field.name in NAME_FIELDS:
                continue
            value, default = getattr(self, field.name), field.default
            if field.name in _RANGE_FIELDS:
                value, default = str(Range.parse(value)), str(Range.parse(default))
            if value != default:
                changed[field.name] = value
        if not changed:
            return base
        text = json.dumps(changed, sort_keys=True, default=str)
        return f"{base}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


REFERENCE_SETTINGS = {"epsilon": 1e-8, "steps_per_execution": 1}
"""The reference code's training step, as `ExperimentConfig` fields: Adam's
ε = 10⁻⁸ (PyTorch's; Keras adds it where the paper's PyTorch 1.2 did, before
the bias correction) and λ(t) recomputed every step, not held over blocks
of 50. `ExperimentConfig(**REFERENCE_SETTINGS, ...)` (or `--grid
epsilon=1e-8 --grid steps_per_execution=1`, or `benchmarks/paper.py
--reference-settings`) trains any preset so; its runs get their own
`config_id`. docs/protocol.md lists the differences and their sizes."""

LATER_FIELDS = {"epsilon": None, "task_name": "arithmetic"}
"""Fields added after results files existed, with their defaults: at the
default a field stays out of `config_id` (and out of a backup's identity),
so older rows keep their ids, and a file without its column reads as the
default."""


def without_later_defaults(config: dict) -> dict:
    """A config dict without the `LATER_FIELDS` that hold their default.

    Example:

    >>> without_later_defaults({"model": "nmu", "epsilon": None})
    {'model': 'nmu'}
    """
    return {
        key: value
        for key, value in config.items()
        if not (key in LATER_FIELDS and value == LATER_FIELDS[key])
    }


def execution_size(config: ExperimentConfig) -> int:
    """The run's steps per execution: `steps_per_execution` cut to divide `eval_every`.

    Every evaluation then falls at the end of an execution, and λ(t) changes
    only at its multiples. On PyTorch it is 1: Keras' PyTorch trainer takes
    one step per execution.

    Example:

    >>> import keras
    >>> size = execution_size(
    ...     ExperimentConfig(steps_per_execution=300, eval_every=1_000))
    >>> size == (1 if keras.backend.backend() == "torch" else 100)
    True
    """
    if keras.backend.backend() == "torch":
        return 1
    return math.gcd(config.steps_per_execution, config.eval_every)


def fit_epochs(config) -> tuple[int, int]:
    """`(steps_per_epoch, epochs)` of a run's `model.fit`: epochs of `eval_every`.

    A run evaluates at the end of every epoch, so it takes whole epochs:
    `iterations` rounded up to a multiple of `eval_every`. Any config with
    `iterations` and `eval_every` fields will do (`MnistConfig` too).

    Example:

    >>> fit_epochs(ExperimentConfig(iterations=2_500, eval_every=1_000))
    (1000, 3)
    """
    steps_per_epoch = min(config.eval_every, config.iterations)
    return steps_per_epoch, math.ceil(config.iterations / steps_per_epoch)


def total_steps(config: ExperimentConfig) -> int:
    """Optimizer steps `run_experiment` takes: whole epochs of `eval_every`.

    Example:

    >>> total_steps(ExperimentConfig(iterations=2_500, eval_every=1_000))
    3000
    """
    steps_per_epoch, epochs = fit_epochs(config)
    return steps_per_epoch * epochs


def run_memory(config: ExperimentConfig, replicas: int = 1) -> int:
    """Bytes a run of `config` surely holds: a lower bound of its memory.

    The larger of the success threshold's simulation (`SIMULATION_CHUNK`
    float64 inputs at a time, where the threshold is not cached yet) and the
    training: the fixed validation and test inputs (float32,
    `validation_size` and `test_size` rows of `input_size`), and per replica
    a training batch and the first layer's weights with their gradients and
    two optimizer moments. Training needs more (targets, activations, the
    framework); a run whose bound exceeds the machine's memory cannot run.

    Example:

    >>> run_memory(ExperimentConfig(input_size=100, batch_size=128)) / 2**20
    76.29...
    """
    task = config.task()
    width = task.input_size
    fixed = (task.validation_size + task.test_size) * width
    per_replica = config.batch_size * width + 4 * width * config.hidden_size
    training = 4 * (fixed + replicas * per_replica)
    return max(8 * SIMULATION_CHUNK * width, training)


def check_run_memory(config: ExperimentConfig, replicas: int = 1) -> None:
    """Refuses, in one line, a run that cannot fit in this machine's memory.

    Compares `run_memory` with the physical memory (where the system says
    it; elsewhere nothing is checked), so that an `input_size` or
    `batch_size` typed with a few zeros too many fails now, not with an
    out-of-memory error inside the framework after minutes.

    Raises:
        ValueError: the run needs more memory than the machine has.
    """
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no such query here
        return
    needed = run_memory(config, replicas)
    if memory > 0 and needed > memory:
        runs = "A run" if replicas == 1 else f"{replicas} runs trained together"
        need, its = ("needs", "its") if replicas == 1 else ("need", "their")
        raise ArgumentError(
            "",
            "input_size",
            config.input_size,
            problem=f"{runs} of {{input_size=}} and {{batch_size=}} {need} at least "
            f"{needed / 2**30:,.3g} GiB for {its} data and weights, more than the "
            f"{memory / 2**30:,.3g} GiB of memory of this machine; pick a smaller "
            "{input_size} or {batch_size}.",
            received={},
            values={"batch_size": config.batch_size},
        )


def build_experiment_model(config: ExperimentConfig) -> tuple[keras.Model, list]:
    """The compiled model of `config`'s preset and the callbacks it trains with.

    The weights are drawn from Keras' global generator: seed it first
    (`keras_nalu.keras_utils.set_random_seed(config.seed)`), as `run_experiment`
    does.
    """
    return build_model(
        config.model,
        input_size=config.input_size,
        hidden_size=config.hidden_size,
        learning_rate=config.learning_rate,
        optimizer=config.optimizer,
        epsilon=config.epsilon,
        sparsity=config.sparsity,
        start=config.sparsity_start,
        end=config.sparsity_end,
        steps_per_execution=execution_size(config),
    )


def run_experiment(
    config: ExperimentConfig,
    verbose: bool = True,
    callbacks=(),
    name: str | None = None,
) -> tuple[keras.Model, dict]:
    """Trains `config` and returns `(model, record)`.

    The record is JSON-able: its `name` (`name`, or `config.name`), the
    config, the task's subsets, and the verdict
    of `SuccessCriterion` (success, solved_at, best_step, interpolation and
    extrapolation MSE at the best step, sparsity error, diverged) plus
    iterations, wall time, iterations per second, and the `history` of
    evaluations as `[step, interpolation_mse, extrapolation_mse,
    sparsity_error]` rows.

    Example:

    >>> from keras_nalu.experiments import ExperimentConfig, run_experiment
    >>> model, record = run_experiment(
    ...     ExperimentConfig(iterations=2_000, eval_every=1_000), verbose=False)
    >>> sorted(record)[:3]
    ['best_step', 'config', 'diverged']
    """
    name = config.name if name is None else check_run_name(name)
    check_run_memory(config)
    task = config.task()
    threshold = config.success_threshold(task)
    set_random_seed(config.seed)
    model, unit_callbacks = build_experiment_model(config)
    judge = SuccessCriterion(
        task.validation_data(),
        task.test_data(),
        threshold=threshold,
        eval_every=config.eval_every,
        stop_on_success=config.stop_on_success,
    )
    all_callbacks = [*unit_callbacks, judge, *callbacks]
    if verbose:
        all_callbacks.append(ProgressBar(config.iterations, description=name))
    steps_per_epoch, epochs = fit_epochs(config)
    started = time.perf_counter()
    # tf.data on TensorFlow; elsewhere the same inputs drawn in NumPy, so a
    # run needs no TensorFlow (the JAX route of a GPU machine).
    if keras.backend.backend() == "tensorflow":
        batches = task.train_dataset()
    else:
        batches = task.train_batches()
    model.fit(
        batches,
        steps_per_epoch=steps_per_epoch,
        epochs=epochs,
        callbacks=all_callbacks,
        shuffle=False,
        verbose=0,
    )
    wall_time = time.perf_counter() - started
    record = make_record(
        name,
        config,
        task,
        judge.result(),
        iterations=optimizer_step(model),
        wall_time=wall_time,
        history=[dataclasses.astuple(e) for e in judge.evaluations],
    )
    return model, record


def make_record(
    name: str,
    config: ExperimentConfig,
    task: ArithmeticTask,
    verdict: dict,
    iterations: int,
    wall_time: float,
    history: list | None,
    **extra,
) -> dict:
    """The JSON-able record of one run, as `run_experiment` and the engines give it.

    Args:
        name: the run's name.
        config: its configuration.
        task: its task (`config.task()`).
        verdict: the verdict fields (`SuccessCriterion.result`, or an
            `EvaluationSummary`'s result with `threshold` and `evaluations`).
        iterations: the steps it trained.
        wall_time: the seconds it took.
        history: its evaluations as `(step, interpolation_mse,
            extrapolation_mse, sparsity_error)` rows, or None.
        **extra: further fields, after the others (the engines add
            `replicas`, `engine` and `device`).

    Example:

    >>> from keras_nalu.experiments import ExperimentConfig
    >>> config = ExperimentConfig()
    >>> record = make_record(config.name, config, config.task(), {"success": True},
    ...                      iterations=100, wall_time=2.0, history=None)
    >>> record["success"], record["iterations_per_second"]
    (True, 50.0)
    """
    return {
        "name": name,
        "config": config.to_config(),
        "task": task.to_config(),
        "subsets": [list(subset) for subset in task.subsets],
        **verdict,
        "iterations": iterations,
        "wall_time": wall_time,
        "iterations_per_second": iterations / wall_time if wall_time > 0 else None,
        "history": history,
        **extra,
    }
