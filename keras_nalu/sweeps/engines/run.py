"""`ReplicaRun`: what every replica engine shares, as Keras' `Trainer` is shared
(what each engine follows per replica: docs/architecture.md)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence

import keras
import numpy as np

from keras_nalu._validation import check_positive_int, check_seeds, is_integer
from keras_nalu.errors import ArgumentError
from keras_nalu.evaluation import sparsity_error
from keras_nalu.experiments import (
    ExperimentConfig,
    execution_size,
    make_record,
    total_steps,
)
from keras_nalu.sweeps.engines import backup as backup_file
from keras_nalu.sweeps.engines.device import device_name
from keras_nalu.sweeps.engines.loop import TrainingLimits, train_loop
from keras_nalu.sweeps.engines.schedule import strength_table
from keras_nalu.sweeps.engines.setup import (
    ReplicaSetup,
    build_replica,
    check_configs,
    model_state,
)
from keras_nalu.sweeps.engines.state import RunState
from keras_nalu.sweeps.engines.verdicts import Verdicts

MAX_UNROLL = 64
"""The most steps one iteration of the JAX engine's compiled loop may hold
(`unroll`): XLA compiles the step that many times over, for nothing more."""


class ReplicaRun:
    """R seeds of one `ExperimentConfig` trained as one vectorized model.

    With W_r the weights of replica r, stacked as W = [W_1, ..., W_R], each
    step minimizes

        L(W) = Σ_r [ MSE(f(x_r; W_r), t_r) + λ(t) · Σ_layers R_sparse(W_r) ],

    f being the template model (`stateless_call`) and (x_r, t_r) batch t of
    replica r's stream; ∂L/∂W_r is replica r's own gradient, and Adam
    (element-wise) updates each replica as if it were trained alone.

    The engines' base class: build a run with `replica_run(config, seeds)`
    (the Keras backend's engine) or an engine's class, `train()` it, then
    read `results()` or `model_for(r)`.

    Args:
        config: the configuration; its `seed` is ignored (see `seeds`).
        seeds: the replicas' seeds, distinct integers >= 0.
        history: keep every evaluation for the records' `history` (True);
            False keeps only each replica's `EvaluationSummary` (a chunk of
            1,000 replicas × 5,000 evaluations would hold 5·10⁶ of them).
        unroll: steps per iteration of the compiled loop (`jax.lax.scan`'s
            `unroll`, JAX engine only), 1 to `MAX_UNROLL`; the records are
            the same for every value.

    Example:

    >>> from keras_nalu.experiments import ExperimentConfig
    >>> from keras_nalu.sweeps.engines import replica_run
    >>> config = ExperimentConfig(model="nau", input_size=10, iterations=200,
    ...                           eval_every=100)
    >>> run = replica_run(config, seeds=[0, 1])
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
    #: whether runs of other recipes train beside this one in one compiled
    #: program (`train_together`), and the loop over steps unrolls (`unroll`).
    supports_packing = False

    def __init__(
        self,
        config: ExperimentConfig,
        seeds: Sequence[int],
        history: bool = True,
        unroll: int = 1,
    ):
        seeds = check_seeds("train_replicas", seeds)
        configs = [dataclasses.replace(config, seed=s) for s in seeds]
        self._start(configs, single=config, history=history, unroll=unroll)

    @classmethod
    def batched(
        cls, configs: Sequence[ExperimentConfig], history: bool = True, unroll: int = 1
    ):
        """One run of configs that share their recipe (`RECIPE_FIELDS`).

        They may differ in their task and seed; each record equals its
        config's run alone, up to float rounding. `history`, `unroll`: as
        for `ReplicaRun`.

        Raises:
            ValueError: the configs differ in more than their task, and this
                engine trains one configuration at a time.
        """
        configs = check_configs(configs)
        single = len({dataclasses.replace(c, seed=0) for c in configs}) == 1
        if not single and not cls.supports_batched:
            raise ValueError(
                f"The {cls.engine} engine trains one configuration at a time; "
                "batched runs of different tasks need the JAX engine "
                "(KERAS_BACKEND=jax)."
            )
        run = cls.__new__(cls)
        run._start(configs, configs[0] if single else None, history, unroll)
        return run

    def _start(self, configs, single, history: bool, unroll: int = 1) -> None:
        if self.engine is None:
            raise TypeError(
                "ReplicaRun is the engines' base class; build a run with "
                "replica_run(config, seeds) or an engine's class."
            )
        if not isinstance(history, bool):
            raise ValueError(
                "ReplicaRun expects history to be True or False. "
                f"Received: history={history!r}"
            )
        self.unroll = self.check_unroll(unroll)
        self.configs = check_configs(configs)
        self.seeds = [c.seed for c in self.configs]
        # `config` is the shared configuration (seed ignored) of a plain run.
        self.config = single if single is not None else self.configs[0]
        self.single = single is not None
        self.tasks = [c.task() for c in self.configs]
        self.thresholds = np.array(
            [c.success_threshold(t) for c, t in zip(self.configs, self.tasks)]
        )
        self.total_steps = total_steps(self.config)
        self.setup = ReplicaSetup.build(self.configs, self.engine, self.supports_state)
        self.template = self.setup.model
        self.verdicts = Verdicts.start(self.thresholds, history=history)
        self.step = 0
        self.wall_time = 0.0
        self._build_engine()

    @classmethod
    def check_unroll(cls, unroll) -> int:
        """`unroll` if this engine takes it: 1, or 1 to `MAX_UNROLL` on JAX."""
        check_positive_int("ReplicaRun", "unroll", unroll)
        if unroll > MAX_UNROLL:
            raise ArgumentError(
                "ReplicaRun",
                "unroll",
                unroll,
                requirement=f"be <= {MAX_UNROLL} steps: XLA compiles the step that "
                "many times over, so more only lengthens the compile",
            )
        if unroll != 1 and not cls.supports_packing:
            raise ArgumentError(
                "",
                "unroll",
                unroll,
                problem=f"The {cls.engine} engine compiles no loop to unroll; "
                "{unroll} needs the JAX engine (KERAS_BACKEND=jax)",
            )
        return unroll

    @property
    def num_replicas(self) -> int:
        return len(self.configs)

    def description(self) -> str:
        """The run in a few words, for progress bars and messages."""
        config, count = self.config, self.num_replicas
        if self.single:
            return f"{config.model}-{config.operation} ×{count} seeds"
        return f"{config.model} ×{count} runs"

    # What an engine implements (`_build_engine`, ...): docs/architecture.md.

    def strengths(self, start: int, stop: int) -> np.ndarray:
        """λ of every scheduled regularizer for steps start … stop - 1."""
        block = execution_size(self.config)
        setup = self.setup
        return strength_table(
            setup.schedule, setup.regularizers, block, start, stop, setup.strength_dtype
        )

    def train_block(self, start: int, stop: int) -> None:
        """Trains steps `start … stop - 1` (every active replica), λ scheduled."""
        self._train_block(start, self.strengths(start, stop))

    def evaluate(self, step: int) -> None:
        """Records divergence and every active replica's evaluation at `step`."""
        self.verdicts.diverge(self._diverged_at())
        interpolation, extrapolation = self._replica_errors()
        sparsity = self._sparsity_errors(np.flatnonzero(self.verdicts.active))
        stop_on_success = self.config.stop_on_success
        self.verdicts.judge(
            step, interpolation, extrapolation, sparsity, stop_on_success
        )
        self._set_active(self.verdicts.active)

    @classmethod
    def train_together(cls, runs, steps: int, programs: dict) -> None:
        """Trains `steps` more steps of each of `runs` (here one), from its step;
        an engine with `supports_packing` trains several as one program, kept
        in `programs`."""
        (run,) = runs
        run.train_block(run.step, run.step + steps)

    def train(
        self,
        progress: bool | Callable[[int], None] = True,
        limits: TrainingLimits | None = None,
    ) -> None:
        """Trains every replica for the configuration's iterations (`train_loop`).

        Evaluates at step 0 and every `eval_every` steps; a replica stops when
        it diverges, or (with `stop_on_success`) at its first solved
        evaluation. Called again (after `restore_backup`), it goes on.

        Args:
            progress: True for a tqdm bar, False for none, or a callable that
                receives the number of steps just done (a restored run's steps
                before go to its `resumed` method if it has one).
            limits: the run's `TrainingLimits`; None for none.

        Raises:
            TimeLimitReached: the run stopped at its deadline, after its backup.
            KeyboardInterrupt: Ctrl-C (`stop_at_interrupt`): the run stopped
                at its next evaluation, after writing its backup there.
        """
        train_loop([self], [progress], [limits])

    def _build_stacked(self) -> list:
        """The stacked weights as Keras variables, and the optimizer on them."""
        stacked = [
            keras.Variable(values, name=variable.name, dtype=variable.dtype)
            for values, variable in zip(
                self.setup.initial_weights, self.setup.variables
            )
        ]
        self.optimizer = self.setup.optimizer.build(stacked)
        self._slot_flags = self.setup.optimizer.per_replica(self.optimizer, stacked)
        return stacked

    def stacked_weights(self) -> list[np.ndarray]:
        """Every trainable weight, stacked over replicas: `[R, ...]` arrays."""
        return list(self._engine_state().weights)

    def stacked_optimizer_state(self) -> list[np.ndarray]:
        """Every per-weight optimizer variable (Adam's m, v), stacked: `[R, ...]`."""
        optimizer = self._engine_state().optimizer
        return [v for v, own in zip(optimizer, self._slot_flags) if own]

    def stacked_state(self) -> list[np.ndarray]:
        """The model's other non-trainable variables, stacked: `[R, ...]`."""
        return list(self._engine_state().model_state)

    def weights(self, r: int) -> list[np.ndarray]:
        """Replica r's trainable weights, in `model.trainable_variables` order."""
        return [w[r] for w in self.stacked_weights()]

    def set_weights(self, r: int, weights: Sequence[np.ndarray]) -> None:
        """Sets replica r's trainable weights (e.g. a hand-set solution, to see
        whether training keeps it); the others and the optimizer are untouched.

        Args:
            r: the replica, `0 <= r < num_replicas`.
            weights: one array per trainable weight, in order, of its shape.

        Raises:
            ValueError: `r` is not a replica, or `weights` do not match the
                model's weights in number or shape.
        """
        state = self._engine_state()
        if not is_integer(r) or not 0 <= r < self.num_replicas:
            raise ValueError(
                f"set_weights expects r to be a replica, 0 <= r < "
                f"{self.num_replicas}. Received: r={r!r}"
            )
        shapes = [tuple(w.shape[1:]) for w in state.weights]
        given = [tuple(np.shape(w)) for w in weights]
        if given != shapes:
            raise ValueError(
                f"set_weights expects weights of shapes {shapes}. "
                f"Received: shapes {given}"
            )
        changed = [np.array(w) for w in state.weights]
        for stack, values in zip(changed, weights):
            stack[r] = values
        self._set_engine_state(state._replace(weights=changed))

    def optimizer_state(self, r: int) -> list[np.ndarray]:
        """Replica r's slice of every per-weight optimizer variable (Adam's m, v)."""
        return [v[r] for v in self.stacked_optimizer_state()]

    def model_for(self, r: int) -> keras.Model:
        """A compiled Keras model of the configuration holding replica r's weights."""
        model, _ = build_replica(self.configs[r])
        for variable, values in zip(model.trainable_variables, self.weights(r)):
            variable.assign(values)
        for variable, values in zip(model_state(model), self.stacked_state()):
            variable.assign(values[r])
        return model

    def _sparsity_errors(self, replicas) -> dict[int, float]:
        """The sparsity error of each of `replicas` (the template, reassigned)."""
        stacked = self.stacked_weights()
        errors = {}
        for r in replicas:
            for variable, values in zip(self.setup.variables, stacked):
                variable.assign(values[r])
            errors[r] = sparsity_error(self.template)
        return errors

    def get_state(self) -> RunState:
        """The run's whole state now; the variables are copies, not the verdicts."""
        return RunState(self.step, self.wall_time, self.verdicts, self._engine_state())

    def set_state(self, state: RunState) -> None:
        """Puts the run at `state` (of this run's engine, shapes checked)."""
        self._set_engine_state(state.variables)
        self.step = state.step
        self.wall_time = state.wall_time
        self.verdicts = state.verdicts
        self._set_active(self.verdicts.active)

    def save_backup(self, path: str | os.PathLike) -> None:
        """Writes the run's whole state (`get_state`) to one `.npz` file, atomically.

        The batches need no state (batch b is a function of b), and the
        evaluations are kept as summaries, so the file does not grow.
        """
        backup_file.save_backup(self, path)

    def restore_backup(self, path: str | os.PathLike) -> bool:
        """Continues from a `save_backup` file of this configuration and seeds.

        The verdicts continue exactly; the records' `history` holds only the
        evaluations after the backup's step (all of them from format 1).

        Returns True if the file existed, False (the run untouched) if not.

        Raises:
            ValueError: the file is not a backup of this run, or is of another
                engine (the run is untouched).
        """
        return backup_file.restore_backup(self, path)

    def results(self) -> list[dict]:
        """One record per replica, with the fields of `run_experiment`'s record.

        `wall_time` is the whole vectorized run's; `iterations_per_second`
        is per replica; `replicas`, `engine` and `device` say how it trained.
        `history` (None with `history=False`) lists `(step,
        interpolation_mse, extrapolation_mse, sparsity_error)` tuples, not
        those before a restored backup's step.
        """
        device = device_name()
        stops = self.verdicts.iterations
        return [
            make_record(
                config.name,
                config,
                self.tasks[r],
                self.verdicts.verdict(r),
                iterations=self.step if stops[r] is None else stops[r],
                wall_time=self.wall_time,
                history=self.verdicts.history_rows(r),
                replicas=self.num_replicas,
                engine=self.engine,
                device=device,
            )
            for r, config in enumerate(self.configs)
        ]
