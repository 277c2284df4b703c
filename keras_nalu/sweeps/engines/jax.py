"""The JAX replica engine: `jax.vmap` over replicas, `jax.lax.scan` over steps.

One compiled function trains the block of steps between two evaluations:
`jax.lax.scan` runs the steps; in each, every replica draws its batch on the
device from its own key, `jax.vmap` of the template model's stateless forward
pass gives each replica's loss (its regularizers at the scheduled λ), one
`jax.grad` of their sum gives each replica its own gradient, and Keras' own
optimizer updates the stacked weights through `stateless_apply`, so Adam's ε
and its bias correction mean what they mean in `model.fit`. Each weight's
constraint is applied per replica after the step; a replica whose loss or
weights stop being finite is frozen (`jnp.where`, never a product with 0).
It needs JAX and Keras, not TensorFlow.

Data: replica r draws batch b of its own counter-based stream
(`keras_nalu.tasks.streams`, keyed by its seed; about 20× cheaper on a CPU
than JAX's Threefry) and maps it onto its interpolation range
(`place_uniform`, the same arithmetic as the task's own sampler); its
targets use its own subsets and operation. So replica r equals the same
run alone (R = 1) up to float rounding, and runs of different tasks
(operations, ranges, subsets) can train together (`batched_run`).
The stream is not TensorFlow's: a seed's run differs from
`run_experiment`'s, and the two engines agree in their success rates, not
seed by seed. The validation and test sets are the task's fixed sets, the
same as every other engine's.

Evaluation: the squared errors on the fixed sets are summed on the device in
float32 over chunks of `_CHUNK` examples and the chunks in float64 on the
host (relative error about 10⁻⁶ of the MSE); the sparsity error comes from
the units' effective weights, on the device.

Matrix products run at float32 precision ("highest"): the default precision
of some GPUs (TF32) rounds to 10 bits, far coarser than the success
thresholds.
"""

from __future__ import annotations

import contextlib
import functools

import jax
import jax.numpy as jnp
import keras
import numpy as np

from keras_nalu.evaluation.sparsity import distance_to_sparse, effective_weight_tensors
from keras_nalu.keras_utils import iter_layers
from keras_nalu.sweeps.engines.run import ReplicaRun
from keras_nalu.sweeps.engines.setup import eval_groups
from keras_nalu.sweeps.engines.state import EngineState
from keras_nalu.sweeps.engines.step import step_rules
from keras_nalu.tasks.operations import apply_operation
from keras_nalu.tasks.ranges import place_uniform
from keras_nalu.tasks.sampling import TRAIN_STREAM
from keras_nalu.tasks.streams import counter_uniform, stream_key

_CHUNK = 100


def matmul_precision():
    """Matrix products at float32 precision while the engine computes."""
    return jax.default_matmul_precision("highest")


class _JaxOps:
    """The array functions of `ReplicaOptimizer.clip` and `step_rules`, in JAX."""

    sqrt, square, sum, reshape = jnp.sqrt, jnp.square, jnp.sum, jnp.reshape
    maximum, minimum, all = jnp.maximum, jnp.minimum, jnp.all
    isfinite, where = jnp.isfinite, jnp.where

    @staticmethod
    def map_replicas(function, values):
        return jax.vmap(function)(values)


def _scan_steps(runs, unroll, carries, starts, strengths, steps):
    """`steps` steps of every run in one `jax.lax.scan`: the runs' carries after.

    Each iteration takes one step of each run, on its own carry, batches and
    λ(t), so a run's variables after it are those it has trained alone.
    """

    def one_step(carry, inputs):
        return tuple(
            run.train_step(own, own_inputs)[0]
            for run, own, own_inputs in zip(runs, carry, inputs)
        ), None

    inputs = tuple(
        (start + jnp.arange(steps, dtype=jnp.int32), table)
        for start, table in zip(starts, strengths)
    )
    carries, _ = jax.lax.scan(one_step, tuple(carries), inputs, unroll=unroll)
    return carries


def _compiled(runs):
    """The program of `_scan_steps` for these runs, compiled once per length."""
    unroll = max(run.unroll for run in runs)
    return jax.jit(
        functools.partial(_scan_steps, tuple(runs), unroll), static_argnames="steps"
    )


class JaxReplicaRun(ReplicaRun):
    """`ReplicaRun` on the JAX backend (see `ReplicaRun` and this module)."""

    engine = "jax"
    supports_batched = True
    supports_state = True
    supports_packing = True

    # --- construction -------------------------------------------------------

    def _build_engine(self) -> None:
        template = self.template
        stacked = [
            keras.Variable(values, name=variable.name, dtype=variable.dtype)
            for values, variable in zip(
                self.setup.initial_weights, self.setup.variables
            )
        ]
        self.optimizer = self.setup.optimizer.build(stacked)
        self._slot_flags = self.setup.optimizer.per_replica(self.optimizer, stacked)
        # The variables a forward pass reads: the trainable ones (per
        # replica), the regularizers' strengths (λ, shared) and the model's
        # other state (per replica, e.g. a noise layer's seed), updated by
        # every training step. The carry holds all but λ.
        self.carry = EngineState(
            weights=[jnp.asarray(v.value) for v in stacked],
            optimizer=[jnp.asarray(v.value) for v in self.optimizer.variables],
            model_state=[jnp.asarray(a) for a in self.setup.initial_state],
            active=jnp.ones(self.num_replicas, bool),
            diverged=jnp.full(self.num_replicas, -1, jnp.int32),
        )
        self._strength_variables = [r.current_strength for r in self.setup.regularizers]
        self._build_data()
        self._effective = _effective_weight_readers(template)
        self._block_fn = _compiled([self])
        self._errors_fn = jax.jit(self._group_errors)
        self._sparsity_fn = jax.jit(self._replica_sparsity)

    def _build_data(self) -> None:
        tasks = self.tasks
        self._keys = jnp.asarray(
            np.stack([stream_key(seed, TRAIN_STREAM) for seed in self.seeds])
        )
        parts = max(len(t.interpolation_range.parts) for t in tasks)
        tables = [t.interpolation_range.table(parts) for t in tasks]
        self._tables = tuple(jnp.asarray(np.stack(column)) for column in zip(*tables))
        self._masks = jnp.asarray(np.stack([t.subset_mask() for t in tasks]))
        self._operations = tuple(sorted({t.operation for t in tasks}))
        self._operation_index = jnp.asarray(
            [self._operations.index(t.operation) for t in tasks], jnp.int32
        )
        self._groups = [
            (
                jnp.asarray(members),
                jnp.asarray(validation[0]),
                jnp.asarray(validation[1]),
                jnp.asarray(test[0]),
                jnp.asarray(test[1]),
            )
            for members, validation, test in eval_groups(self.tasks)
        ]
        task = tasks[0]
        self._batch_shape = (task.batch_size, task.input_size)

    # --- the model, statelessly ------------------------------------------------

    @contextlib.contextmanager
    def _weights_in_force(self, weights, state, strengths=None):
        mapping = list(zip(self.setup.variables, weights))
        mapping += list(zip(self.setup.state_variables, state))
        if strengths is not None:
            mapping += [
                (variable, strengths[j])
                for j, variable in enumerate(self._strength_variables)
            ]
        with keras.StatelessScope(state_mapping=mapping, collect_losses=True) as scope:
            yield scope

    def _forward(self, weights, state, x, strengths=None, training=False):
        """One replica's output, losses and updated state."""
        with self._weights_in_force(weights, state, strengths) as scope:
            y = self.template.call(x, training=training)
            losses = self.template.losses if training else []
            updated = [scope.get_current_value(v) for v in self.setup.state_variables]
        return y, losses, updated

    def _replica_loss(self, weights, state, strengths, x, t):
        y, regularization, state = self._forward(
            weights, state, x, strengths, training=True
        )
        loss = self.setup.loss(t, y)
        # The compiled model's total: the loss plus every added loss, summed.
        total = jnp.sum(jnp.stack([loss, *regularization]))
        return total, (state, loss, sum(regularization, jnp.zeros_like(loss)))

    # --- data ---------------------------------------------------------------------

    def _replica_batch(self, key, table, mask, operation, step):
        unit = counter_uniform(key, step, self._batch_shape, xp=jnp)
        x = place_uniform(unit, *table, xp=jnp)
        sums = jnp.matmul(x, mask, precision=jax.lax.Precision.HIGHEST)
        columns = [sums[..., j : j + 1] for j in range(mask.shape[-1])]
        targets = [apply_operation(op, columns) for op in self._operations]
        t = targets[-1]
        for i in range(len(targets) - 2, -1, -1):
            t = jnp.where(operation == i, targets[i], t)
        return x, t

    def training_batch(self, step):
        """Every replica's batch `step`: `(x [R, B, I], t [R, B, 1])`.

        Slice r is what replica r trains on at optimizer step `step` → `step
        + 1`; it depends on that replica's seed and task only.
        """
        return jax.vmap(self._replica_batch, in_axes=(0, 0, 0, 0, None))(
            self._keys,
            self._tables,
            self._masks,
            self._operation_index,
            jnp.asarray(step, jnp.int32),
        )

    # --- one block of steps ---------------------------------------------------------

    def train_step(self, carry: EngineState, inputs) -> tuple[EngineState, None]:
        """One training step of every replica: `jax.lax.scan`'s body.

        Args:
            carry: the run's variables (`EngineState` of JAX arrays).
            inputs: `(step, strengths)`: the step's index and λ of every
                scheduled regularizer at it.

        Returns:
            `(carry, None)`: the variables after the step.
        """
        step, strengths = inputs
        x, t = self.training_batch(step)
        carry, _ = self.step_on_batch(carry, step, strengths, x, t)
        return carry, None

    def step_on_batch(self, carry: EngineState, step, strengths, x, t):
        """One training step of every replica on the given batches.

        `train_step` draws the batches and calls this; a test can hand it
        other batches (another code's data, to replay its training).

        Args:
            carry: the run's variables (`EngineState` of JAX arrays).
            step: the step's index (a replica that stops here diverged at
                `step + 1`).
            strengths: λ of every scheduled regularizer at this step.
            x, t: every replica's batch, `[R, B, I]` and `[R, B, 1]`.

        Returns:
            `(carry, (loss, regularization))`: the variables after the step,
            and each replica's loss and the sum of its regularization losses
            (λ·R) at the step's start, `[R]` each.
        """

        def total(weights):
            losses, aux = jax.vmap(self._replica_loss, in_axes=(0, 0, None, 0, 0))(
                weights, carry.model_state, strengths, x, t
            )
            return jnp.sum(losses), (losses, aux)

        gradients, (losses, (model_state, loss, regularization)) = jax.grad(
            total, has_aux=True
        )(carry.weights)
        gradients = self.setup.optimizer.clip(gradients, _JaxOps)
        weights, optimizer = self.optimizer.stateless_apply(
            carry.optimizer, gradients, carry.weights
        )
        flags = [True] * len(weights) + self._slot_flags + [True] * len(model_state)
        kept, active, diverged = step_rules(
            _JaxOps,
            self.setup.constraints,
            losses,
            [*weights, *optimizer, *model_state],
            [*carry.weights, *carry.optimizer, *carry.model_state],
            flags,
            carry.active,
            carry.diverged,
            step,
        )
        return carry.unflatten([*kept, active, diverged]), (loss, regularization)

    def _train_block(self, start: int, strengths: np.ndarray) -> None:
        self._train_programs(self._block_fn, [self], [start], [strengths])

    @staticmethod
    def _train_programs(program, runs, starts, strengths) -> None:
        with matmul_precision():
            carries = program(
                tuple(run.carry for run in runs),
                tuple(jnp.asarray(start, jnp.int32) for start in starts),
                tuple(jnp.asarray(table) for table in strengths),
                steps=len(strengths[0]),
            )
        for run, carry in zip(runs, carries):
            run.carry = carry

    @classmethod
    def train_together(cls, runs, steps: int, programs: dict) -> None:
        """Trains `steps` steps of several runs as one compiled program.

        The runs may differ in their model, training and step; each iteration
        of the program's loop takes one step of each (`_scan_steps`, the loop
        a run trains alone in), so the runs share a device's cost per step.
        The program is compiled once per set of runs (a run that ends means
        another program for the others) and kept in `programs`.
        """
        if len(runs) == 1:
            return super().train_together(runs, steps, programs)
        key = tuple(id(run) for run in runs)
        if key not in programs:
            programs.clear()  # the runs changed: the old program is of no use
            programs[key] = _compiled(runs)
        strengths = [run.strengths(run.step, run.step + steps) for run in runs]
        starts = [run.step for run in runs]
        cls._train_programs(programs[key], runs, starts, strengths)

    # --- evaluation -----------------------------------------------------------------

    def _group_errors(self, trainable, model_state, members, x, targets):
        """Chunked float32 sums of squared errors: `[n, size / _CHUNK]`."""
        weights = [w[members] for w in trainable]
        state = [s[members] for s in model_state]

        def one(weights, state, target):
            y, _, _ = self._forward(weights, state, x)
            error = jnp.reshape(y, target.shape) - target
            squares = jnp.square(error).reshape(-1)
            pad = (-squares.shape[0]) % _CHUNK
            squares = jnp.pad(squares, (0, pad))
            return jnp.sum(squares.reshape(-1, _CHUNK), axis=-1)

        return jax.vmap(one)(weights, state, targets)

    def mean_squared_errors(self, x, targets, members=None) -> np.ndarray:
        """The MSE of replicas `members` on a fixed set, as an evaluation has it.

        Args:
            x: the set's inputs, `[n, I]`.
            targets: each member's targets, `[len(members), n, 1]`.
            members: the replicas (default: every one, in order).

        Returns:
            A float64 array `[len(members)]`.
        """
        if members is None:
            members = jnp.arange(self.num_replicas)
        with matmul_precision():
            sums = self._errors_fn(
                self.carry.weights,
                self.carry.model_state,
                jnp.asarray(members),
                jnp.asarray(x),
                jnp.asarray(targets),
            )
        return np.asarray(sums, np.float64).sum(axis=-1) / x.shape[0]

    def _replica_errors(self):
        interpolation = np.zeros(self.num_replicas)
        extrapolation = np.zeros(self.num_replicas)
        for members, x_val, t_val, x_test, t_test in self._groups:
            rows = np.asarray(members)
            interpolation[rows] = self.mean_squared_errors(x_val, t_val, members)
            extrapolation[rows] = self.mean_squared_errors(x_test, t_test, members)
        return interpolation, extrapolation

    def _replica_sparsity(self, trainable, model_state):
        def one(weights, state):
            with self._weights_in_force(weights, state):
                errors = [
                    distance_to_sparse(w, xp=jnp)
                    for read in self._effective
                    for w in read()
                ]
            return functools.reduce(jnp.maximum, errors, jnp.float32(0.0))

        return jax.vmap(one)(trainable, model_state)

    def _sparsity_errors(self, replicas) -> dict[int, float]:
        errors = np.asarray(
            self._sparsity_fn(self.carry.weights, self.carry.model_state), np.float64
        )
        return {int(r): float(errors[r]) for r in replicas}

    def _diverged_at(self) -> np.ndarray:
        return np.asarray(self.carry.diverged)

    def _set_active(self, active: np.ndarray) -> None:
        self.carry = self.carry._replace(active=jnp.asarray(active))

    # --- state ------------------------------------------------------------------

    def _engine_state(self) -> EngineState:
        return self.carry.map(np.asarray)

    def _set_engine_state(self, state: EngineState) -> None:
        self.carry = state.map(jnp.asarray)

    def stacked_weights(self) -> list[np.ndarray]:
        return [np.asarray(w) for w in self.carry.weights]

    def stacked_optimizer_state(self) -> list[np.ndarray]:
        return [
            np.asarray(v)
            for v, per_replica in zip(self.carry.optimizer, self._slot_flags)
            if per_replica
        ]

    def stacked_state(self) -> list[np.ndarray]:
        return [np.asarray(s) for s in self.carry.model_state]


def _effective_weight_readers(model) -> list:
    """One callable per unit: its effective weights, as tensors, when called."""
    return [
        functools.partial(_read_effective, layer)
        for layer in iter_layers(model)
        if layer is not model
    ]


def _read_effective(layer) -> list:
    # A Variable's value inside the StatelessScope is the replica's.
    return [
        keras.ops.convert_to_tensor(value)
        for value in effective_weight_tensors(layer).values()
    ]
