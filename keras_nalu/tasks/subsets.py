"""The subsets of a subset-sum task: Algorithm 1 of Madsen & Johansen (2020)."""

from __future__ import annotations

import math
import numbers

import numpy as np

from keras_nalu.errors import ArgumentError


class SubsetGeometry:
    """Where the subsets lie in the input (a mixin of `SubsetSumTask`).

    Derived from the fields `input_size`, `subset_ratio`, `overlap_ratio`,
    `num_subsets`, `seed` (the offset) and `explicit_subsets`.
    """

    def _ratio_subsets(self) -> tuple[tuple[int, int], ...]:
        owner = type(self).__name__
        if self.subset_length < 1:
            raise ArgumentError(
                owner,
                "subset_ratio",
                self.subset_ratio,
                expectation="subsets of at least one element, "
                "floor({subset_ratio} * {input_size}) >= 1",
                received={
                    "subset_ratio": self.subset_ratio,
                    "input_size": self.input_size,
                },
            )
        if self.total_length > self.input_size:
            raise ArgumentError(
                owner,
                "subset_ratio",
                self.subset_ratio,
                problem="the subsets must fit in the input: {num_subsets} * "
                "subset_length - ({num_subsets} - 1) * overlap_length = "
                f"{self.total_length} <= {{input_size}}",
                received={
                    name: getattr(self, name)
                    for name in (
                        "input_size",
                        "subset_ratio",
                        "overlap_ratio",
                        "num_subsets",
                    )
                },
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
