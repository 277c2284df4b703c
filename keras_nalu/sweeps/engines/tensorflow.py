"""The TensorFlow replica engine: a `tf.function` per block of steps. Its data
(each replica's batches are `run_experiment`'s, bit for bit) and rounding:
docs/architecture.md; its speed: `benchmarks/speed.py`."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from keras_nalu.sweeps.engines.run import ReplicaRun
from keras_nalu.sweeps.engines.setup import eval_groups
from keras_nalu.sweeps.engines.state import EngineState
from keras_nalu.sweeps.engines.step import step_rules


def _read(variable) -> tf.Tensor:
    """The variable's current value as a tensor (a snapshot inside tf.function)."""
    return tf.identity(variable.value)


class TensorFlowReplicaRun(ReplicaRun):
    """`ReplicaRun` on the TensorFlow backend (see `ReplicaRun`)."""

    engine = "tensorflow"
    supports_batched = False

    def _build_engine(self) -> None:
        self._weights = self._build_stacked()
        self._slots = [
            v for v, own in zip(self.optimizer.variables, self._slot_flags) if own
        ]
        self._active_flags = tf.Variable(tf.ones([self.num_replicas], tf.bool))
        self._diverged = tf.Variable(
            tf.fill([self.num_replicas], tf.constant(-1, tf.int64))
        )
        ((_, validation, test),) = eval_groups(self.tasks)
        self._validation = tuple(map(tf.constant, validation))
        self._test = tuple(map(tf.constant, test))
        self._block_fn = self._make_train_block()
        self._replica_mse = tf.function(self._replica_mse_fn, reduce_retracing=True)

    def training_batch(self, step):
        """Every replica's batch `step` (int64): `(x [R, B, I], t [R, B, 1])`,
        slice r batch `step` of `ArithmeticTask(seed=seeds[r]).train_dataset()`.
        """
        # One small graph per replica, the task's own: cheaper than a gather
        # over stacked inputs, and bit-identical by construction.
        inputs = [task.train_inputs(step) for task in self.tasks]
        targets = [task.target(x) for task, x in zip(self.tasks, inputs)]
        return tf.stack(inputs), tf.stack(targets)

    def _non_trainable(self) -> list:
        # Only the regularizers' strengths (λ), if the layers track them: the
        # same for every replica, assigned before each step.
        return [_read(v) for v in self.template.non_trainable_variables]

    def _replica_loss(self, weights, x, t):
        y, _, regularization = self.template.stateless_call(
            weights, self._non_trainable(), x, training=True, return_losses=True
        )
        # The compiled model's total: the loss plus every added loss, summed.
        return keras.ops.sum([self.setup.loss(t, y), *regularization])

    def _losses_and_gradients(self, weights, x, t):
        with tf.GradientTape() as tape:
            tape.watch(weights)
            losses = tf.vectorized_map(
                lambda args: self._replica_loss(*args), (weights, x, t)
            )
            total = tf.reduce_sum(losses)
        return losses, tape.gradient(total, weights)

    def _apply(self, step, losses, gradients):
        gradients = self.setup.optimizer.clip(gradients)
        variables = self._weights + self._slots
        before = [_read(v) for v in variables]
        self.optimizer.apply(gradients, self._weights)
        kept, active, diverged = step_rules(
            self.setup.constraints,
            losses,
            [_read(v) for v in variables],
            before,
            [True] * len(variables),
            tf.identity(self._active_flags),
            tf.identity(self._diverged),
            step,
        )
        for variable, values in zip(variables, kept):
            variable.assign(values)
        self._diverged.assign(diverged)
        self._active_flags.assign(active)

    def _make_train_block(self):
        setup = self.setup
        table = tf.TensorSpec([None, len(setup.regularizers)], setup.strength_dtype)

        @tf.function(input_signature=[tf.TensorSpec([], tf.int64), table])
        def train_block(start, strengths):
            # Software pipeline: the batch of step i + 1 is drawn while step i
            # trains (they are independent), so the two cores work together.
            x, t = self.training_batch(start)
            for i in tf.range(tf.shape(strengths, out_type=tf.int64)[0]):
                next_x, next_t = self.training_batch(start + i + 1)
                for j, regularizer in enumerate(self.setup.regularizers):
                    regularizer.current_strength.assign(strengths[i, j])
                weights = [_read(w) for w in self._weights]
                losses, gradients = self._losses_and_gradients(weights, x, t)
                self._apply(start + i, losses, gradients)
                x, t = next_x, next_t

        return train_block

    def _train_block(self, start: int, strengths: np.ndarray) -> None:
        self._block_fn(tf.constant(start, tf.int64), tf.constant(strengths))

    def _replica_mse_fn(self, x, targets):
        def one(args):
            weights, target = args
            y, _ = self.template.stateless_call(
                weights, self._non_trainable(), x, training=False
            )
            prediction = tf.cast(y, tf.float64)
            target = tf.reshape(tf.cast(target, tf.float64), tf.shape(prediction))
            return tf.reduce_mean(tf.square(prediction - target))

        return tf.vectorized_map(one, ([_read(w) for w in self._weights], targets))

    def _replica_errors(self):
        data = (self._validation, self._test)
        return tuple(self._replica_mse(*inputs).numpy() for inputs in data)

    def _diverged_at(self) -> np.ndarray:
        return self._diverged.numpy()

    def _set_active(self, active: np.ndarray) -> None:
        self._active_flags.assign(tf.constant(active))

    def _variables(self) -> EngineState:
        flags = [self._active_flags, self._diverged]
        return EngineState(self._weights, list(self.optimizer.variables), [], *flags)

    def _engine_state(self) -> EngineState:
        return self._variables().map(lambda variable: np.asarray(variable.numpy()))

    def _set_engine_state(self, state: EngineState) -> None:
        for variable, values in zip(self._variables().flat(), state.flat()):
            variable.assign(values)
