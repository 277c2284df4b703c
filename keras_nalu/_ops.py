"""`keras.ops` functions with the same subgradient on every backend.

At a kink the backends pick different subgradients: at the bounds of a clip
and at a tie of a minimum JAX gives ½ where TensorFlow and PyTorch give 1,
and for |x| at 0 JAX gives 1 where they give 0. A clamped weight sits exactly
on a bound after every optimizer step, so these points are met all the time:
the units and penalties below use TensorFlow's (and the papers' PyTorch
code's) choice on every backend, so a run trains the same way on each.
`mean` keeps a float64 mean in float64, which Keras' does not on JAX.
"""

import math

from keras import ops


def clip(x, min_value, max_value):
    """`ops.clip`, with gradient 1 on [min_value, max_value] (bounds included)."""
    x = ops.convert_to_tensor(x)
    inside = ops.logical_and(
        ops.greater_equal(x, min_value), ops.less_equal(x, max_value)
    )
    return ops.where(inside, x, ops.clip(x, min_value, max_value))


def absolute(x):
    """|x|, with gradient sign(x): 0 at x = 0."""
    x = ops.convert_to_tensor(x)
    return ops.sign(x) * x


def minimum(x, y):
    """`ops.minimum`, with the whole gradient to `x` at a tie."""
    x, y = ops.convert_to_tensor(x), ops.convert_to_tensor(y)
    return ops.where(ops.less_equal(x, y), x, y)


def mean(x, axis=None):
    """`ops.mean`, and in float64 for float64 values on every backend.

    On JAX, Keras computes every mean in float32 (it casts a 64-bit dtype to
    32 bits, as JAX does without `jax_enable_x64`), and so does the gradient
    that flows back through it. A float64 model's penalty, and the step it
    gives, would then be float32 numbers; this takes such a mean as the sum
    over the count in float64. Other dtypes go to `ops.mean` unchanged.
    """
    x = ops.convert_to_tensor(x)
    if ops.dtype(x) != "float64":
        return ops.mean(x, axis=axis)
    if axis is None:
        axis = tuple(range(len(x.shape)))
    axes = (axis,) if isinstance(axis, int) else axis
    count = math.prod(x.shape[a] for a in axes)
    return ops.sum(x, axis=axis) / count
