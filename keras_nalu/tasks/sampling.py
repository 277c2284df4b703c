"""The subset-sum tasks' data: the training stream and the fixed sets.

Two samplers draw the same training batches: TensorFlow's stateless
generator (`train_dataset`, `train_inputs`) and its NumPy twin
(`train_inputs_numpy`, `train_batches`), bit for bit. The validation and
test sets are fixed by their own seeds and shared by every experiment.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from keras_nalu._optional import import_tensorflow
from keras_nalu._validation import (
    check_choice,
    check_non_negative_int,
    check_positive_int,
)
from keras_nalu.tasks._philox import fold_in
from keras_nalu.tasks.ranges import Range

SPLITS = ("interpolation", "extrapolation")

DEFAULT_VALIDATION_SEED = 43_953_907
DEFAULT_TEST_SEED = 8_689_336

EVALUATION_BATCH_SIZE = 2500
"""Batch size of `validation_dataset` / `test_dataset` when none is given."""

# The training stream folds the batch index into (seed, TRAIN_STREAM); the
# fixed sets use (validation_seed, 0) and (test_seed, 0), so no training batch
# can repeat a validation or test draw.
TRAIN_STREAM = 1


@functools.lru_cache(maxsize=8)
def _fixed_inputs(value_range: Range, shape: tuple, seed: int) -> np.ndarray:
    """The inputs of a fixed (validation or test) set, computed once per key.

    Drawn in NumPy (`Range.sample_numpy`, equal to TensorFlow's stateless
    draw), so every engine evaluates on the same inputs, with or without
    TensorFlow.
    """
    x = value_range.sample_numpy(shape, (seed, 0))
    x.setflags(write=False)
    return x


def _batched(data, batch_size):
    if batch_size is None:
        batch_size = EVALUATION_BATCH_SIZE
    batch_size = check_positive_int("Dataset", "batch_size", batch_size)
    tf = import_tensorflow("tf.data evaluation datasets")
    return tf.data.Dataset.from_tensor_slices(data).batch(batch_size)


class TaskSampling:
    """The samplers of a subset-sum task (a mixin of `SubsetSumTask`).

    They read the task's fields (`seed`, the ranges, the sizes and seeds of
    the sets), its `target` and its `_example_shape` hook.
    """

    def _check_split(self, which: str) -> str:
        return check_choice(type(self).__name__, "which", which, SPLITS)

    def _range(self, which: str) -> Range:
        return getattr(self, f"{self._check_split(which)}_range")

    def _batch(self, seed):
        x = self.interpolation_range.sample(
            (self.batch_size, *self._example_shape("interpolation")), seed
        )
        return x, self.target(x)

    def train_dataset(self, initial_batch: int = 0):
        """An endless stream of fresh training batches from interpolation_range.

        Batch `b` is drawn with a stateless seed derived from `(seed, b)`, so the
        stream is the same on every call and for every task with the same
        config, and a resumed run can continue it with `initial_batch`.

        Args:
            initial_batch: index of the first batch (0 starts the stream).

        Returns:
            A `tf.data.Dataset` of `(x, t)` float32 batches.
        """
        tf = import_tensorflow("ArithmeticTask.train_dataset (tf.data)")
        key = tf.constant([self.seed, TRAIN_STREAM], dtype=tf.int64)

        def batch(index):
            return self._batch(tf.random.experimental.stateless_fold_in(key, index))

        return (
            tf.data.Dataset.counter(start=initial_batch)
            .map(batch, num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE)
        )

    def train_inputs(self, index, seed=None):
        """The inputs x of batch `index` of `train_dataset()`, drawn on their own.

        `train_dataset()` yields `(train_inputs(b), target(train_inputs(b)))`
        for b = 0, 1, … bit for bit. `seed` replaces the task's `seed`; as a
        tensor it lets one vectorized call draw the batches of many
        experiments that differ only in their seed (`tf.vectorized_map`).

        Args:
            index: the batch index, an integer or an integer scalar tensor.
            seed: the experiment seed (integer or integer scalar tensor);
                None uses `self.seed`.

        Returns:
            A float32 tensor `(batch_size, *example_shape)`.

        Example:

        >>> import numpy as np
        >>> from keras_nalu.tasks import ArithmeticTask
        >>> task = ArithmeticTask(input_size=10, seed=3)
        >>> x, _ = next(iter(task.train_dataset()))
        >>> bool(np.array_equal(task.train_inputs(0), x))
        True
        """
        tf = import_tensorflow("ArithmeticTask.train_inputs")
        seed = self.seed if seed is None else seed
        key = tf.stack(
            [tf.cast(seed, tf.int64), tf.constant(TRAIN_STREAM, dtype=tf.int64)]
        )
        batch_seed = tf.random.experimental.stateless_fold_in(
            key, tf.cast(index, tf.int64)
        )
        return self.interpolation_range.sample(
            (self.batch_size, *self._example_shape("interpolation")), batch_seed
        )

    def train_inputs_numpy(self, index: int) -> np.ndarray:
        """`train_inputs(index)` computed in NumPy: the same float32 inputs,
        bit for bit, without TensorFlow.

        Args:
            index: the batch index, an integer.

        Returns:
            A float32 NumPy array `(batch_size, *example_shape)`.

        Example:

        >>> from keras_nalu.tasks import ArithmeticTask
        >>> ArithmeticTask(input_size=10, seed=3).train_inputs_numpy(0).shape
        (128, 10)
        """
        return self._numpy_batch(self._stream_seed(), index)

    def _stream_seed(self) -> int:
        # fold_in's drawn half depends on the key only, not on the batch.
        return fold_in((self.seed, TRAIN_STREAM), 0)[0]

    def _numpy_batch(self, stream_seed: int, index: int) -> np.ndarray:
        return self.interpolation_range.sample_numpy(
            (self.batch_size, *self._example_shape("interpolation")),
            (stream_seed, int(index)),
        )

    def train_batches(self, initial_batch: int = 0):
        """`train_dataset()` without TensorFlow: an endless iterator of batches.

        Batch `b` holds `train_inputs_numpy(b)`, the inputs of batch `b` of
        `train_dataset()` bit for bit, and their targets, summed in float64
        and rounded once to float32 (`target`; TensorFlow sums in float32, so
        a target may differ from the tf.data stream's in its last bit).
        `model.fit` reads it on every Keras backend.

        Args:
            initial_batch: index of the first batch (0 starts the stream).

        Returns:
            An iterator of `(x, t)` float32 NumPy batches.
        """
        first = check_non_negative_int(
            type(self).__name__, "initial_batch", initial_batch
        )
        draw = functools.partial(self._numpy_batch, self._stream_seed())
        return ((x, self.target(x)) for x in map(draw, itertools.count(first)))

    def _fixed_data(self, which: str, size: int, seed: int):
        x = _fixed_inputs(self._range(which), (size, *self._example_shape(which)), seed)
        return x, self.target(x)

    def validation_data(self) -> tuple[np.ndarray, np.ndarray]:
        """The fixed validation set: `validation_size` interpolation samples.

        Its inputs depend only on `validation_seed`, the interpolation range and
        the shapes (not on `seed`): every experiment is validated on the same
        inputs. They are computed once and shared (read-only arrays).

        Returns:
            `(x, t)` NumPy float32 arrays.
        """
        return self._fixed_data(
            "interpolation", self.validation_size, self.validation_seed
        )

    def test_data(self) -> tuple[np.ndarray, np.ndarray]:
        """The fixed test set: `test_size` extrapolation samples from `test_seed`.

        Returns:
            `(x, t)` NumPy float32 arrays (inputs shared and read-only).
        """
        return self._fixed_data("extrapolation", self.test_size, self.test_seed)

    def validation_dataset(self, batch_size: int | None = None):
        """`validation_data` in batches (of `EVALUATION_BATCH_SIZE` if None)."""
        return _batched(self.validation_data(), batch_size)

    def test_dataset(self, batch_size: int | None = None):
        """`test_data` in batches (of `EVALUATION_BATCH_SIZE` if None)."""
        return _batched(self.test_data(), batch_size)
