"""`ReplicaRun`: what every replica engine shares, as Keras' `Trainer` is shared.

An engine trains R runs of the arithmetic task together as one vectorized
model: the replicas' weights are stacked along a leading axis and one
template Keras model computes every replica's loss with
`model.stateless_call`, so each unit's formula (regularizers included) is the
one in its layer. The engines differ only in how a block of training steps
and an evaluation are compiled: `engines/tensorflow.py` (`tf.function`,
`tf.vectorized_map`) and `engines/jax.py` (`jax.jit`, `jax.vmap`,
`jax.lax.scan`), as Keras keeps `keras/src/trainers/trainer.py` apart from
`keras/src/backend/*/trainer.py`. Around them: `setup.py` (the template and
the stacked start), `schedule.py` (λ), `verdicts.py`, `loop.py`, `state.py`
and `backup.py`; `train.py` picks the engine.

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

Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §4.1.1
and App. C.2 (100 seeds per configuration).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence

import numpy as np

from keras_nalu._validation import check_positive_int, check_seeds
from keras_nalu.errors import ArgumentError
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
    check_configs,
)
from keras_nalu.sweeps.engines.state import RunState
from keras_nalu.sweeps.engines.variables import ReplicaVariables
from keras_nalu.sweeps.engines.verdicts import Verdicts

MAX_UNROLL = 64
"""The most training steps one iteration of the JAX engine's compiled loop
may hold (`unroll`). XLA compiles the step that many times over, so the
compile time grows with it, while the loop's condition is already read
once per 64 steps; a larger value asks for a long compile and nothing more."""


class ReplicaRun(ReplicaVariables):
    """R seeds of one `ExperimentConfig` trained as one vectorized model.

    With W_r the weights of replica r, stacked as W = [W_1, ..., W_R], each
    step minimizes

        L(W) = Σ_r [ MSE(f(x_r; W_r), t_r) + λ(t) · Σ_layers R_sparse(W_r) ],

    f being the template model (`stateless_call`) and (x_r, t_r) batch t of
    replica r's stream; ∂L/∂W_r is replica r's own gradient, and Adam
    (element-wise) updates each replica as if it were trained alone.

    The engines' base class: `replica_run(config, seeds)` builds a run on
    the engine of the Keras backend in use (`KERAS_BACKEND`), an engine
    class (`JaxReplicaRun(config, seeds)`) on its own. Call `train()`, then
    read `results()` (one `run_experiment`-style record per replica) or
    `model_for(r)` (a Keras model holding replica r's weights).
    `train(limits=TrainingLimits(backup=…))` saves the whole state now and
    then (`save_backup`),
    and a new run of the same configuration and seeds continues from it
    (`restore_backup`). `batched(configs)` trains runs of different tasks
    (operation, ranges, subsets) that share the model and its training as
    one run (JAX engine).

    Args:
        config: the configuration; its `seed` is ignored (see `seeds`).
        seeds: the replicas' seeds, distinct integers >= 0.
        history: keep every evaluation in memory for the records' `history`
            (True); False keeps only each replica's `EvaluationSummary`,
            which is all the verdict needs, and gives `history=None` (a
            sweep chunk of 1,000 replicas × 5,000 evaluations would
            otherwise hold 5·10⁶ `Evaluation` objects).
        unroll: training steps per iteration of the compiled loop over a
            block of steps (`jax.lax.scan`'s `unroll`, JAX engine only), 1
            to `MAX_UNROLL`: a GPU then runs the loop's condition once per
            `unroll` steps. The records are the same for every value.

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
        cls,
        configs: Sequence[ExperimentConfig],
        history: bool = True,
        unroll: int = 1,
    ):
        """One run of several configurations, each with its own seed.

        The configs must share the model and its training (`RECIPE_FIELDS`)
        and may differ in the task: operation, subset geometry, ranges and
        seed. Each replica's record equals its config's run alone, up to
        float rounding.

        Args:
            configs: the runs, one `ExperimentConfig` each (seed included).
            history, unroll: as for `ReplicaRun`.

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
        run._start(
            configs,
            single=configs[0] if single else None,
            history=history,
            unroll=unroll,
        )
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
        if self.single:
            return (
                f"{self.config.model}-{self.config.operation} "
                f"×{self.num_replicas} seeds"
            )
        return f"{self.config.model} ×{self.num_replicas} runs"

    # --- what an engine implements ------------------------------------------

    def _build_engine(self) -> None:
        """Creates the engine's state from `setup` (weights, optimizer, data)."""
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

    # --- training -------------------------------------------------------------

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
        self.verdicts.judge(
            step,
            interpolation,
            extrapolation,
            sparsity,
            self.thresholds,
            self.config.stop_on_success,
        )
        self._set_active(self.verdicts.active)

    @classmethod
    def train_together(cls, runs, steps: int, programs: dict) -> None:
        """Trains `steps` more steps of each of `runs`, each from its own step.

        `train_loop` calls it with the runs still training; an engine that
        trains several runs as one program (`supports_packing`) overrides it
        and keeps its compiled programs in `programs`. Here: one run, its
        own block.
        """
        (run,) = runs
        run.train_block(run.step, run.step + steps)

    def train(
        self,
        progress: bool | Callable[[int], None] = True,
        limits: TrainingLimits | None = None,
    ) -> None:
        """Trains every replica for the configuration's iterations.

        Evaluates at step 0 and every `eval_every` steps; a replica stops when
        it diverges, or (with `stop_on_success`) at its first solved
        evaluation; the loop (`train_loop`) ends when none is left or at the
        last step. Called again (after `restore_backup`), it goes on.

        Args:
            progress: True for a tqdm bar over the steps, False for none, or a
                callable that receives the number of steps just done (a
                restored run first reports the steps it starts from, to the
                callable's `resumed` method if it has one, so that a rate
                counts only the steps trained).
            limits: where the run writes its backup (`save_backup`, after an
                evaluation once `backup_every` seconds have passed, so a
                killed run loses at most that much), and the deadline at whose
                first evaluation it stops (`TrainingLimits`); None for none.

        Raises:
            TimeLimitReached: the run stopped at its deadline, after its backup.
            KeyboardInterrupt: Ctrl-C (see `stop_at_interrupt`, which this
                method uses): the run stopped at its next evaluation, after
                writing its backup there.
        """
        train_loop([self], [progress], [limits])

    # --- state and backups ----------------------------------------------------

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
        """Writes the run's whole state at `step` to one `.npz` file.

        The state (`get_state`) is every replica's weights and optimizer
        variables (Adam's moments and step count), which replicas are still
        running, and each replica's `EvaluationSummary` (not the evaluations
        themselves, so the file's size does not grow as the run goes on); the
        training batches need none, as batch b is a function of b. The file
        is written beside `path` and renamed over it, so it is always a
        complete backup. `restore_backup` reads it back.
        """
        backup_file.save_backup(self, path)

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
        return backup_file.restore_backup(self, path)

    # --- results --------------------------------------------------------------

    def device(self) -> str:
        """The device the engine trains on, in words (e.g. "cpu")."""
        return device_name()

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
        device = self.device()
        records = []
        for r, config in enumerate(self.configs):
            iterations = self.verdicts.iterations[r]
            records.append(
                make_record(
                    config.name,
                    config,
                    self.tasks[r],
                    self.verdicts.verdict(r),
                    iterations=self.step if iterations is None else iterations,
                    wall_time=self.wall_time,
                    history=self.verdicts.history_rows(r),
                    replicas=self.num_replicas,
                    engine=self.engine,
                    device=device,
                )
            )
        return records
