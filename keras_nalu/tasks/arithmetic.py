"""The arithmetic task: an operation on sums of contiguous subsets of the input.

`ArithmeticTask`, the static form of `SubsetSumTask` (the recurrent task is
`keras_nalu.tasks.recurrent`), the simple function task, and
`stacked_targets`, the targets of many tasks at once.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from keras_nalu.tasks.ranges import OverlappingRangesWarning, Range
from keras_nalu.tasks.sampling import DEFAULT_TEST_SEED, DEFAULT_VALIDATION_SEED
from keras_nalu.tasks.subset_sum import SubsetSumTask


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
        if task.sums_over_steps:
            targets.append(task.target(x))
            continue
        if x64 is None:
            x64 = x.astype(np.float64)
        targets.append(task.numpy_target(x64, x.dtype, sums))
    return np.stack(targets)


@dataclasses.dataclass(frozen=True)
class ArithmeticTask(SubsetSumTask):
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
