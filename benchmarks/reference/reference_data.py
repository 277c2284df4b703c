"""Madsen & Johansen's arithmetic-task data, regenerated in NumPy from the seed.

What the reference code's `SimpleFunctionStaticDataset` (stable-nalu,
`experiments/simple_function_static.py`) draws, written from its behaviour
and checked against its output: `trajectories.py` records a hash of every
batch the reference trained on and of its validation and test sets, and
`tests/sweeps/test_reference.py` compares these with `batch_hash` of the
arrays below, bit for bit.

- The experiment's generator is NumPy's `RandomState(seed)`. Its first draw
  is the subsets' offset, `randint(0, I - used + 1)`, `used` the inputs
  the subsets span (subsets of ⌊s·I⌋ inputs, each starting ⌊o·⌊s·I⌋⌋
  before the end of the one before).
- Its second draw, `randint(0, 2**32 - 1)`, seeds the training stream, a
  `RandomState` of its own: each batch is `uniform(low, high, (B, I))` in
  float64.
- The validation and test sets are the first 10,000 rows of streams seeded
  43953907 (interpolation range) and 8689336 (extrapolation range).
- a, b are the subsets' sums in float64, t = op(a, b) in float64; x and t
  are then cast to float32.

Only single-interval ranges (U[1, 2] → U[2, 6]) are regenerated here.
"""

from __future__ import annotations

import dataclasses

import numpy as np

VALIDATION_SEED = 43953907
TEST_SEED = 8689336
SET_SIZE = 10_000

OPERATIONS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "squared": lambda a, b: a * a,
    "root": lambda a, b: np.sqrt(a),
}
"""t = op(a, b) of the reference's operations, by its names."""


@dataclasses.dataclass(frozen=True)
class ReferenceData:
    """The reference code's data of one seed (its default task, two subsets).

    Example:

    >>> data = ReferenceData(seed=0)
    >>> data.subsets
    [(44, 69), (57, 82)]
    >>> x, t = data.training_stream().draw(2)
    >>> x.shape, t.shape, x.dtype
    ((2, 128, 100), (2, 128, 1), dtype('float32'))
    """

    seed: int
    operation: str = "mul"
    input_size: int = 100
    subset_ratio: float = 0.25
    overlap_ratio: float = 0.5
    interpolation_range: tuple[float, float] = (1.0, 2.0)
    extrapolation_range: tuple[float, float] = (2.0, 6.0)
    batch_size: int = 128

    def _draws(self) -> tuple[int, int]:
        """The experiment generator's two draws: the offset, the stream's seed."""
        size = int(self.subset_ratio * self.input_size)
        used = 2 * size - int(self.overlap_ratio * size)
        generator = np.random.RandomState(self.seed)
        offset = generator.randint(0, self.input_size - used + 1)
        return int(offset), int(generator.randint(0, 2**32 - 1))

    @property
    def subsets(self) -> list[tuple[int, int]]:
        """The two subsets `[start, end)` a and b sum."""
        size = int(self.subset_ratio * self.input_size)
        second = size - int(self.overlap_ratio * size)
        offset, _ = self._draws()
        return [(offset, offset + size), (offset + second, offset + second + size)]

    @property
    def training_seed(self) -> int:
        """The seed of the training stream's `RandomState`."""
        return self._draws()[1]

    def targets(self, x: np.ndarray) -> np.ndarray:
        """float32 t of float64 inputs `[..., I]`: `[..., 1]`."""
        a, b = (x[..., start:end].sum(axis=-1) for start, end in self.subsets)
        return OPERATIONS[self.operation](a, b)[..., np.newaxis].astype(np.float32)

    def _rows(self, generator, value_range, rows: int):
        x = generator.uniform(*value_range, size=(rows, self.input_size))
        return x.astype(np.float32), self.targets(x)

    def validation(self) -> tuple[np.ndarray, np.ndarray]:
        """The validation set: 10,000 rows of the interpolation range."""
        generator = np.random.RandomState(VALIDATION_SEED)
        return self._rows(generator, self.interpolation_range, SET_SIZE)

    def test(self) -> tuple[np.ndarray, np.ndarray]:
        """The test set: 10,000 rows of the extrapolation range."""
        generator = np.random.RandomState(TEST_SEED)
        return self._rows(generator, self.extrapolation_range, SET_SIZE)

    def training_stream(self) -> TrainingStream:
        """The training batches, from the first on."""
        return TrainingStream(self, np.random.RandomState(self.training_seed))


class TrainingStream:
    """The reference's training batches, drawn in order (`draw`)."""

    def __init__(self, data: ReferenceData, generator: np.random.RandomState):
        self.data, self.generator = data, generator

    def draw(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The next `count` batches: float32 `x [count, B, I]`, `t [count, B, 1]`.

        One draw of `count` batches is the same numbers as `count` draws of
        one: `RandomState.uniform` carries nothing over between calls.
        """
        data = self.data
        x, t = data._rows(
            self.generator, data.interpolation_range, count * data.batch_size
        )
        shape = (count, data.batch_size)
        return x.reshape(*shape, data.input_size), t.reshape(*shape, 1)
