"""Many seeds of one configuration in one training loop: vectorized replicas.

R independent runs of one `ExperimentConfig` that differ only in their seed are
trained together. Their weights are stacked along a leading replica axis and one
template Keras model computes every replica's loss with
`model.stateless_call(weights_r, ...)` under `tf.vectorized_map`, so each unit's
formula, regularizers included, is the one in its layer. The loss is the sum of
the replicas' losses, so the gradient with respect to replica r's weights is the
gradient of replica r's own loss, and Adam (element-wise) updates each replica
as if it were trained alone. The whole block of steps between two evaluations
is one `tf.function` (a `tf.range` loop): no Python runs per step.

Per replica, everything follows `run_experiment` with that seed:

- initialization: the weights `build_model` gives after
  `keras.utils.set_random_seed(seed_r)` (R models are built and stacked);
- data: batch b of `ArithmeticTask(seed=seed_r).train_dataset()`, bit for bit
  (each replica's task draws it with `train_inputs(b)` and labels it with its
  own `target`), so each replica keeps its own stream and subset offset; the
  batch of step b + 1 is drawn while step b trains;
- λ(t): the preset's `RegularizationSchedule`, held constant over each block of
  `steps_per_execution` steps as the single run's callback does; all replicas
  share it;
- constraints: each weight's constraint applied per replica after every step;
- evaluation every `eval_every` steps on the fixed validation and test inputs
  with each replica's own targets, judged by `summarize_evaluations` against
  the same `success_threshold` (it depends on the geometry only);
- divergence: a replica whose loss or weights stop being finite is frozen at
  its last finite state and recorded as diverged; the others never see it
  (their updates depend on their own slices only, and a frozen replica's
  update is discarded with `tf.where`, never multiplied by 0).

Equivalence is up to float32 rounding, not bit for bit: the batched kernels
(BatchMatMul and its gradient) sum in another order than the single run's
MatMul, about one ulp per step. Where Adam keeps a weight oscillating around
a discrete value after the task is solved (large learning rates), such
differences can grow to the size of one Adam step; the records (success,
solved-at, best step) are the same in the tested cases.

Speed: most of a step's time goes to drawing the random inputs (1.28·10⁶
Philox numbers per step for 100 replicas of the default task) that keep each
replica's stream identical to its single run; `benchmarks/speed.py --profile`
measures the rate and this split on the machine at hand.

Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §4.1.1 and
App. C.2 (100 seeds per configuration).
"""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import os
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from keras_nalu.callbacks import RegularizationSchedule, find_scheduled_regularizers
from keras_nalu.evaluation import (
    Evaluation,
    sparsity_error,
    success_threshold,
    summarize_evaluations,
)
from keras_nalu.experiment import ExperimentConfig
from keras_nalu.models import build_model, get_preset

_NON_ELEMENTWISE_OPTIONS = ("clipnorm", "global_clipnorm", "use_ema")
_BACKUP_FORMAT = 1


def execution_size(config: ExperimentConfig) -> int:
    """The single run's steps per execution: λ(t) changes only at its multiples."""
    return math.gcd(config.steps_per_execution, config.eval_every)


def total_steps(config: ExperimentConfig) -> int:
    """Optimizer steps `run_experiment` takes: whole epochs of `eval_every`."""
    steps_per_epoch = min(config.eval_every, config.iterations)
    return math.ceil(config.iterations / steps_per_epoch) * steps_per_epoch


def vectorizable(config: ExperimentConfig) -> bool:
    """Whether `train_replicas` can train `config`'s preset as replicas.

    Presets whose callbacks act on one model at a time (the iNALU's
    loss-gated regularization and reinitialization) cannot be vectorized;
    sweeps train their seeds one after the other with `run_experiment`.

    Example:

    >>> from keras_nalu.experiment import ExperimentConfig
    >>> vectorizable(ExperimentConfig(model="nmu"))
    True
    >>> vectorizable(ExperimentConfig(model="inalu"))
    False
    """
    return not get_preset(config.model).callbacks


def _check_seeds(seeds) -> list[int]:
    seeds = list(seeds)
    if not seeds:
        raise ValueError("train_replicas expects at least one seed. Received: []")
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            raise ValueError(
                f"train_replicas expects integer seeds >= 0. Received: seed={seed!r}"
            )
        if seed < 0:
            raise ValueError(
                f"train_replicas expects integer seeds >= 0. Received: seed={seed!r}"
            )
    if len(set(seeds)) != len(seeds):
        raise ValueError(
            f"train_replicas expects distinct seeds. Received: seeds={seeds!r}"
        )
    return [int(seed) for seed in seeds]


def _build(config: ExperimentConfig):
    """The model and callbacks `run_experiment` builds for `config`."""
    keras.utils.set_random_seed(config.seed)
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


def _read(variable) -> tf.Tensor:
    """The variable's current value as a tensor (a snapshot inside tf.function)."""
    return tf.identity(variable.value)


def _partial(backup: Path) -> Path:
    """The file a backup is written to before it is renamed over `backup`."""
    return backup.with_name(f".{backup.name}.partial")


def _replica_axis(mask, rank: int):
    """A `[R]` mask reshaped to broadcast against a `[R, ...]` tensor."""
    return tf.reshape(mask, [-1] + [1] * (rank - 1))


class ReplicaRun:
    """R seeds of one `ExperimentConfig` trained as one vectorized model.

    With W_r the weights of replica r, stacked as W = [W_1, ..., W_R], each
    step minimizes

        L(W) = Σ_r [ MSE(f(x_r; W_r), t_r) + λ(t) · Σ_layers R_sparse(W_r) ],

    f being the template model (`stateless_call`) and (x_r, t_r) batch t of
    replica r's stream; ∂L/∂W_r is replica r's own gradient.

    Build it, call `train()`, then read `results()` (one `run_experiment`-style
    record per seed) or `model_for(r)` (a Keras model holding replica r's
    weights). `training_batch(step)` makes the stacked batch of a step and may
    be overridden, e.g. to inject a fault into one replica. `train(backup=…)`
    saves the whole state now and then (`save_backup`), and a new run of the
    same configuration and seeds continues from it (`restore_backup`).

    Args:
        config: the configuration; its `seed` is ignored (see `seeds`).
        seeds: the replicas' seeds, distinct integers >= 0.

    Example:

    >>> from keras_nalu.experiment import ExperimentConfig
    >>> from keras_nalu.sweeps.replicas import ReplicaRun
    >>> config = ExperimentConfig(model="nau", input_size=10, iterations=200,
    ...                           eval_every=100)
    >>> run = ReplicaRun(config, seeds=[0, 1])
    >>> run.train(progress=False)
    >>> [record["config"]["seed"] for record in run.results()]
    [0, 1]

    Reference: Madsen & Johansen (2020), §4.1.1 and App. C.2.
    """

    def __init__(
        self,
        config: ExperimentConfig,
        seeds: Sequence[int],
    ):
        self.seeds = _check_seeds(seeds)
        self.config = config
        self.configs = [dataclasses.replace(config, seed=s) for s in self.seeds]
        self.tasks = [c.task() for c in self.configs]
        self.task = self.tasks[0]
        self.threshold = success_threshold(self.task)
        self.total_steps = total_steps(config)
        self._block = execution_size(config)
        self._build_replicas()
        self._build_data()
        self._evaluations = [[] for _ in self.seeds]
        self._iterations = [None] * len(self.seeds)
        self._loss_diverged = [False] * len(self.seeds)
        self._active = np.ones(len(self.seeds), dtype=bool)
        self.step = 0
        self.wall_time = 0.0
        self._train_block = self._make_train_block()
        self._replica_mse = tf.function(self._replica_mse_fn, reduce_retracing=True)

    @property
    def num_replicas(self) -> int:
        return len(self.seeds)

    # --- construction -------------------------------------------------------

    def _build_replicas(self) -> None:
        weights, template, template_callbacks = [], None, []
        for config in self.configs:
            model, callbacks = _build(config)
            weights.append([v.numpy() for v in model.trainable_variables])
            if template is None:
                template, template_callbacks = model, callbacks
            del model
        gc.collect()
        self.template = template
        extra = [
            c for c in template_callbacks if not isinstance(c, RegularizationSchedule)
        ]
        if extra:
            raise ValueError(
                f"train_replicas cannot vectorize preset {self.config.model!r}: it "
                f"trains with {[type(c).__name__ for c in extra]}, which act on one "
                "model at a time. Use run_experiment for each seed."
            )
        # The units list their regularizers' strengths as non-trainable state
        # (assigned in train_block); any other state would be shared.
        self._strength_variables = list(template.non_trainable_variables)
        strengths = {
            id(r.current_strength) for r in find_scheduled_regularizers(template)
        }
        state = [v for v in self._strength_variables if id(v) not in strengths]
        if state:
            raise ValueError(
                f"train_replicas expects a model without non-trainable state. "
                f"Received: preset {self.config.model!r} with "
                f"{[v.path for v in state]}"
            )
        schedules = [
            c for c in template_callbacks if isinstance(c, RegularizationSchedule)
        ]
        self._schedule = schedules[0] if schedules else None
        self._regularizers = (
            find_scheduled_regularizers(template) if self._schedule else []
        )
        self._variables = list(template.trainable_variables)
        self._weights = [
            keras.Variable(
                np.stack([replica[i] for replica in weights]),
                name=variable.name,
                dtype=variable.dtype,
            )
            for i, variable in enumerate(self._variables)
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
        self.optimizer = type(template.optimizer).from_config(optimizer_config)
        self.optimizer.build(self._weights)
        shapes = {tuple(w.shape) for w in self._weights}
        self._slots = [v for v in self.optimizer.variables if tuple(v.shape) in shapes]
        loss = keras.losses.get(template.loss)
        if isinstance(loss, keras.losses.Loss):
            self._loss = loss
        else:  # a per-sample function, e.g. "mse": the mean over the batch
            self._loss = lambda t, y: keras.ops.mean(loss(t, y))
        self._active_flags = tf.Variable(tf.ones([self.num_replicas], tf.bool))
        self._diverged_at = tf.Variable(
            tf.fill([self.num_replicas], tf.constant(-1, tf.int64))
        )

    def _build_data(self) -> None:
        validation = [task.validation_data() for task in self.tasks]
        test = [task.test_data() for task in self.tasks]
        self._validation_x = tf.constant(validation[0][0])
        self._validation_t = tf.constant(np.stack([t for _, t in validation]))
        self._test_x = tf.constant(test[0][0])
        self._test_t = tf.constant(np.stack([t for _, t in test]))

    # --- one training step ---------------------------------------------------

    def training_batch(self, step):
        """Every replica's batch `step` of its training stream.

        Args:
            step: the batch index (an int64 scalar tensor): batch b is the one
                the single run trains on at optimizer step b → b + 1.

        Returns:
            `(x, t)` of shapes `(R, batch_size, input_size)` and
            `(R, batch_size, 1)`; slice r equals batch `step` of
            `ArithmeticTask(seed=seeds[r]).train_dataset()`.
        """
        # One small graph per replica, each the task's own sampler and target:
        # cheaper than one gather over the stacked inputs, and bit-identical
        # by construction.
        inputs, targets = [], []
        for task in self.tasks:
            x = task.train_inputs(step)
            inputs.append(x)
            targets.append(task.target(x))
        return tf.stack(inputs), tf.stack(targets)

    def _strengths_now(self) -> list:
        """The template's non-trainable state for stateless_call: the strengths."""
        return [_read(v) for v in self._strength_variables]

    def _replica_loss(self, weights, x, t):
        y, _, regularization = self.template.stateless_call(
            weights, self._strengths_now(), x, training=True, return_losses=True
        )
        # The compiled model's total: the loss plus every added loss, summed.
        return keras.ops.sum([self._loss(t, y), *regularization])

    def _losses_and_gradients(self, weights, x, t):
        with tf.GradientTape() as tape:
            tape.watch(weights)
            losses = tf.vectorized_map(
                lambda args: self._replica_loss(*args), (weights, x, t)
            )
            total = tf.reduce_sum(losses)
        return losses, tape.gradient(total, weights)

    def _apply(self, step, losses, gradients):
        before = [_read(v) for v in self._weights + self._slots]
        self.optimizer.apply(gradients, self._weights)
        finite = tf.math.is_finite(losses)
        for weight, constraint in zip(self._weights, self._constraints):
            if constraint is not None:
                weight.assign(tf.vectorized_map(constraint, _read(weight)))
            rank = len(weight.shape)
            finite &= tf.reduce_all(
                tf.math.is_finite(_read(weight)), axis=list(range(1, rank))
            )
        active = tf.identity(self._active_flags)
        keep = active & finite
        for variable, old in zip(self._weights + self._slots, before):
            mask = _replica_axis(keep, len(variable.shape))
            variable.assign(tf.where(mask, _read(variable), old))
        newly_diverged = active & tf.logical_not(finite)
        self._diverged_at.assign(
            tf.where(newly_diverged, step + 1, tf.identity(self._diverged_at))
        )
        self._active_flags.assign(keep)

    def _make_train_block(self):
        @tf.function(
            input_signature=[
                tf.TensorSpec([], tf.int64),
                tf.TensorSpec([None, len(self._regularizers)], tf.float32),
            ]
        )
        def train_block(start, strengths):
            # Software pipeline: the batch of step i + 1 is drawn while step i
            # trains (they are independent), so the two cores work together.
            x, t = self.training_batch(start)
            for i in tf.range(tf.shape(strengths, out_type=tf.int64)[0]):
                next_x, next_t = self.training_batch(start + i + 1)
                for j, regularizer in enumerate(self._regularizers):
                    regularizer.current_strength.assign(strengths[i, j])
                weights = [_read(w) for w in self._weights]
                losses, gradients = self._losses_and_gradients(weights, x, t)
                self._apply(start + i, losses, gradients)
                x, t = next_x, next_t

        return train_block

    def _strengths(self, start: int, stop: int) -> np.ndarray:
        """λ of every scheduled regularizer for steps start … stop - 1."""
        table = np.zeros((stop - start, len(self._regularizers)), np.float32)
        for row, step in enumerate(range(start, stop)):
            held = step - step % self._block
            for j, regularizer in enumerate(self._regularizers):
                table[row, j] = self._schedule.strength_for(regularizer, held)
        return table

    # --- evaluation -----------------------------------------------------------

    def _replica_mse_fn(self, x, targets):
        def one(args):
            weights, target = args
            y, _ = self.template.stateless_call(
                weights, self._strengths_now(), x, training=False
            )
            prediction = tf.cast(y, tf.float64)
            target = tf.reshape(tf.cast(target, tf.float64), tf.shape(prediction))
            return tf.reduce_mean(tf.square(prediction - target))

        return tf.vectorized_map(one, ([_read(w) for w in self._weights], targets))

    def _sparsity_errors(self, replicas) -> dict[int, float]:
        stacked = [w.numpy() for w in self._weights]
        errors = {}
        for r in replicas:
            for variable, values in zip(self._variables, stacked):
                variable.assign(values[r])
            errors[r] = sparsity_error(self.template)
        return errors

    def _evaluate(self, step: int) -> None:
        interpolation = self._replica_mse(self._validation_x, self._validation_t)
        extrapolation = self._replica_mse(self._test_x, self._test_t)
        interpolation, extrapolation = interpolation.numpy(), extrapolation.numpy()
        replicas = np.flatnonzero(self._active)
        errors = self._sparsity_errors(replicas)
        for r in replicas:
            evaluation = Evaluation(
                step=step,
                interpolation_mse=float(interpolation[r]),
                extrapolation_mse=float(extrapolation[r]),
                sparsity_error=errors[r],
            )
            self._evaluations[r].append(evaluation)
            finite = math.isfinite(evaluation.interpolation_mse) and math.isfinite(
                evaluation.extrapolation_mse
            )
            solved = evaluation.extrapolation_mse < self.threshold
            if not finite or (self.config.stop_on_success and solved):
                self._stop(r, step)

    def _stop(self, r: int, step: int) -> None:
        self._active[r] = False
        self._iterations[r] = step
        self._active_flags.assign(tf.constant(self._active))

    def _collect_divergence(self) -> None:
        diverged_at = self._diverged_at.numpy()
        for r in np.flatnonzero(self._active & (diverged_at >= 0)):
            step = int(diverged_at[r])
            self._loss_diverged[r] = True
            self._evaluations[r].append(Evaluation(step, math.nan, math.nan, math.nan))
            self._active[r] = False
            self._iterations[r] = step

    # --- the loop -------------------------------------------------------------

    def train(
        self,
        progress: bool | Callable[[int], None] = True,
        backup: str | os.PathLike | None = None,
        backup_every: float = 600.0,
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
                desc=f"{self.config.model}-{self.config.operation} "
                f"×{self.num_replicas} seeds",
                unit="step",
                dynamic_ncols=True,
            )
        elif callable(progress) and self.step:
            progress(self.step)
        started = last_backup = time.perf_counter()
        try:
            if self.step == 0 and not any(self._evaluations):
                self._evaluate(0)
            every = self.config.eval_every
            while self.step < self.total_steps and self._active.any():
                stop = min((self.step // every + 1) * every, self.total_steps)
                self._train_block(
                    tf.constant(self.step, tf.int64),
                    tf.constant(self._strengths(self.step, stop)),
                )
                done, self.step = stop - self.step, stop
                self._collect_divergence()
                self._evaluate(self.step)
                now = time.perf_counter()
                if backup is not None and now - last_backup >= backup_every:
                    self.wall_time += now - started
                    started = last_backup = now
                    self.save_backup(backup)
                if bar is not None:
                    bar.update(done)
                    bar.set_postfix(running=int(self._active.sum()), refresh=False)
                elif callable(progress):
                    progress(done)
        finally:
            self.wall_time += time.perf_counter() - started
            if bar is not None:
                bar.close()
        for r in np.flatnonzero(self._active):
            self._iterations[r] = self.step

    # --- backup and restore -----------------------------------------------------

    def _identity(self) -> dict:
        """What a backup must match: the configuration (minus seed) and seeds."""
        config = {k: v for k, v in self.config.to_config().items() if k != "seed"}
        return json.loads(json.dumps({"config": config, "seeds": self.seeds}))

    def _state_variables(self) -> list:
        return [
            *self._weights,
            *self.optimizer.variables,
            self._active_flags,
            self._diverged_at,
        ]

    def save_backup(self, path: str | os.PathLike) -> None:
        """Writes the run's whole state at `step` to one `.npz` file.

        The state is every replica's weights and optimizer variables (Adam's
        moments and step count), which replicas are still running, and the
        evaluations so far; the training batches need none, as batch b is a
        function of b. The file is written beside `path` and renamed over it,
        so it is always a complete backup. `restore_backup` reads it back.
        """
        path = Path(path)
        state = {
            "format": _BACKUP_FORMAT,
            **self._identity(),
            "step": self.step,
            "wall_time": self.wall_time,
            "evaluations": [
                [dataclasses.astuple(e) for e in evaluations]
                for evaluations in self._evaluations
            ],
            "iterations": self._iterations,
            "loss_diverged": self._loss_diverged,
            "active": self._active.tolist(),
        }
        arrays = {
            f"variable_{i}": np.asarray(v.numpy())
            for i, v in enumerate(self._state_variables())
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = _partial(path)
        with open(partial, "wb") as file:
            np.savez(file, state=np.array(json.dumps(state)), **arrays)
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, path)

    def restore_backup(self, path: str | os.PathLike) -> bool:
        """Continues from a `save_backup` file of this configuration and seeds.

        Returns:
            True if the file existed and the run now stands at its step;
            False if there is no such file (the run is untouched).

        Raises:
            ValueError: the file is not a backup of this configuration and
                these seeds (the run is untouched).
        """
        path = Path(path)
        if not path.exists():
            return False
        variables = self._state_variables()
        try:
            with np.load(path, allow_pickle=False) as data:
                state = json.loads(str(data["state"])) if "state" in data else {}
                arrays = [data.get(f"variable_{i}") for i in range(len(variables))]
        except (OSError, ValueError, TypeError, AttributeError, zipfile.BadZipFile):
            state, arrays = {}, []
        if not isinstance(state, dict):
            state = {}
        if state.get("format") != _BACKUP_FORMAT or any(
            state.get(key) != value for key, value in self._identity().items()
        ):
            raise ValueError(
                f"{path} is not a backup of this run ({self.config.model}-"
                f"{self.config.operation}, seeds {self.seeds}); delete it to start "
                "afresh."
            )
        for variable, values in zip(variables, arrays):
            if values is None or tuple(values.shape) != tuple(variable.shape):
                raise ValueError(
                    f"{path} does not hold this run's variables; delete it to "
                    "start afresh."
                )
        for variable, values in zip(variables, arrays):
            variable.assign(values)
        self.step = int(state["step"])
        self.wall_time = float(state["wall_time"])
        self._evaluations = [
            [Evaluation(*row) for row in rows] for rows in state["evaluations"]
        ]
        self._iterations = list(state["iterations"])
        self._loss_diverged = list(state["loss_diverged"])
        self._active = np.array(state["active"], dtype=bool)
        return True

    # --- results --------------------------------------------------------------

    def results(self) -> list[dict]:
        """One record per seed, with the fields of `run_experiment`'s record.

        `wall_time` is the wall time of the whole vectorized run (shared by
        its replicas); `iterations_per_second` is per seed, and `replicas`
        says how many seeds trained together.
        """
        records = []
        for r, config in enumerate(self.configs):
            verdict = _verdict(
                self._evaluations[r], self.threshold, self._loss_diverged[r]
            )
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
                    "threshold": self.threshold,
                    "evaluations": len(self._evaluations[r]),
                    "iterations": iterations,
                    "wall_time": self.wall_time,
                    "iterations_per_second": (
                        iterations / self.wall_time if self.wall_time > 0 else None
                    ),
                    "history": [dataclasses.astuple(e) for e in self._evaluations[r]],
                    "replicas": self.num_replicas,
                }
            )
        return records

    def weights(self, r: int) -> list[np.ndarray]:
        """Replica r's trainable weights, in `model.trainable_variables` order."""
        return [w.numpy()[r] for w in self._weights]

    def optimizer_state(self, r: int) -> list[np.ndarray]:
        """Replica r's slice of every per-weight optimizer variable (Adam's m, v)."""
        return [v.numpy()[r] for v in self._slots]

    def model_for(self, r: int) -> keras.Model:
        """A compiled Keras model of the configuration holding replica r's weights.

        Example:

        >>> from keras_nalu.experiment import ExperimentConfig
        >>> from keras_nalu.sweeps.replicas import ReplicaRun
        >>> run = ReplicaRun(ExperimentConfig(model="nau", input_size=10,
        ...                                   iterations=10, eval_every=10), [4, 7])
        >>> model = run.model_for(1)
        >>> [w.shape for w in model.get_weights()]
        [(10, 2), (2, 1)]
        """
        model, _ = _build(self.configs[r])
        for variable, values in zip(model.trainable_variables, self.weights(r)):
            variable.assign(values)
        return model


def _verdict(evaluations, threshold: float, loss_diverged: bool) -> dict:
    """`summarize_evaluations`, with a replica stopped for a NaN loss failed."""
    verdict = summarize_evaluations(evaluations, threshold)
    if loss_diverged:
        verdict["diverged"], verdict["success"] = True, False
    return verdict


def read_backup(path: str | os.PathLike) -> list[dict]:
    """Each seed's verdict so far, read from a chunk's backup file.

    A long sweep chunk (hours at 5·10⁶ steps) writes `save_backup` files as
    it trains; this reads one without building the model or touching the
    run, so it can look at a chunk that is still training. The verdict is
    `summarize_evaluations` over the evaluations up to the backup's step,
    the same rule that judges the finished run. It is the verdict the run
    would give if it stopped at the backup's step; a later step with a lower
    interpolation MSE can still change it either way.

    Args:
        path: a `.npz` file written by `ReplicaRun.save_backup`, e.g. one
            in a sweep's `<results>.backup/` folder.

    Returns:
        One dict per seed: `model`, `operation`, `seed`, `step` (where the
        backup stands), `iterations` (the run's total), the verdict fields
        of `summarize_evaluations` and `threshold`.

    Raises:
        ValueError: the file is not a readable backup.

    Example:

    >>> config = ExperimentConfig(model="nau", input_size=10, iterations=200,
    ...                           eval_every=100)
    >>> run = ReplicaRun(config, seeds=[0, 1])
    >>> run.train(progress=False)
    >>> run.save_backup("chunk.npz")  # a sweep writes these as it trains
    >>> [(r["seed"], r["step"], r["iterations"]) for r in read_backup("chunk.npz")]
    [(0, 200, 200), (1, 200, 200)]

    On the command line, `keras-nalu progress RESULTS` prints this for every
    chunk of a sweep that is in training.
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            state = json.loads(str(data["state"]))
        config = ExperimentConfig(**state["config"])
        seeds = [int(seed) for seed in state["seeds"]]
        step = int(state["step"])
        histories = state["evaluations"]
        diverged = state["loss_diverged"]
    except (OSError, KeyError, TypeError, ValueError, zipfile.BadZipFile) as error:
        raise ValueError(
            f"{path} is not a readable sweep backup ({type(error).__name__}: {error})."
        ) from None
    if state.get("format") != _BACKUP_FORMAT:
        raise ValueError(
            f"{path} has backup format {state.get('format')!r}; this version "
            f"reads format {_BACKUP_FORMAT}."
        )
    threshold = success_threshold(config.task())  # the same for every seed
    records = []
    for seed, history, loss_diverged in zip(seeds, histories, diverged):
        evaluations = [Evaluation(*e) for e in history]
        verdict = _verdict(evaluations, threshold, loss_diverged)
        records.append(
            {
                "model": config.model,
                "operation": config.operation,
                "seed": seed,
                "step": step,
                "iterations": total_steps(config),
                **verdict,
                "threshold": threshold,
            }
        )
    return records


def train_replicas(
    config: ExperimentConfig,
    seeds: Sequence[int],
    progress: bool | Callable[[int], None] = True,
    backup: str | os.PathLike | None = None,
    backup_every: float = 600.0,
) -> list[dict]:
    """Trains `config` once per seed, all seeds in one vectorized loop.

    Each record equals, up to float rounding, what `run_experiment` returns
    for `dataclasses.replace(config, seed=s)`: same initialization, data
    stream, schedule, evaluations and verdict (see the module docstring).

    With `backup`, the run saves its state to that file every `backup_every`
    seconds, and a later call with the same file continues where the last
    backup left it, with the same records as an uninterrupted run (as Keras'
    `BackupAndRestore` does for `fit`). The file is deleted once training
    ends.

    Args:
        config: the configuration (its `seed` is replaced by each of `seeds`).
        seeds: distinct integers >= 0.
        progress: True for a progress bar, False for none, or a callable
            receiving the number of steps done after each evaluation block.
        backup: None, or the backup file (see `ReplicaRun.save_backup`).
        backup_every: seconds between two backups; 0 after every evaluation.

    Returns:
        One record per seed, in the order of `seeds` (see
        `ReplicaRun.results`).

    Raises:
        ValueError: bad seeds, a preset that cannot be vectorized, or a
            `backup` file of another configuration or other seeds.

    Example:

    >>> from keras_nalu.experiment import ExperimentConfig
    >>> from keras_nalu.sweeps.replicas import train_replicas
    >>> records = train_replicas(
    ...     ExperimentConfig(model="nau", input_size=10, iterations=100,
    ...                      eval_every=100), seeds=[0, 1, 2], progress=False)
    >>> [(r["config"]["seed"], r["iterations"]) for r in records]
    [(0, 100), (1, 100), (2, 100)]

    Reference: Madsen & Johansen (2020), §4.1.1 and App. C.2.
    """
    run = ReplicaRun(config, seeds)
    if backup is not None:
        run.restore_backup(backup)
    run.train(progress=progress, backup=backup, backup_every=backup_every)
    if backup is not None:
        Path(backup).unlink(missing_ok=True)
        _partial(Path(backup)).unlink(missing_ok=True)  # left by a kill mid-write
    return run.results()
