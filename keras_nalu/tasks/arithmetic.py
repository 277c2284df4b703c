"""The arithmetic task: an operation on sums of contiguous subsets of the input.

The subset-sum base that the recurrent task shares (its checks, subsets,
targets and data streams) and its static form `ArithmeticTask`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import numbers
import operator
import sys
import warnings

import numpy as np

from keras_nalu._optional import import_tensorflow
from keras_nalu._validation import (
    check_choice,
    check_non_negative_int,
    check_positive_int,
)
from keras_nalu.tasks._philox import fold_in
from keras_nalu.tasks.ranges import OverlappingRangesWarning, Range

OPERATIONS = ("add", "sub", "mul", "div", "squared", "root")
"""The operations of the arithmetic task: + − × ÷ z² √z (z² and √z use `a`)."""

SPLITS = ("interpolation", "extrapolation")

DEFAULT_VALIDATION_SEED = 43_953_907
DEFAULT_TEST_SEED = 8_689_336

EVALUATION_BATCH_SIZE = 2500
"""Batch size of `validation_dataset` / `test_dataset` when none is given."""

# The training stream folds the batch index into (seed, _TRAIN_STREAM); the
# fixed sets use (validation_seed, 0) and (test_seed, 0), so no training batch
# can repeat a validation or test draw.
_TRAIN_STREAM = 1

# Beyond 2**24 float32 no longer holds every integer: targets this large carry
# rounding errors larger than the paper's success thresholds.
_FLOAT32_EXACT_LIMIT = 2.0**24


def apply_operation(operation: str, sums):
    """`t = op(a₀, a₁, …)` on the subset sums.

    add: a₀ + a₁ + …; sub: a₀ − a₁ − …; mul: a₀·a₁·…; div: a₀ / a₁ / …;
    squared: a₀²; root: √a₀ (the last two use only the first subset). Works on
    tensors (in eager or graph mode) and on NumPy arrays alike, returning the
    same kind.

    Args:
        operation: one of `OPERATIONS`.
        sums: list of tensors or arrays `a_j` of equal shape.

    Returns:
        The target, of the shape of each `a_j`.

    Example:

    >>> from keras_nalu.tasks.arithmetic import apply_operation
    >>> apply_operation("div", [6.0, 2.0, 3.0])
    1.0
    """
    first, rest = sums[0], sums[1:]
    if operation == "add":
        return functools.reduce(operator.add, rest, first)
    if operation == "sub":
        return functools.reduce(operator.sub, rest, first)
    if operation == "mul":
        return functools.reduce(operator.mul, rest, first)
    if operation == "div":
        return functools.reduce(operator.truediv, rest, first)
    if operation == "squared":
        return first * first
    if operation == "root":
        if _is_tf_tensor(first):
            return sys.modules["tensorflow"].sqrt(first)
        return first**0.5
    raise ValueError(
        f"apply_operation expects operation to be one of {list(OPERATIONS)}. "
        f"Received: operation={operation!r}"
    )


def _is_tf_tensor(x) -> bool:
    """Whether `x` is a TensorFlow tensor (never, if TensorFlow is not loaded)."""
    tf = sys.modules.get("tensorflow")
    return tf is not None and tf.is_tensor(x)


def _check_ratio(owner: str, name: str, value, allow_zero: bool) -> float:
    valid = (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (0 <= value if allow_zero else 0 < value)
        and value <= 1
    )
    if not valid:
        interval = "[0, 1]" if allow_zero else "(0, 1]"
        raise ValueError(
            f"{owner} expects {name} in {interval}. Received: {name}={value!r}"
        )
    return float(value)


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


def stacked_targets(tasks, x) -> np.ndarray:
    """Every task's target of the same NumPy inputs `x`, stacked: `(n, ..., 1)`.

    Equal to `np.stack([task.target(x) for task in tasks])`, value for
    value, but a subset that several tasks share is summed once: thousands
    of replicas' validation and test targets take a fraction of a second
    instead of minutes. Tasks that sum over time steps (the recurrent task)
    compute their own.

    Example:

    >>> tasks = [ArithmeticTask(input_size=10, seed=s) for s in range(3)]
    >>> x, _ = tasks[0].validation_data()
    >>> stacked_targets(tasks, x).shape
    (3, 10000, 1)
    """
    x = np.asarray(x)
    x64, sums, targets = None, {}, []
    for task in tasks:
        if type(task)._reduce_steps is not _SubsetSumTask._reduce_steps:
            targets.append(task.target(x))
            continue
        if x64 is None:
            x64 = x.astype(np.float64)
        targets.append(task._numpy_target(x64, x.dtype, sums))
    return np.stack(targets)


class _SubsetSumTask:
    """What the static and the recurrent arithmetic tasks share.

    The subset geometry (Algorithm 1 of Madsen & Johansen), validation,
    targets, the training stream, the fixed sets and the config round trip.
    Concrete tasks are frozen dataclasses declaring the fields; they implement
    `_example_shape(split, length)` and may override `_reduce_steps(x)` (the
    sum over time), `_steps(split)`, `_steps_note()` and
    `_positive_int_fields()`.
    """

    # --- hooks ------------------------------------------------------------

    def _example_shape(self, split: str, length: int | None = None) -> tuple:
        raise NotImplementedError

    def _reduce_steps(self, x):
        return x

    def _steps(self, split: str) -> int:
        return 1

    def _steps_note(self) -> str:
        return ""

    # --- construction -----------------------------------------------------

    def __post_init__(self):
        owner = type(self).__name__
        normalize = functools.partial(object.__setattr__, self)
        normalize(
            "operation", check_choice(owner, "operation", self.operation, OPERATIONS)
        )
        for name in self._positive_int_fields():
            normalize(name, check_positive_int(owner, name, getattr(self, name)))
        normalize(
            "subset_ratio",
            _check_ratio(owner, "subset_ratio", self.subset_ratio, allow_zero=False),
        )
        normalize(
            "overlap_ratio",
            _check_ratio(owner, "overlap_ratio", self.overlap_ratio, allow_zero=True),
        )
        for name in ("seed", "validation_seed", "test_seed"):
            normalize(name, check_non_negative_int(owner, name, getattr(self, name)))
        for name in ("interpolation_range", "extrapolation_range"):
            normalize(name, Range.parse(getattr(self, name), name=name))
        if self.explicit_subsets is None:
            subsets = self._ratio_subsets()
        else:
            normalize("explicit_subsets", self._check_explicit_subsets())
            subsets = self.explicit_subsets
        # Not a field: derived once, so equality and config stay field-based.
        normalize("_subsets", subsets)
        self._check_operation_domain()

    def _positive_int_fields(self) -> tuple[str, ...]:
        return (
            "input_size",
            "num_subsets",
            "batch_size",
            "validation_size",
            "test_size",
        )

    def _ratio_subsets(self) -> tuple[tuple[int, int], ...]:
        owner = type(self).__name__
        if self.subset_length < 1:
            raise ValueError(
                f"{owner} expects subsets of at least one element, "
                "floor(subset_ratio * input_size) >= 1. Received: "
                f"subset_ratio={self.subset_ratio!r}, input_size={self.input_size!r}"
            )
        if self.total_length > self.input_size:
            raise ValueError(
                f"{owner} expects the subsets to fit in the input: num_subsets * "
                "subset_length - (num_subsets - 1) * overlap_length = "
                f"{self.total_length} <= input_size. Received: "
                f"input_size={self.input_size!r}, "
                f"subset_ratio={self.subset_ratio!r}, "
                f"overlap_ratio={self.overlap_ratio!r}, "
                f"num_subsets={self.num_subsets!r}"
            )
        stride = self.subset_length - self.overlap_length
        return tuple(
            (start, start + self.subset_length)
            for start in (self.offset + i * stride for i in range(self.num_subsets))
        )

    def _check_explicit_subsets(self) -> tuple[tuple[int, int], ...]:
        owner = type(self).__name__
        value = self.explicit_subsets
        error = ValueError(
            f"{owner} expects explicit_subsets to be a non-empty sequence of "
            "[start, end) integer pairs with 0 <= start < end <= "
            f"input_size={self.input_size}. Received: explicit_subsets={value!r}"
        )
        try:
            subsets = tuple(tuple(pair) for pair in value)
        except TypeError:
            raise error from None
        if not subsets:
            raise error
        for pair in subsets:
            if len(pair) != 2 or not all(
                isinstance(i, numbers.Integral) and not isinstance(i, bool)
                for i in pair
            ):
                raise error
            if not 0 <= pair[0] < pair[1] <= self.input_size:
                raise error
        return tuple((int(start), int(end)) for start, end in subsets)

    def _check_operation_domain(self):
        owner = type(self).__name__
        # Only ArithmeticTask has the field; a unit that divides by values
        # near 0 (the NMRU) is trained there.
        allow_zero_divisor = getattr(self, "allow_zero_divisor", False)
        for split in SPLITS:
            name = f"{split}_range"
            value_range = getattr(self, name)
            if (
                self.operation == "div"
                and len(self.subsets) > 1
                and not allow_zero_divisor
                and self._divisor_may_be_zero(value_range, split)
            ):
                raise ValueError(
                    f"{owner} with operation='div' expects {name} to keep the "
                    "divisor away from 0 (exclude 0; one sign for a sum of "
                    "several inputs); only a unit that adds ε to the divisor "
                    "(the NMRU, the NPUs) divides by values near 0: "
                    f"allow_zero_divisor=True. Received: {name}={value_range}"
                )
            if self.operation == "root" and value_range.lower < 0:
                if value_range.upper <= 0:
                    raise ValueError(
                        f"{owner} with operation='root' expects {name} to allow "
                        "a >= 0; every subset sum is negative and its root is NaN. "
                        f"Received: {name}={value_range}"
                    )
                warnings.warn(
                    f"{owner} with operation='root': {name}={value_range} allows "
                    "negative sums a, whose root is NaN.",
                    stacklevel=4,
                )
        bound = self._target_bound()
        if bound > _FLOAT32_EXACT_LIMIT:
            warnings.warn(
                f"{owner} with operation={self.operation!r} can produce targets "
                f"up to {bound:.3g} on extrapolation_range="
                f"{self.extrapolation_range}{self._steps_note()}, beyond "
                "float32's exact-integer "
                "range (2**24): rounding alone makes the MSE large.",
                stacklevel=4,
            )

    def _divisor_may_be_zero(self, value_range, split: str) -> bool:
        """Whether a divisor, a subset sum over `value_range`, can be 0."""
        terms = self._steps(split) * max(end - start for start, end in self.subsets[1:])
        if terms == 1:  # one input: 0 only if a part of the range holds it
            return any(lo <= 0 <= hi for lo, hi in value_range.parts)
        return value_range.lower <= 0 <= value_range.upper

    def _target_bound(self) -> float:
        """An upper bound of |t| over the extrapolation set (0 if unbounded)."""
        value_range = self.extrapolation_range
        steps = self._steps("extrapolation")
        largest = max(abs(value_range.lower), abs(value_range.upper))
        sums = [steps * (end - start) * largest for start, end in self.subsets]
        if self.operation in ("add", "sub"):
            return sum(sums)
        if self.operation == "mul":
            return math.prod(sums)
        if self.operation == "squared":
            return sums[0] ** 2
        return 0.0  # div and root shrink values; their domain is checked above.

    # --- geometry ---------------------------------------------------------

    @property
    def subset_length(self) -> int:
        """L = ⌊subset_ratio · input_size⌋ (ratio-derived, even if explicit)."""
        return math.floor(self.subset_ratio * self.input_size)

    @property
    def overlap_length(self) -> int:
        """⌊overlap_ratio · subset_length⌋: elements shared by neighbours."""
        return math.floor(self.overlap_ratio * self.subset_length)

    @property
    def total_length(self) -> int:
        """Span of all subsets: num_subsets · L − (num_subsets − 1) · overlap."""
        return (
            self.num_subsets * self.subset_length
            - (self.num_subsets - 1) * self.overlap_length
        )

    @property
    def offset(self) -> int:
        """k, drawn once from `seed`, uniform in [0, input_size − total_length].

        With `explicit_subsets`, the start of the first subset.
        """
        if self.explicit_subsets is not None:
            return self.explicit_subsets[0][0]
        rng = np.random.default_rng(self.seed)
        return int(rng.integers(0, self.input_size - self.total_length, endpoint=True))

    @property
    def subsets(self) -> tuple[tuple[int, int], ...]:
        """The `[start, end)` index range of every subset, in order.

        Subset i starts at k + i·(L − overlap): by default `[k, k+25)` and
        `[k+13, k+38)`. `explicit_subsets` replaces them when given.
        """
        return self._subsets

    def subset_mask(self) -> np.ndarray:
        """`(input_size, len(subsets))` float32 of 0 and 1: column j selects subset j.

        `x @ mask` (or `(x[..., None] * mask).sum(-2)`) are the subset sums, a
        form in which runs with different subsets compute their targets in
        one vectorized call.

        Example:

        >>> from keras_nalu.tasks import ArithmeticTask
        >>> ArithmeticTask(input_size=4, explicit_subsets=[[0, 2], [1, 4]]
        ...                ).subset_mask().T.tolist()
        [[1.0, 1.0, 0.0, 0.0], [0.0, 1.0, 1.0, 1.0]]
        """
        mask = np.zeros((self.input_size, len(self.subsets)), np.float32)
        for j, (start, end) in enumerate(self.subsets):
            mask[start:end, j] = 1.0
        return mask

    # --- data -------------------------------------------------------------

    def target(self, x):
        """The target t = op(a₀, a₁, …) of inputs `x`; a_j sums subset j.

        Args:
            x: inputs (the last axis is the input): a TensorFlow tensor, a JAX
                array (also inside a compiled function) or anything NumPy
                reads.

        Returns:
            `t` of shape `(..., 1)`, of the kind of `x` (NumPy for other
            array-likes). NumPy inputs are summed in float64 and the target
            rounded once to the input's dtype.
        """
        if _is_tf_tensor(x):
            tf = sys.modules["tensorflow"]
            x = self._reduce_steps(x)
            sums = [
                tf.reduce_sum(x[..., start:end], axis=-1, keepdims=True)
                for start, end in self.subsets
            ]
            return apply_operation(self.operation, sums)
        if type(x).__module__.startswith(("jax", "jaxlib")):
            x = self._reduce_steps(x)
            sums = [
                x[..., start:end].sum(axis=-1, keepdims=True)
                for start, end in self.subsets
            ]
            return apply_operation(self.operation, sums)
        x = np.asarray(x)
        return self._numpy_target(self._reduce_steps(x.astype(np.float64)), x.dtype)

    def _numpy_target(self, x64, dtype, sums=None):
        """The target of float64 inputs (steps reduced), rounded to `dtype`.

        `sums`, a dict, keeps each subset's sum by its `(start, end)` for
        other tasks of the same inputs (`stacked_targets`).
        """
        dtype = dtype if np.issubdtype(dtype, np.floating) else np.float32
        sums = {} if sums is None else sums
        for span in self.subsets:
            if span not in sums:
                sums[span] = x64[..., span[0] : span[1]].sum(axis=-1, keepdims=True)
        parts = [sums[span] for span in self.subsets]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(apply_operation(self.operation, parts)).astype(dtype)

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
        key = tf.constant([self.seed, _TRAIN_STREAM], dtype=tf.int64)

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
            [tf.cast(seed, tf.int64), tf.constant(_TRAIN_STREAM, dtype=tf.int64)]
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
        return fold_in((self.seed, _TRAIN_STREAM), 0)[0]

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

    # --- config -----------------------------------------------------------

    def to_config(self) -> dict:
        """Every field as JSON-native values; `from_config` reads it back."""
        config = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, Range):
                value = value.to_config()
            elif field.name == "explicit_subsets" and value is not None:
                value = [list(pair) for pair in value]
            config[field.name] = value
        return config

    @classmethod
    def from_config(cls, config: dict):
        """Builds the task from `to_config`'s dict."""
        return cls(**config)

    def replace(self, **changes):
        """A copy with some fields changed, validated and normalized again."""
        return dataclasses.replace(self, **changes)


def _batched(data, batch_size):
    if batch_size is None:
        batch_size = EVALUATION_BATCH_SIZE
    batch_size = check_positive_int("Dataset", "batch_size", batch_size)
    tf = import_tensorflow("tf.data evaluation datasets")
    return tf.data.Dataset.from_tensor_slices(data).batch(batch_size)


@dataclasses.dataclass(frozen=True)
class ArithmeticTask(_SubsetSumTask):
    """The arithmetic task: an operation on two sums over subsets of the input.

        a = Σ_{i ∈ [k, k+L)} xᵢ,   b = Σ_{i ∈ [k+L−o, k+2L−o)} xᵢ,   t = a ∘ b

    with x ∈ Rᴵ drawn from `interpolation_range` for training and validation
    and from `extrapolation_range` for testing; L = ⌊s·I⌋ and o = ⌊o_ratio·L⌋.
    The offset k is drawn once per experiment from `seed`; training batches are
    sampled afresh every step from a stream seeded by `seed`; the validation
    and test inputs are fixed by their own seeds. `squared` (a²) and `root`
    (√a) use only the first subset. With more subsets the operation chains:
    a₀ − a₁ − a₂, a₀ / a₁ / a₂, …

    Checks: a `ValueError`, naming the argument and its value, for setups that
    cannot work (unknown operation, non-positive sizes, ratios out of range,
    subsets that do not fit, empty/inverted ranges, "div" with a divisor that
    can be 0: a range that contains 0, or spans both signs when the divisor
    sums several inputs, unless `allow_zero_divisor`; "root" with only
    negative values); a
    warning for legitimate but risky ones ("root" with a range allowing
    negative sums; targets beyond float32's exact-integer range 2**24; an
    extrapolation range that overlaps the interpolation range, an
    `OverlappingRangesWarning`).

    Args:
        operation: one of "add", "sub", "mul", "div", "squared", "root".
        input_size: I, the length of x.
        subset_ratio: s ∈ (0, 1], the subset length as a fraction of I.
        overlap_ratio: ∈ [0, 1], the overlap of consecutive subsets as a
            fraction of the subset length.
        num_subsets: how many subsets (2 in the paper).
        interpolation_range: training/validation range (`Range` or any spelling
            `Range.parse` reads), default U[1, 2].
        extrapolation_range: test range, default U[2, 6].
        batch_size: training batch size.
        validation_size: size of the fixed validation set.
        test_size: size of the fixed test set.
        seed: the experiment seed: draws the offset and the training stream.
        validation_seed: fixed seed of the validation inputs.
        test_seed: fixed seed of the test inputs.
        explicit_subsets: `[start, end)` pairs replacing the ratio-derived
            subsets (and offset), e.g. for the simple 10-parameter task.
        allow_zero_divisor: accept "div" with a divisor that can be 0 or
            near it, for a unit that divides safely there (the NMRU, the
            NPUs: `Preset.divides_near_zero`, which `ExperimentConfig`
            passes); the targets are then unbounded.

    Example:

    >>> from keras_nalu.tasks import ArithmeticTask
    >>> task = ArithmeticTask("mul", seed=1)
    >>> task.subset_length, task.overlap_length
    (25, 12)
    >>> x, t = next(iter(task.train_dataset()))
    >>> x.shape, t.shape
    (TensorShape([128, 100]), TensorShape([128, 1]))

    Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §4.1,
    App. C.1 (Algorithm 1, Table 3); Trask et al., "Neural Arithmetic Logic
    Units", NeurIPS 2018, App. B.
    """

    operation: str = "add"
    input_size: int = 100
    subset_ratio: float = 0.25
    overlap_ratio: float = 0.5
    num_subsets: int = 2
    interpolation_range: Range = Range(((1.0, 2.0),))
    extrapolation_range: Range = Range(((2.0, 6.0),))
    batch_size: int = 128
    validation_size: int = 10_000
    test_size: int = 10_000
    seed: int = 0
    validation_seed: int = DEFAULT_VALIDATION_SEED
    test_seed: int = DEFAULT_TEST_SEED
    explicit_subsets: tuple[tuple[int, int], ...] | None = None
    allow_zero_divisor: bool = False

    def __post_init__(self):
        if not isinstance(self.allow_zero_divisor, bool):
            raise ValueError(
                "ArithmeticTask expects allow_zero_divisor to be True or False. "
                f"Received: allow_zero_divisor={self.allow_zero_divisor!r}"
            )
        super().__post_init__()
        shared = self.interpolation_range.overlap(self.extrapolation_range)
        if shared:
            warnings.warn(
                f"ArithmeticTask: extrapolation_range={self.extrapolation_range} "
                f"overlaps interpolation_range={self.interpolation_range} on "
                f"{Range(shared)}; test inputs there lie in the training range, so "
                "the extrapolation verdict means little. Pick disjoint ranges.",
                OverlappingRangesWarning,
                stacklevel=3,
            )

    def _example_shape(self, split: str, length: int | None = None) -> tuple:
        return (self.input_size,)

    @property
    def input_shape(self) -> tuple[int]:
        """The shape of one example, `(input_size,)`."""
        return (self.input_size,)

    def sample(self, n: int, which: str, seed):
        """Draws `n` examples from the interpolation or extrapolation range.

        Args:
            n: number of examples.
            which: "interpolation" or "extrapolation".
            seed: an integer or a shape-`[2]` stateless seed.

        Returns:
            `(x, t)` float32 tensors of shapes `(n, input_size)` and `(n, 1)`.
        """
        x = self._range(which).sample((n, *self._example_shape(which)), seed)
        return x, self.target(x)

    def sample_numpy(self, n: int, which: str, seed):
        """`sample` computed in NumPy: the same float32 inputs, without TensorFlow.

        Args:
            n: number of examples.
            which: "interpolation" or "extrapolation".
            seed: an integer or a pair of integers.

        Returns:
            `(x, t)` NumPy arrays: `x` float32 `(n, input_size)`, equal to
            `sample(n, which, seed)[0]` bit for bit, and `t` `(n, 1)`.

        Example:

        >>> from keras_nalu.tasks import ArithmeticTask
        >>> x, t = ArithmeticTask(input_size=4, explicit_subsets=((0, 2), (2, 4))
        ...                       ).sample_numpy(2, "extrapolation", seed=7)
        >>> x.shape, t.shape
        ((2, 4), (2, 1))
        """
        x = self._range(which).sample_numpy((n, *self._example_shape(which)), seed)
        return x, self.target(x)


def simple_function_task(seed: int = 0, **overrides) -> ArithmeticTask:
    """The simple 10-parameter function t = (x₁ + x₂)·(x₁ + x₂ + x₃ + x₄), x ∈ R⁴.

    An `ArithmeticTask` with operation "mul", input_size 4 and the explicit
    subsets [0, 2) and [0, 4); ranges and sizes keep the arithmetic defaults
    unless overridden.

    Args:
        seed: the experiment seed (the training stream; the subsets are fixed).
        **overrides: any other `ArithmeticTask` field.

    Returns:
        The `ArithmeticTask`.

    Example:

    >>> import numpy as np
    >>> from keras_nalu.tasks import simple_function_task
    >>> simple_function_task().target(np.array([[1.0, 2.0, 3.0, 4.0]]))
    array([[30.]])

    Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §1.1.
    """
    config = {
        "operation": "mul",
        "input_size": 4,
        "explicit_subsets": ((0, 2), (0, 4)),
        "seed": seed,
        **overrides,
    }
    return ArithmeticTask(**config)
