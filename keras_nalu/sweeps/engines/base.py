"""What every replica engine shares: setup, the loop, evaluation, records.

An engine trains R runs of the arithmetic task together as one vectorized
model: the replicas' weights are stacked along a leading axis and one
template Keras model computes every replica's loss with
`model.stateless_call`, so each unit's formula (regularizers included) is the
one in its layer. The engines differ only in how a block of training steps
and an evaluation are compiled: `engines/tensorflow.py` (`tf.function`,
`tf.vectorized_map`) and `engines/jax.py` (`jax.jit`, `jax.vmap`,
`jax.lax.scan`). Everything else lives here, the way Keras shares
`keras/src/trainers/trainer.py` between its backends' trainers; the backup
file (`save_backup`, `restore_backup`, `read_backup`) is in `backup.py`.

Per replica, everything follows `run_experiment` with that replica's config:

- initialization: the weights `build_model` gives after
  `keras.utils.set_random_seed(seed)`;
- λ(t): the preset's `RegularizationSchedule`, held over each block of
  `steps_per_execution` steps, as in `model.fit`;
- constraints: each weight's constraint, per replica, after every step;
- evaluation every `eval_every` steps on the task's fixed validation and test
  sets, judged by `summarize_evaluations` against `success_threshold` (as an
  `EvaluationSummary` folded as the run goes, so no list is needed);
- divergence: a replica whose loss or weights stop being finite is frozen at
  its last finite state and recorded as diverged; the others never see it.

Why one module of about 910 lines: it is one class, `ReplicaRun`, whose
setup, loop, evaluation and records share one state (as Keras' `Trainer`
is one file), plus `train_replicas` and `train_batched`, which run it.

Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §4.1.1
and App. C.2 (100 seeds per configuration).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import keras
import numpy as np

from keras_nalu._validation import check_seeds, is_integer
from keras_nalu.callbacks import RegularizationSchedule, find_scheduled_regularizers
from keras_nalu.evaluation import (
    Evaluation,
    EvaluationSummary,
    sparsity_error,
)
from keras_nalu.experiments import (
    ExperimentConfig,
    build_experiment_model,
    execution_size,
    total_steps,
)
from keras_nalu.models import get_preset
from keras_nalu.sweeps.engines.backup import (
    partial_path,
    restore_backup,
    save_backup,
)

# Norm clipping mixes the replicas if Keras applies it to the stacked
# gradients: the engines clip each replica's gradient by its own norm instead.
_PER_REPLICA_OPTIONS = ("clipnorm", "global_clipnorm")
_NON_ELEMENTWISE_OPTIONS = ("use_ema",)

RECIPE_FIELDS = (
    "model",
    "iterations",
    "hidden_size",
    "learning_rate",
    "optimizer",
    "epsilon",
    "sparsity",
    "sparsity_start",
    "sparsity_end",
    "input_size",
    "batch_size",
    "eval_every",
    "stop_on_success",
    "steps_per_execution",
)
"""The config fields that fix the model, its training and the loop: replicas
trained together must agree on them. They may differ in the task's data
(operation, ranges, subsets) and their seeds."""


class NotVectorizableError(ValueError):
    """A preset that an engine cannot train as replicas (sweeps then train its
    seeds one after the other with `run_experiment`)."""


class TimeLimitReached(RuntimeError):
    """A run reached its `deadline` and stopped after saving its backup.

    Training the same configuration and seeds again with the same backup
    file continues from where it stopped (`train_replicas`, `run_sweep`).
    """


# Set by the first Ctrl-C inside `stop_at_interrupt`; read by every run's loop.
_stop_requested = threading.Event()


def _request_stop(signum, frame) -> None:
    if _stop_requested.is_set():  # a second Ctrl-C: stop now, as Python does
        raise KeyboardInterrupt
    _stop_requested.set()


@contextlib.contextmanager
def stop_at_interrupt():
    """Within it, Ctrl-C stops every run at its next evaluation, after a backup.

    The first SIGINT asks each `ReplicaRun.train` (in any thread) to stop at
    its next evaluation: it writes its backup there, if it has one, and
    raises `KeyboardInterrupt`, so a killed sweep loses nothing of its chunk
    in training. A second SIGINT raises `KeyboardInterrupt` at once. Outside
    the main thread (Python delivers signals there only), or within another
    `stop_at_interrupt`, the block runs as it is.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is _request_stop
    ):
        yield
        return
    previous = signal.signal(signal.SIGINT, _request_stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous or signal.default_int_handler)
        _stop_requested.clear()


def _model_state(model) -> list:
    """The model's non-trainable variables other than the λ strengths.

    E.g. the state of a `keras.random.SeedGenerator` a layer draws noise
    with: per replica, it is carried and updated as the replica trains.
    """
    strengths = {id(r.current_strength) for r in find_scheduled_regularizers(model)}
    return [v for v in model.non_trainable_variables if id(v) not in strengths]


def vectorizable(config: ExperimentConfig) -> bool:
    """Whether `train_replicas` can train `config`'s preset as replicas.

    Presets whose callbacks act on one model at a time (the iNALU's
    loss-gated regularization and reinitialization) cannot be vectorized;
    sweeps train their seeds one after the other with `run_experiment`.

    Example:

    >>> from keras_nalu.experiments import ExperimentConfig
    >>> vectorizable(ExperimentConfig(model="nmu"))
    True
    >>> vectorizable(ExperimentConfig(model="inalu"))
    False
    """
    return not get_preset(config.model).callbacks


def recipe(config: ExperimentConfig) -> tuple:
    """The values of `RECIPE_FIELDS`: equal recipes can train as one run."""
    return tuple(getattr(config, name) for name in RECIPE_FIELDS)


def _check_configs(configs) -> list[ExperimentConfig]:
    configs = list(configs)
    if not configs:
        raise ValueError("ReplicaRun expects at least one config. Received: []")
    for config in configs:
        if not isinstance(config, ExperimentConfig):
            raise ValueError(
                f"ReplicaRun expects ExperimentConfig objects. Received: {config!r}"
            )
    first = recipe(configs[0])
    for config in configs[1:]:
        if recipe(config) != first:
            differ = [
                name
                for name, a, b in zip(RECIPE_FIELDS, first, recipe(config))
                if a != b
            ]
            raise ValueError(
                "ReplicaRun trains configs together only if they share the model "
                f"and its training; these differ in {differ}. Received: "
                f"{configs[0].name} and {config.name}"
            )
    keys = [(c.seed, *dataclasses.astuple(c)) for c in configs]
    if len(set(keys)) != len(keys):
        raise ValueError("ReplicaRun expects distinct runs; a config repeats.")
    return configs


_BUILD_LOCK = threading.Lock()


def build_replica(config: ExperimentConfig):
    """The model and callbacks `run_experiment` builds for `config`.

    Seeding Keras is process-wide, so runs built in several threads (a sweep
    over several devices) take turns: each gets exactly its seed's weights.
    """
    with _BUILD_LOCK:
        keras.utils.set_random_seed(config.seed)
        return build_experiment_model(config)


_WITH_ENGINE = {}


def _with_engine(cls, engine: str | None):
    """`cls` on an engine: the engine's class, or a subclass of `cls` and it.

    A subclass of `ReplicaRun` that names no engine (e.g. one overriding
    `training_batch`) runs on the Keras backend's engine, its methods first.
    """
    from keras_nalu.sweeps.engines import engine_class

    if cls.engine is not None:
        return cls
    engine_cls = engine_class(engine)
    if cls is ReplicaRun:
        return engine_cls
    key = (cls, engine_cls)
    if key not in _WITH_ENGINE:
        _WITH_ENGINE[key] = type(
            cls.__name__,
            (cls, engine_cls),
            {"__module__": cls.__module__, "__qualname__": cls.__qualname__},
        )
    return _WITH_ENGINE[key]


class ReplicaRun:
    """R seeds of one `ExperimentConfig` trained as one vectorized model.

    With W_r the weights of replica r, stacked as W = [W_1, ..., W_R], each
    step minimizes

        L(W) = Σ_r [ MSE(f(x_r; W_r), t_r) + λ(t) · Σ_layers R_sparse(W_r) ],

    f being the template model (`stateless_call`) and (x_r, t_r) batch t of
    replica r's stream; ∂L/∂W_r is replica r's own gradient, and Adam
    (element-wise) updates each replica as if it were trained alone.

    `ReplicaRun(...)` returns the engine of the Keras backend in use: the
    TensorFlow engine under `KERAS_BACKEND=tensorflow`, the JAX engine under
    `KERAS_BACKEND=jax` (or the one named by `engine`). Build it, call
    `train()`, then read `results()` (one `run_experiment`-style record per
    replica) or `model_for(r)` (a Keras model holding replica r's weights).
    `train(backup=…)` saves the whole state now and then (`save_backup`), and
    a new run of the same configuration and seeds continues from it
    (`restore_backup`). `ReplicaRun.batched(configs)` trains runs of
    different tasks (operation, ranges, subsets) that share the model and its
    training as one run (JAX engine).

    Args:
        config: the configuration; its `seed` is ignored (see `seeds`).
        seeds: the replicas' seeds, distinct integers >= 0.
        engine: "tensorflow", "jax", or None for the Keras backend's.
        history: keep every evaluation in memory for the records' `history`
            (True); False keeps only each replica's `EvaluationSummary`,
            which is all the verdict needs, and gives `history=None` (a
            sweep chunk of 1,000 replicas × 5,000 evaluations would
            otherwise hold 5·10⁶ `Evaluation` objects).

    Example:

    >>> from keras_nalu.experiments import ExperimentConfig
    >>> from keras_nalu.sweeps.replicas import ReplicaRun
    >>> config = ExperimentConfig(model="nau", input_size=10, iterations=200,
    ...                           eval_every=100)
    >>> run = ReplicaRun(config, seeds=[0, 1])
    >>> run.train(progress=False)
    >>> [record["config"]["seed"] for record in run.results()]
    [0, 1]

    Reference: Madsen & Johansen (2020), §4.1.1 and App. C.2.
    """

    #: the engine's name, recorded in every result ("tensorflow", "jax").
    engine = None
    #: whether the engine trains runs of different tasks together (`batched`).
    supports_batched = False
    #: whether the engine carries per-replica non-trainable state (noise seeds).
    supports_state = False

    def __new__(cls, *args, engine: str | None = None, **kwargs):
        return super().__new__(_with_engine(cls, engine))

    def __init__(
        self,
        config: ExperimentConfig,
        seeds: Sequence[int],
        engine: str | None = None,
        history: bool = True,
    ):
        seeds = check_seeds("train_replicas", seeds)
        configs = [dataclasses.replace(config, seed=s) for s in seeds]
        self._setup(configs, single=config, history=history)

    @classmethod
    def batched(
        cls,
        configs: Sequence[ExperimentConfig],
        engine: str | None = None,
        history: bool = True,
    ):
        """One run of several configurations, each with its own seed.

        The configs must share the model and its training (`RECIPE_FIELDS`)
        and may differ in the task: operation, subset geometry, ranges and
        seed. Each replica's record equals its config's run alone, up to
        float rounding.

        Args:
            configs: the runs, one `ExperimentConfig` each (seed included).
            engine: as for `ReplicaRun`; only engines with `supports_batched`.
            history: as for `ReplicaRun`.

        Returns:
            The `ReplicaRun`.
        """
        klass = _with_engine(cls, engine)
        configs = _check_configs(configs)
        single = len({dataclasses.replace(c, seed=0) for c in configs}) == 1
        if not single and not klass.supports_batched:
            raise ValueError(
                f"The {klass.engine} engine trains one configuration at a time; "
                "batched runs of different tasks need the JAX engine "
                "(KERAS_BACKEND=jax)."
            )
        run = object.__new__(klass)
        run._setup(configs, single=configs[0] if single else None, history=history)
        return run

    # --- construction -------------------------------------------------------

    def _setup(self, configs, single, history: bool) -> None:
        if not isinstance(history, bool):
            raise ValueError(
                "ReplicaRun expects history to be True or False. "
                f"Received: history={history!r}"
            )
        self.configs = _check_configs(configs)
        self.seeds = [c.seed for c in self.configs]
        # `config` is the shared configuration (seed ignored) of a plain run.
        self.config = single if single is not None else self.configs[0]
        self.single = single is not None
        self.tasks = [c.task() for c in self.configs]
        self.task = self.tasks[0]
        self.thresholds = np.array(
            [c.success_threshold(t) for c, t in zip(self.configs, self.tasks)]
        )
        self.threshold = float(self.thresholds[0])
        self.total_steps = total_steps(self.config)
        self._block = execution_size(self.config)
        self._build_replicas()
        # Per replica: the verdict's fold, and (with `history`) every
        # evaluation this object made or restored.
        self._summaries = [EvaluationSummary(float(t)) for t in self.thresholds]
        self._history = [[] for _ in self.configs] if history else None
        self._iterations = [None] * self.num_replicas
        self._loss_diverged = [False] * self.num_replicas
        self._active = np.ones(self.num_replicas, dtype=bool)
        self.step = 0
        self.wall_time = 0.0
        self._build_engine()

    @property
    def num_replicas(self) -> int:
        return len(self.configs)

    def _build_replicas(self) -> None:
        weights, states, template, template_callbacks = [], [], None, []
        for config in self.configs:
            model, callbacks = build_replica(config)
            weights.append(
                [keras.ops.convert_to_numpy(v) for v in model.trainable_variables]
            )
            states.append([keras.ops.convert_to_numpy(v) for v in _model_state(model)])
            if template is None:
                template, template_callbacks = model, callbacks
            del model
        gc.collect()
        self.template = template
        extra = [
            c for c in template_callbacks if not isinstance(c, RegularizationSchedule)
        ]
        if extra:
            raise NotVectorizableError(
                f"train_replicas cannot vectorize preset {self.config.model!r}: it "
                f"trains with {[type(c).__name__ for c in extra]}, which act on one "
                "model at a time. Use run_experiment for each seed."
            )
        schedules = [
            c for c in template_callbacks if isinstance(c, RegularizationSchedule)
        ]
        self._schedule = schedules[0] if schedules else None
        self._regularizers = (
            find_scheduled_regularizers(template) if self._schedule else []
        )
        self._state_variables = _model_state(template)
        if self._state_variables and not self.supports_state:
            raise NotVectorizableError(
                f"The {self.engine} engine trains models without non-trainable "
                f"state; preset {self.config.model!r} has "
                f"{[v.path for v in self._state_variables]}. Use the JAX engine "
                "(KERAS_BACKEND=jax) or run_experiment for each seed."
            )
        self._initial_state = [
            np.stack([replica[i] for replica in states])
            for i in range(len(self._state_variables))
        ]
        self._variables = list(template.trainable_variables)
        self._initial_weights = [
            np.stack([replica[i] for replica in weights])
            for i in range(len(self._variables))
        ]
        self._constraints = [v.constraint for v in self._variables]
        optimizer_config = template.optimizer.get_config()
        for option in _NON_ELEMENTWISE_OPTIONS:
            if optimizer_config.get(option):
                raise ValueError(
                    f"train_replicas needs an element-wise optimizer; {option} "
                    "mixes the replicas. Received: "
                    f"{option}={optimizer_config[option]!r}"
                )
        # Per replica: the norm of each weight's gradient (clipnorm) or of all
        # of them (global_clipnorm), as Keras clips one model's.
        self._clipnorm = optimizer_config.get("clipnorm")
        self._global_clipnorm = optimizer_config.get("global_clipnorm")
        if self._clipnorm or self._global_clipnorm:
            # Keras then ignores clipvalue (and global_clipnorm, if both).
            self._global_clipnorm = None if self._clipnorm else self._global_clipnorm
            optimizer_config["clipvalue"] = None
        for option in _PER_REPLICA_OPTIONS:
            optimizer_config[option] = None
        self._optimizer_config = optimizer_config
        loss = keras.losses.get(template.loss)
        if isinstance(loss, keras.losses.Loss):
            self._loss = loss
        else:  # a per-sample function, e.g. "mse": the mean over the batch
            self._loss = lambda t, y: keras.ops.mean(loss(t, y))

    def _clip_norms(self, gradients, ops):
        """Each replica's gradients clipped as Keras clips one model's.

        As in Keras' optimizers: with `clipnorm`, g · c / max(‖g‖, c) for each
        weight's gradient; else with `global_clipnorm`, every gradient times
        c · min(1/‖G‖, 1/c), ‖G‖ the norm of all of them together. Here the
        norms are each replica's own (over all but the leading axis), so no
        replica's step depends on another's.

        Args:
            gradients: stacked `[R, ...]` gradients, one per weight.
            ops: the backend's array functions (`sqrt`, `sum`, `square`,
                `maximum`, `minimum`, `reshape`), e.g. `jax.numpy`.
        """

        def squares(values):
            axes = tuple(range(1, len(values.shape)))
            return ops.sum(ops.square(values), axis=axes)

        def per_replica(factor, values):
            return ops.reshape(factor, [-1] + [1] * (len(values.shape) - 1))

        if self._clipnorm:
            clip = self._clipnorm
            return [
                g * clip / per_replica(ops.maximum(ops.sqrt(squares(g)), clip), g)
                for g in gradients
            ]
        if self._global_clipnorm:
            clip = self._global_clipnorm
            norm = ops.sqrt(sum(squares(g) for g in gradients))
            # + (norm - norm): NaN for a non-finite norm, as in Keras.
            scale = clip * ops.minimum(1.0 / norm, 1.0 / clip) + (norm - norm)
            return [g * per_replica(scale, g) for g in gradients]
        return gradients

    def _new_optimizer(self, stacked_variables):
        """The template's optimizer, built on the stacked weights."""
        optimizer = type(self.template.optimizer).from_config(self._optimizer_config)
        optimizer.build(stacked_variables)
        return optimizer

    def _eval_groups(self) -> list[tuple[np.ndarray, tuple, tuple]]:
        """Replicas sharing validation and test inputs, with those sets.

        Returns:
            `(replicas, (x_val, t_val), (x_test, t_test))` per group, the
            targets stacked per replica of the group: `(n, size, 1)`.
        """
        groups = {}
        for r, task in enumerate(self.tasks):
            key = (
                task.interpolation_range,
                task.extrapolation_range,
                task.validation_size,
                task.test_size,
                task.validation_seed,
                task.test_seed,
            )
            groups.setdefault(key, []).append(r)
        result = []
        for members in groups.values():
            validation = [self.tasks[r].validation_data() for r in members]
            test = [self.tasks[r].test_data() for r in members]
            result.append(
                (
                    np.array(members),
                    (validation[0][0], np.stack([t for _, t in validation])),
                    (test[0][0], np.stack([t for _, t in test])),
                )
            )
        return result

    # --- what an engine implements ------------------------------------------

    def _build_engine(self) -> None:
        """Creates the engine's state from `_initial_weights` and the optimizer."""
        raise NotImplementedError

    def _train_block(self, start: int, strengths: np.ndarray) -> None:
        """Trains steps `start … start + len(strengths) - 1`.

        `strengths[i, j]` is λ of scheduled regularizer j at step start + i.
        """
        raise NotImplementedError

    def _replica_errors(self) -> tuple[np.ndarray, np.ndarray]:
        """Every replica's interpolation and extrapolation MSE now, float64 `[R]`."""
        raise NotImplementedError

    def _diverged_at(self) -> np.ndarray:
        """`[R]` int: the step at which each replica diverged, or -1."""
        raise NotImplementedError

    def _set_active(self, active: np.ndarray) -> None:
        """Tells the compiled step which replicas still train."""
        raise NotImplementedError

    def _state_arrays(self) -> list[np.ndarray]:
        """The engine's whole state as arrays, for `save_backup`."""
        raise NotImplementedError

    def _load_state_arrays(self, arrays: list[np.ndarray]) -> None:
        """Restores `_state_arrays()` (shapes already checked)."""
        raise NotImplementedError

    def stacked_weights(self) -> list[np.ndarray]:
        """Every trainable weight, stacked over replicas: `[R, ...]` arrays."""
        raise NotImplementedError

    def stacked_optimizer_state(self) -> list[np.ndarray]:
        """Every per-weight optimizer variable (Adam's m, v), stacked: `[R, ...]`."""
        raise NotImplementedError

    def stacked_state(self) -> list[np.ndarray]:
        """The model's other non-trainable variables, stacked: `[R, ...]`."""
        return []

    def _state_shapes(self) -> list[tuple]:
        return [tuple(a.shape) for a in self._state_arrays()]

    # --- evaluation -----------------------------------------------------------

    def _strengths(self, start: int, stop: int) -> np.ndarray:
        """λ of every scheduled regularizer for steps start … stop - 1."""
        table = np.zeros((stop - start, len(self._regularizers)), np.float32)
        for row, step in enumerate(range(start, stop)):
            held = step - step % self._block
            for j, regularizer in enumerate(self._regularizers):
                table[row, j] = self._schedule.strength_for(regularizer, held)
        return table

    def _sparsity_errors(self, replicas) -> dict[int, float]:
        stacked = self.stacked_weights()
        errors = {}
        for r in replicas:
            for variable, values in zip(self._variables, stacked):
                variable.assign(values[r])
            errors[r] = sparsity_error(self.template)
        return errors

    def _evaluate(self, step: int) -> None:
        interpolation, extrapolation = self._replica_errors()
        replicas = np.flatnonzero(self._active)
        errors = self._sparsity_errors(replicas)
        for r in replicas:
            evaluation = Evaluation(
                step=step,
                interpolation_mse=float(interpolation[r]),
                extrapolation_mse=float(extrapolation[r]),
                sparsity_error=errors[r],
            )
            self._record(r, evaluation)
            finite = math.isfinite(evaluation.interpolation_mse) and math.isfinite(
                evaluation.extrapolation_mse
            )
            solved = evaluation.extrapolation_mse < self.thresholds[r]
            if not finite or (self.config.stop_on_success and solved):
                self._stop(r, step)
        self._set_active(self._active)

    def _record(self, r: int, evaluation: Evaluation) -> None:
        self._summaries[r].update(evaluation)
        if self._history is not None:
            self._history[r].append(evaluation)

    def _stop(self, r: int, step: int) -> None:
        self._active[r] = False
        self._iterations[r] = step

    def _collect_divergence(self) -> None:
        diverged_at = self._diverged_at()
        for r in np.flatnonzero(self._active & (diverged_at >= 0)):
            step = int(diverged_at[r])
            self._loss_diverged[r] = True
            self._record(r, Evaluation(step, math.nan, math.nan, math.nan))
            self._active[r] = False
            self._iterations[r] = step

    # --- the loop -------------------------------------------------------------

    def _description(self) -> str:
        if self.single:
            return (
                f"{self.config.model}-{self.config.operation} "
                f"×{self.num_replicas} seeds"
            )
        return f"{self.config.model} ×{self.num_replicas} runs"

    def train(
        self,
        progress: bool | Callable[[int], None] = True,
        backup: str | os.PathLike | None = None,
        backup_every: float = 600.0,
        deadline: float | None = None,
    ) -> None:
        """Trains every replica for the configuration's iterations.

        Evaluates at step 0 and every `eval_every` steps; a replica stops when
        it diverges, or (with `stop_on_success`) at its first solved
        evaluation; the loop ends when none is left or at the last step.
        Called again, e.g. after `restore_backup`, it continues from `step`.

        Args:
            progress: True for a tqdm bar over the steps, False for none, or a
                callable that receives the number of steps just done (a
                restored run first reports the steps it starts from).
            backup: a file that `save_backup` writes after an evaluation once
                `backup_every` seconds have passed since the last one, so a
                killed run loses at most that much training.
            backup_every: seconds between two backups; 0 writes one after
                every evaluation.
            deadline: a `time.monotonic()` time: at the first evaluation at
                or after it, the run writes its backup (if it has one) and
                raises `TimeLimitReached`, unless it has finished. None for
                no limit.

        Raises:
            TimeLimitReached: the run stopped at `deadline`.
            KeyboardInterrupt: Ctrl-C (see `stop_at_interrupt`, which this
                method uses): the run stopped at its next evaluation, after
                writing its backup there.
        """
        if backup_every < 0:
            raise ValueError(
                f"train expects backup_every >= 0 seconds. "
                f"Received: backup_every={backup_every!r}"
            )
        bar = None
        if progress is True:
            from tqdm.auto import tqdm

            bar = tqdm(
                total=self.total_steps,
                initial=self.step,
                desc=self._description(),
                unit="step",
                dynamic_ncols=True,
            )
        elif callable(progress) and self.step:
            progress(self.step)
        started = last_backup = time.perf_counter()
        try:
            with stop_at_interrupt():
                if _stop_requested.is_set():  # asked before this run started
                    raise self._interrupted(backup if self.step else None)
                if self.step == 0 and not any(s.evaluations for s in self._summaries):
                    self._evaluate(0)
                every = self.config.eval_every
                while self.step < self.total_steps and self._active.any():
                    stop = min((self.step // every + 1) * every, self.total_steps)
                    self._train_block(self.step, self._strengths(self.step, stop))
                    done, self.step = stop - self.step, stop
                    self._collect_divergence()
                    self._evaluate(self.step)
                    now = time.perf_counter()
                    out_of_time = deadline is not None and time.monotonic() >= deadline
                    interrupted = _stop_requested.is_set()
                    if backup is not None and (
                        out_of_time or interrupted or now - last_backup >= backup_every
                    ):
                        self.wall_time += now - started
                        started = last_backup = now
                        self.save_backup(backup)
                    if bar is not None:
                        bar.update(done)
                        bar.set_postfix(running=int(self._active.sum()), refresh=False)
                    elif callable(progress):
                        progress(done)
                    if self.step < self.total_steps and self._active.any():
                        if out_of_time:
                            raise TimeLimitReached(
                                f"{self._description()} stopped at its time limit at "
                                f"step {self.step} of {self.total_steps}"
                                + ("" if backup is None else f"; backup: {backup}")
                            )
                        if interrupted:
                            raise self._interrupted(backup)
        finally:
            self.wall_time += time.perf_counter() - started
            if bar is not None:
                bar.close()
        for r in np.flatnonzero(self._active):
            self._iterations[r] = self.step

    def _interrupted(self, backup) -> KeyboardInterrupt:
        """What Ctrl-C raises: where the run stopped, and its backup there."""
        where = f"{self._description()} stopped at step {self.step:,} of "
        where += f"{self.total_steps:,}"
        if backup is not None and Path(backup).exists():
            where += f", backed up to {backup}: run it again to continue"
        return KeyboardInterrupt(where)

    # --- backup and restore -----------------------------------------------------

    def save_backup(self, path: str | os.PathLike) -> None:
        """Writes the run's whole state at `step` to one `.npz` file.

        The state is every replica's weights and optimizer variables (Adam's
        moments and step count), which replicas are still running, and each
        replica's `EvaluationSummary` (not the evaluations themselves, so the
        file's size does not grow as the run goes on); the training batches
        need none, as batch b is a function of b. The file is written beside
        `path` and renamed over it, so it is always a complete backup.
        `restore_backup` reads it back.
        """
        save_backup(self, path)

    def restore_backup(self, path: str | os.PathLike) -> bool:
        """Continues from a `save_backup` file of this configuration and seeds.

        The verdicts continue exactly. The records' `history` then holds
        the evaluations after the backup's step only (a backup holds no
        list of evaluations), while their `evaluations` counts all of them;
        a backup of format 1, which held the list, restores it whole.

        Returns:
            True if the file existed and the run now stands at its step;
            False if there is no such file (the run is untouched).

        Raises:
            ValueError: the file is not a backup of this configuration and
                these seeds, or of another engine (the run is untouched).
        """
        return restore_backup(self, path)

    # --- results --------------------------------------------------------------

    def device(self) -> str:
        """The device the engine trains on, in words (e.g. "cpu")."""
        return "cpu"

    def results(self) -> list[dict]:
        """One record per replica, with the fields of `run_experiment`'s record.

        `wall_time` is the wall time of the whole vectorized run (shared by
        its replicas); `iterations_per_second` is per replica, and `replicas`
        says how many replicas trained together; `engine` and `device` say
        where. `evaluations` counts every evaluation of the replica;
        `history` lists them as `(step, interpolation_mse,
        extrapolation_mse, sparsity_error)` tuples, except those before the
        step of a (format 2) backup this run was restored from, and is None
        for a run built with `history=False`.
        """
        records = []
        device = self.device()
        for r, config in enumerate(self.configs):
            summary = self._summaries[r]
            verdict = summary.result(loss_diverged=self._loss_diverged[r])
            history = None
            if self._history is not None:
                history = [dataclasses.astuple(e) for e in self._history[r]]
            iterations = self._iterations[r]
            if iterations is None:
                iterations = self.step
            records.append(
                {
                    "name": config.name,
                    "config": config.to_config(),
                    "task": self.tasks[r].to_config(),
                    "subsets": [list(subset) for subset in self.tasks[r].subsets],
                    **verdict,
                    "threshold": float(self.thresholds[r]),
                    "evaluations": summary.evaluations,
                    "iterations": iterations,
                    "wall_time": self.wall_time,
                    "iterations_per_second": (
                        iterations / self.wall_time if self.wall_time > 0 else None
                    ),
                    "history": history,
                    "replicas": self.num_replicas,
                    "engine": self.engine,
                    "device": device,
                }
            )
        return records

    def weights(self, r: int) -> list[np.ndarray]:
        """Replica r's trainable weights, in `model.trainable_variables` order."""
        return [w[r] for w in self.stacked_weights()]

    def set_weights(self, r: int, weights: Sequence[np.ndarray]) -> None:
        """Sets replica r's trainable weights; `weights(r)` reads them back.

        Starts replica r from given weights (e.g. a hand-set solution, to see
        whether training keeps it); the other replicas and the optimizer
        variables are untouched.

        Args:
            r: the replica, `0 <= r < num_replicas`.
            weights: one array per trainable weight, in
                `model.trainable_variables` order, each of that weight's shape.

        Raises:
            ValueError: `r` is not a replica, or `weights` do not match the
                model's weights in number or shape.

        Example:

        >>> import numpy as np
        >>> from keras_nalu.experiments import ExperimentConfig
        >>> from keras_nalu.sweeps.replicas import ReplicaRun
        >>> run = ReplicaRun(ExperimentConfig(model="nau", input_size=10,
        ...                                   iterations=10, eval_every=10), [4, 7])
        >>> run.set_weights(1, [np.ones((10, 2)), np.ones((2, 1))])
        >>> float(run.weights(1)[0].sum()), bool(run.weights(0)[0].sum() == 20)
        (20.0, False)
        """
        stacked = self.stacked_weights()
        if not is_integer(r) or not 0 <= r < self.num_replicas:
            raise ValueError(
                f"set_weights expects r to be a replica, 0 <= r < "
                f"{self.num_replicas}. Received: r={r!r}"
            )
        shapes = [tuple(w.shape[1:]) for w in stacked]
        given = [tuple(np.shape(w)) for w in weights]
        if given != shapes:
            raise ValueError(
                f"set_weights expects weights of shapes {shapes}. "
                f"Received: shapes {given}"
            )
        arrays = self._state_arrays()  # the trainable weights come first
        for i, values in enumerate(weights):
            arrays[i] = np.array(arrays[i])
            arrays[i][r] = values
        self._load_state_arrays(arrays)

    def optimizer_state(self, r: int) -> list[np.ndarray]:
        """Replica r's slice of every per-weight optimizer variable (Adam's m, v)."""
        return [v[r] for v in self.stacked_optimizer_state()]

    def model_for(self, r: int) -> keras.Model:
        """A compiled Keras model of the configuration holding replica r's weights.

        Example:

        >>> from keras_nalu.experiments import ExperimentConfig
        >>> from keras_nalu.sweeps.replicas import ReplicaRun
        >>> run = ReplicaRun(ExperimentConfig(model="nau", input_size=10,
        ...                                   iterations=10, eval_every=10), [4, 7])
        >>> model = run.model_for(1)
        >>> [tuple(w.shape) for w in model.trainable_weights]
        [(10, 2), (2, 1)]
        """
        model, _ = build_replica(self.configs[r])
        for variable, values in zip(model.trainable_variables, self.weights(r)):
            variable.assign(values)
        for variable, values in zip(_model_state(model), self.stacked_state()):
            variable.assign(values[r])
        return model


def train_replicas(
    config: ExperimentConfig,
    seeds: Sequence[int],
    progress: bool | Callable[[int], None] = True,
    backup: str | os.PathLike | None = None,
    backup_every: float = 600.0,
    engine: str | None = None,
    deadline: float | None = None,
    history: bool = True,
) -> list[dict]:
    """Trains `config` once per seed, all seeds in one vectorized loop.

    Each record equals, up to float rounding, what the same engine gives for
    that seed alone; on the TensorFlow engine, also what `run_experiment`
    returns for `dataclasses.replace(config, seed=s)` (same initialization,
    data stream, schedule, evaluations and verdict). The JAX engine draws
    its training batches with JAX's own generator, so its runs are other
    samples of the same experiment: the success rates agree, not each seed.

    With `backup`, the run saves its state to that file every `backup_every`
    seconds, and a later call with the same file continues where the last
    backup left it, with the same records as an uninterrupted run (as Keras'
    `BackupAndRestore` does for `fit`), except that their `history` lacks
    the evaluations before the backup's step (see `ReplicaRun.results`).
    The file is deleted once training ends.

    Args:
        config: the configuration (its `seed` is replaced by each of `seeds`).
        seeds: distinct integers >= 0.
        progress: True for a progress bar, False for none, or a callable
            receiving the number of steps done after each evaluation block.
        backup: None, or the backup file (see `ReplicaRun.save_backup`).
        backup_every: seconds between two backups; 0 after every evaluation.
        engine: "tensorflow", "jax", or None for the Keras backend's.
        deadline: a `time.monotonic()` time at which the run stops, after
            writing `backup` (see `ReplicaRun.train`); None for no limit.
        history: False for records without `history` (None), which then
            need no list of every evaluation in memory (see `ReplicaRun`).

    Returns:
        One record per seed, in the order of `seeds` (see
        `ReplicaRun.results`).

    Raises:
        ValueError: bad seeds, a preset that cannot be vectorized, a backend
            without an engine, or a `backup` file of another configuration,
            other seeds or another engine.
        TimeLimitReached: the run stopped at `deadline`; the same call again
            continues it from `backup`.

    Example:

    >>> from keras_nalu.experiments import ExperimentConfig
    >>> from keras_nalu.sweeps.replicas import train_replicas
    >>> records = train_replicas(
    ...     ExperimentConfig(model="nau", input_size=10, iterations=100,
    ...                      eval_every=100), seeds=[0, 1, 2], progress=False)
    >>> [(r["config"]["seed"], r["iterations"]) for r in records]
    [(0, 100), (1, 100), (2, 100)]

    Reference: Madsen & Johansen (2020), §4.1.1 and App. C.2.
    """
    run = ReplicaRun(config, seeds, engine=engine, history=history)
    return _train_and_clean(run, progress, backup, backup_every, deadline)


def train_batched(
    configs: Sequence[ExperimentConfig],
    progress: bool | Callable[[int], None] = True,
    backup: str | os.PathLike | None = None,
    backup_every: float = 600.0,
    engine: str | None = None,
    deadline: float | None = None,
    history: bool = True,
) -> list[dict]:
    """Trains several configurations (each with its seed) as one vectorized run.

    `train_replicas` for runs that differ in their task (operation, ranges,
    subsets) but share the model and its training (`RECIPE_FIELDS`), e.g.
    every operation of a table row: on a GPU, thousands of small runs fill
    the device together. Needs an engine with `supports_batched` (JAX).

    Args:
        configs: the runs, one `ExperimentConfig` each (seed included).
        progress, backup, backup_every, engine, deadline, history: as for
            `train_replicas`.

    Returns:
        One record per config, in order.
    """
    run = ReplicaRun.batched(configs, engine=engine, history=history)
    return _train_and_clean(run, progress, backup, backup_every, deadline)


def _train_and_clean(run, progress, backup, backup_every, deadline) -> list[dict]:
    if backup is not None:
        run.restore_backup(backup)
    run.train(
        progress=progress, backup=backup, backup_every=backup_every, deadline=deadline
    )
    if backup is not None:
        Path(backup).unlink(missing_ok=True)
        partial_path(Path(backup)).unlink(missing_ok=True)  # left by a kill mid-write
    return run.results()
