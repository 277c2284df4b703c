"""The recurrent arithmetic task: subset sums accumulated over a sequence."""

from __future__ import annotations

import dataclasses
import sys

from keras_nalu._validation import check_positive_int
from keras_nalu.tasks.operations import is_tf_tensor
from keras_nalu.tasks.ranges import Range
from keras_nalu.tasks.sampling import DEFAULT_TEST_SEED, DEFAULT_VALIDATION_SEED
from keras_nalu.tasks.subset_sum import SubsetSumTask


@dataclasses.dataclass(frozen=True)
class RecurrentArithmeticTask(SubsetSumTask):
    """The arithmetic task over time: sums run over every step of a sequence.

        a = Σ_t Σ_{i∈A} x_{t,i},   b = Σ_t Σ_{i∈B} x_{t,i},   t = a ∘ b

    with x_t ∈ Rᴵ (I = 10) and the subsets A, B chosen exactly as in
    `ArithmeticTask` (L = ⌊s·I⌋ = 2, overlap 1, offset k ∈ [0, 7] drawn from
    `seed`). Training and validation sequences have `train_length` steps
    (10) from `interpolation_range`; test sequences have `test_length` steps
    (1000) from `extrapolation_range`, so a, b and t are far larger than any
    seen in training. Checks and warnings are those of `ArithmeticTask`; in
    particular "mul" and "squared" on long test sequences warn when the
    targets exceed float32's exact-integer range (2**24), as with the
    defaults (|t| up to 1.44e8).

    Args:
        operation: one of "add", "sub", "mul", "div", "squared", "root".
        input_size: I, the size of each step x_t.
        subset_ratio: s ∈ (0, 1], subset length as a fraction of I.
        overlap_ratio: ∈ [0, 1], overlap as a fraction of the subset length.
        num_subsets: how many subsets.
        train_length: steps per training and validation sequence.
        test_length: steps per test sequence.
        interpolation_range: training/validation range, default U[1, 2].
        extrapolation_range: test range, default U[2, 6].
        batch_size: training batch size.
        validation_size: size of the fixed validation set.
        test_size: size of the fixed test set (1000 sequences of 1000 steps
            of 10 float32 values: 40 MB).
        seed: the experiment seed: draws the offset and the training stream.
        validation_seed: fixed seed of the validation inputs.
        test_seed: fixed seed of the test inputs.
        explicit_subsets: `[start, end)` pairs replacing the derived subsets.

    Example:

    >>> from keras_nalu.tasks import RecurrentArithmeticTask
    >>> task = RecurrentArithmeticTask("add", test_size=4)
    >>> x, t = task.test_data()
    >>> x.shape, t.shape
    ((4, 1000, 10), (4, 1))

    Reference: Trask et al., "Neural Arithmetic Logic Units", NeurIPS 2018,
    App. B (recurrent tasks).
    """

    sums_over_steps = True

    operation: str = "add"
    input_size: int = 10
    subset_ratio: float = 0.25
    overlap_ratio: float = 0.5
    num_subsets: int = 2
    train_length: int = 10
    test_length: int = 1000
    interpolation_range: Range = Range(((1.0, 2.0),))
    extrapolation_range: Range = Range(((2.0, 6.0),))
    batch_size: int = 128
    validation_size: int = 1000
    test_size: int = 1000
    seed: int = 0
    validation_seed: int = DEFAULT_VALIDATION_SEED
    test_seed: int = DEFAULT_TEST_SEED
    explicit_subsets: tuple[tuple[int, int], ...] | None = None

    def _positive_int_fields(self) -> tuple[str, ...]:
        return (*super()._positive_int_fields(), "train_length", "test_length")

    def _steps(self, split: str) -> int:
        return self.test_length if split == "extrapolation" else self.train_length

    def _steps_note(self, split: str) -> str:
        if split == "extrapolation":
            return f" over test_length={self.test_length} steps"
        return f" over train_length={self.train_length} steps"

    def _example_shape(self, split: str, length: int | None = None) -> tuple:
        return (length or self._steps(split), self.input_size)

    def _reduce_steps(self, x):
        if is_tf_tensor(x):
            return sys.modules["tensorflow"].reduce_sum(x, axis=-2)
        return x.sum(axis=-2)

    @property
    def input_shape(self) -> tuple[None, int]:
        """`(None, input_size)`: any number of steps of `input_size` values."""
        return (None, self.input_size)

    def sample(self, n: int, which: str, seed, length: int | None = None):
        """Draws `n` sequences from the interpolation or extrapolation range.

        Args:
            n: number of sequences.
            which: "interpolation" or "extrapolation".
            seed: an integer or a shape-`[2]` stateless seed.
            length: steps per sequence; default `train_length` for
                interpolation and `test_length` for extrapolation.

        Returns:
            `(x, t)` float32 tensors of shapes `(n, length, input_size)` and
            `(n, 1)`.
        """
        if length is not None:
            length = check_positive_int(type(self).__name__, "length", length)
        shape = (n, *self._example_shape(self._check_split(which), length))
        x = self._range(which).sample(shape, seed)
        return x, self.target(x)
