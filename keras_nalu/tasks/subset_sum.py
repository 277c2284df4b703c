"""`SubsetSumTask`: what the static and the recurrent arithmetic tasks share."""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

from keras_nalu.tasks.operations import apply_operation, is_tf_tensor
from keras_nalu.tasks.ranges import Range
from keras_nalu.tasks.sampling import TaskSampling
from keras_nalu.tasks.subsets import SubsetGeometry
from keras_nalu.tasks.validation import TaskChecks


class SubsetSumTask(TaskChecks, SubsetGeometry, TaskSampling):
    """What the static and the recurrent arithmetic tasks share.

    Its checks (`TaskChecks`, `keras_nalu.tasks.validation`), the subset
    geometry (`SubsetGeometry`, Algorithm 1 of Madsen & Johansen,
    `keras_nalu.tasks.subsets`) and the samplers of the training stream and
    the fixed sets (`TaskSampling`, `keras_nalu.tasks.sampling`), plus the
    targets and the config round trip defined here. Concrete tasks are
    frozen dataclasses declaring the fields; they implement
    `_example_shape(split, length)` and may override `_reduce_steps(x)` (the
    sum over time, with `sums_over_steps = True`), `_steps(split)`,
    `_steps_note()` and `_positive_int_fields()`.
    """

    #: Whether the target sums the inputs over time steps first
    #: (`_reduce_steps`): `stacked_targets` shares subset sums only between
    #: tasks that do not.
    sums_over_steps = False

    # --- hooks ------------------------------------------------------------

    def _example_shape(self, split: str, length: int | None = None) -> tuple:
        raise NotImplementedError

    def _reduce_steps(self, x):
        return x

    def _steps(self, split: str) -> int:
        return 1

    def _steps_note(self, split: str) -> str:
        return ""

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
        if is_tf_tensor(x):
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
        return self.numpy_target(self._reduce_steps(x.astype(np.float64)), x.dtype)

    def numpy_target(self, x64, dtype, sums=None):
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
