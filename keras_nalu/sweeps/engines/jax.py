"""The JAX replica engine: `jax.vmap` over replicas, `jax.lax.scan` over steps.

Its data, evaluation and precision: docs/architecture.md. Needs JAX and
Keras, not TensorFlow.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import dataclasses
import functools
import threading

import jax
import jax.numpy as jnp
import keras
import numpy as np

from keras_nalu.evaluation.sparsity import distance_to_sparse, effective_weight_tensors
from keras_nalu.keras_utils import iter_layers
from keras_nalu.presets import get_preset
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


def _scan_steps(runs, unroll, carries, data, starts, strengths, steps):
    """`steps` steps of every run in one `jax.lax.scan`, each on its own carry,
    batches (drawn from its `data`) and λ(t), as if alone: the runs' carries
    after."""
    twins = [_drawing_from(run, own) for run, own in zip(runs, data)]

    def one_step(carry, inputs):
        return tuple(
            run.train_step(own, own_inputs)[0]
            for run, own, own_inputs in zip(twins, carry, inputs)
        ), None

    inputs = tuple(
        (start + jnp.arange(steps, dtype=jnp.int32), table)
        for start, table in zip(starts, strengths)
    )
    carries, _ = jax.lax.scan(one_step, tuple(carries), inputs, unroll=unroll)
    return carries


def _drawing_from(run, data):
    """A shallow copy of `run` whose batches come from `data` (the traced
    arguments), the run itself untouched (other threads may trace with it)."""
    twin = copy.copy(run)
    twin._data = data
    return twin


def _compiled(runs):
    """The program of `_scan_steps` for these runs, compiled once per length."""
    unroll = max(run.unroll for run in runs)
    return jax.jit(
        functools.partial(_scan_steps, tuple(runs), unroll), static_argnames="steps"
    )


#: Recipes whose programs the last runs compiled (`_recipe_programs`).
_PROGRAMS: collections.OrderedDict = collections.OrderedDict()
_KEPT_PROGRAMS = 8
_PROGRAMS_LOCK = threading.Lock()


def _recipe_programs(run) -> tuple:
    """The compiled programs (steps, errors, sparsity) of `run`'s kind of run:
    its class, `unroll`, configs but their seeds, preset as registered now
    and Keras' precision. Its seeds, data and weights are the programs'
    arguments, so that the chunks of one recipe compile once, not once per
    chunk."""
    preset = get_preset(run.config.model)
    policy = keras.config.dtype_policy().name
    key = (type(run), run.unroll, run._operations, repr(preset), policy)
    key += tuple(
        dataclasses.astuple(dataclasses.replace(c, seed=0)) for c in run.configs
    )
    with _PROGRAMS_LOCK:
        if key not in _PROGRAMS:
            _PROGRAMS[key] = (
                _compiled([run]),
                jax.jit(run._group_errors),
                jax.jit(run._replica_sparsity),
            )
            while len(_PROGRAMS) > _KEPT_PROGRAMS:
                _PROGRAMS.popitem(last=False)
        _PROGRAMS.move_to_end(key)
        return _PROGRAMS[key]


class JaxReplicaRun(ReplicaRun):
    """`ReplicaRun` on the JAX backend (see `ReplicaRun` and this module)."""

    engine = "jax"
    supports_batched = True
    supports_state = True
    supports_packing = True

    def _build_engine(self) -> None:
        stacked = self._build_stacked()
        # The carry holds what a step changes: not λ, which is shared.
        self.carry = EngineState(
            weights=[jnp.asarray(v.value) for v in stacked],
            optimizer=[jnp.asarray(v.value) for v in self.optimizer.variables],
            model_state=[jnp.asarray(a) for a in self.setup.initial_state],
            active=jnp.ones(self.num_replicas, bool),
            diverged=jnp.full(self.num_replicas, -1, jnp.int32),
        )
        self._strength_variables = [r.current_strength for r in self.setup.regularizers]
        self._build_data()
        self._units = [u for u in iter_layers(self.template) if u is not self.template]
        programs = _recipe_programs(self)
        self._block_fn, self._errors_fn, self._sparsity_fn = programs

    def _build_data(self) -> None:
        tasks = self.tasks
        keys = np.stack([stream_key(seed, TRAIN_STREAM) for seed in self.seeds])
        parts = max(len(t.interpolation_range.parts) for t in tasks)
        tables = [t.interpolation_range.table(parts) for t in tasks]
        self._operations = tuple(sorted({t.operation for t in tasks}))
        operation_index = [self._operations.index(t.operation) for t in tasks]
        # What draws the batches: each replica's key, range table, subset
        # mask and operation (arguments of the compiled steps, not constants).
        self._data = (
            jnp.asarray(keys),
            tuple(jnp.asarray(np.stack(column)) for column in zip(*tables)),
            jnp.asarray(np.stack([t.subset_mask() for t in tasks])),
            jnp.asarray(operation_index, jnp.int32),
        )
        self._groups = [
            tuple(map(jnp.asarray, (members, *validation, *test)))
            for members, validation, test in eval_groups(self.tasks)
        ]
        self._batch_shape = (tasks[0].batch_size, tasks[0].input_size)

    @contextlib.contextmanager
    def _weights_in_force(self, weights, state, strengths=None):
        mapping = [*zip(self.setup.variables, weights)]
        mapping += zip(self.setup.state_variables, state)
        if strengths is not None:
            mapping += zip(self._strength_variables, strengths)
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

    def _replica_batch(self, key, table, mask, operation, step):
        unit = counter_uniform(key, step, self._batch_shape, xp=jnp)
        x = place_uniform(unit, *table, xp=jnp)
        sums = jnp.matmul(x, mask, precision=jax.lax.Precision.HIGHEST)
        columns = [sums[..., j : j + 1] for j in range(mask.shape[-1])]
        targets = [apply_operation(op, columns) for op in self._operations]
        return x, jnp.stack(targets)[operation]

    def training_batch(self, step):
        """Every replica's batch `step`: `(x [R, B, I], t [R, B, 1])`, slice r
        a function of replica r's seed and task only."""
        step = jnp.asarray(step, jnp.int32)
        return jax.vmap(self._replica_batch, in_axes=(0, 0, 0, 0, None))(
            *self._data, step
        )

    def train_step(self, carry: EngineState, inputs) -> tuple[EngineState, None]:
        """One training step of every replica (`jax.lax.scan`'s body); `inputs`:
        `(step, strengths)`, the step's index and λ of every scheduled
        regularizer at it. Returns `(carry after, None)`."""
        step, strengths = inputs
        x, t = self.training_batch(step)
        carry, _ = self.step_on_batch(carry, step, strengths, x, t)
        return carry, None

    def step_on_batch(self, carry: EngineState, step, strengths, x, t):
        """`train_step` on given batches `x [R, B, I]`, `t [R, B, 1]` (a test
        replays another code's data with it): `(carry, (loss, regularization))`,
        each replica's loss and λ·R at the step's start `[R]`."""

        def total(weights):
            losses, aux = jax.vmap(self._replica_loss, in_axes=(0, 0, None, 0, 0))(
                weights, carry.model_state, strengths, x, t
            )
            return jnp.sum(losses), (losses, aux)

        gradients, (losses, (model_state, loss, regularization)) = jax.grad(
            total, has_aux=True
        )(carry.weights)
        gradients = self.setup.optimizer.clip(gradients)
        weights, optimizer = self.optimizer.stateless_apply(
            carry.optimizer, gradients, carry.weights
        )
        flags = [True] * len(weights) + self._slot_flags + [True] * len(model_state)
        kept, active, diverged = step_rules(
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
                tuple(run._data for run in runs),
                tuple(jnp.asarray(start, jnp.int32) for start in starts),
                tuple(jnp.asarray(table) for table in strengths),
                steps=len(strengths[0]),
            )
        for run, carry in zip(runs, carries):
            run.carry = carry

    @classmethod
    def train_together(cls, runs, steps: int, programs: dict) -> None:
        """Trains `steps` steps of several runs (any recipes, any steps) as one
        program (`_scan_steps`), compiled once per set of runs."""
        if len(runs) == 1:
            return super().train_together(runs, steps, programs)
        key = tuple(id(run) for run in runs)
        if key not in programs:
            programs.clear()  # the runs changed: the old program is of no use
            programs[key] = _compiled(runs)
        strengths = [run.strengths(run.step, run.step + steps) for run in runs]
        starts = [run.step for run in runs]
        cls._train_programs(programs[key], runs, starts, strengths)

    def _group_errors(self, trainable, model_state, members, x, targets):
        """Chunked float32 sums of squared errors: `[n, size / _CHUNK]`."""
        weights = [w[members] for w in trainable]
        state = [s[members] for s in model_state]

        def one(weights, state, target):
            y, _, _ = self._forward(weights, state, x)
            error = jnp.reshape(y, target.shape) - target
            squares = jnp.square(error).reshape(-1)
            squares = jnp.pad(squares, (0, -squares.shape[0] % _CHUNK))
            return jnp.sum(squares.reshape(-1, _CHUNK), axis=-1)

        return jax.vmap(one)(weights, state, targets)

    def mean_squared_errors(self, x, targets, members=None) -> np.ndarray:
        """Float64 MSEs `[len(members)]` of replicas `members` (default: all)
        on inputs `x [n, I]` and their `targets [len(members), n, 1]`."""
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
        interpolation, extrapolation = np.zeros((2, self.num_replicas))
        for members, x_val, t_val, x_test, t_test in self._groups:
            rows = np.asarray(members)
            interpolation[rows] = self.mean_squared_errors(x_val, t_val, members)
            extrapolation[rows] = self.mean_squared_errors(x_test, t_test, members)
        return interpolation, extrapolation

    def _replica_sparsity(self, trainable, model_state):
        def one(weights, state):
            with self._weights_in_force(weights, state):
                # A Variable's value inside the StatelessScope is the replica's.
                errors = [
                    distance_to_sparse(keras.ops.convert_to_tensor(w), xp=jnp)
                    for unit in self._units
                    for w in effective_weight_tensors(unit).values()
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

    def _engine_state(self) -> EngineState:
        return self.carry.map(np.asarray)

    def _set_engine_state(self, state: EngineState) -> None:
        self.carry = state.map(jnp.asarray)
