"""The Neural Multiplication Unit, and its stochastic form (the sNMU)."""

import math
import numbers

import keras
from keras import ops

from keras_nalu import regularizers as nalu_regularizers
from keras_nalu._api import export
from keras_nalu.layers.base import (
    ArithmeticLayer,
    clip_like_constraint,
    resolve_constraint,
    resolve_initializer,
    resolve_regularizer,
    serialize_parts,
)

#: `noise="batch"`: n ~ U[1, 1 + 1/std(x)], the upper bound from each batch.
BATCH_NOISE = "batch"


def nmu_product(x, kernel):
    """y_o = ∏_i (W_io·x_i + 1 - W_io) for x of shape (..., I), W of (I, O).

    A weight of 1 lets its input through as a factor, a weight of 0 turns it
    into the multiplicative identity. TensorFlow's product gradient is exact
    even when a factor is zero (Madsen & Johansen 2020, eq. 26-27 divide by it).
    """
    factors = ops.expand_dims(x, -1) * kernel + (1.0 - kernel)
    return ops.prod(factors, axis=-2)


def check_noise(owner: str, noise):
    """None, "batch", or `(low, high)` as a tuple of floats with 0 < low < high."""
    if noise is None or noise == BATCH_NOISE:
        return noise
    error = ValueError(
        f"{owner} expects noise to be None, {BATCH_NOISE!r} or (low, high) with "
        f"0 < low < high. Received: noise={noise!r}"
    )
    if isinstance(noise, str) or not hasattr(noise, "__len__") or len(noise) != 2:
        raise error
    low, high = noise
    for bound in (low, high):
        if (
            isinstance(bound, bool)
            or not isinstance(bound, numbers.Real)
            or not math.isfinite(bound)
        ):
            raise error
    if not 0 < low < high:
        raise error
    return (float(low), float(high))


def draw_noise(x, noise, seed_generator):
    """n ~ U[low, high] of the shape of `x`; `"batch"`: U[1, 1 + 1/std(x)].

    The batch bound is a constant of the step (no gradient flows through it);
    std is the sample standard deviation over every element of `x`.
    """
    x = ops.convert_to_tensor(x)
    if noise == BATCH_NOISE:
        count = ops.cast(ops.size(x), x.dtype)
        deviation = x - ops.mean(x)
        variance = ops.sum(deviation * deviation) / ops.maximum(count - 1.0, 1.0)
        low, high = 1.0, ops.stop_gradient(1.0 + 1.0 / ops.sqrt(variance))
    else:
        low, high = noise
    unit = keras.random.uniform(ops.shape(x), dtype=x.dtype, seed=seed_generator)
    return low + (high - low) * unit


@export
class NMU(ArithmeticLayer):
    """Neural Multiplication Unit: a gated product, weights clamped to [0, 1].

        y_o = ∏_i (clip(W_io, 0, 1)·x_i + 1 - clip(W_io, 0, 1))

    Unlike the NAC•, it multiplies negative and small inputs exactly and has
    no ε. The defaults are the paper's: W ~ U[0.25, 0.75], a `Clip(0, 1)`
    constraint applied after each step and in the forward pass, and a linear
    sparsity regularizer of strength 10 ramped in between steps 10⁶ and
    2·10⁶ (driven by `keras_nalu.callbacks.RegularizationSchedule`). The
    product is computed in float32 under a mixed-precision policy.

    With `noise` it is the stochastic NMU (sNMU) of Mistry et al. (2022): in
    training only, each input is multiplied by a fresh n ~ U[low, high] (one
    per element) and the noise is divided out again,

        y_o = ∏_i (W_io·x_i·n_i + 1 - W_io) / ∏_i (W_io·n_i + 1 - W_io),

    which equals the NMU once W ∈ {0, 1} but gives other gradients in
    between. At inference (`training` false: `predict`, `evaluate`, an
    exported model) it is the plain NMU. The noise is drawn with
    `keras.random` from a `keras.random.SeedGenerator` the layer owns, whose
    state is a non-trainable variable of the layer.

    Args:
        units: output size, an integer >= 1.
        kernel_initializer: initializer for W; default `"nmu_uniform"`.
        kernel_regularizer: `"sparsity"` (the paper's schedule above), None, or
            any Keras regularizer.
        kernel_constraint: `"clip"` (to [0, 1]), None, or any Keras constraint.
        noise: None (the NMU), `(low, high)` with 0 < low < high (the sNMU;
            the authors' default is `(1.0, 5.0)`), or `"batch"`: n ~ U[1,
            1 + 1/std(x)] with std over the whole batch.
        seed: integer seed of the noise; None draws one (from Python's
            `random`, which `keras.utils.set_random_seed` seeds).
        **kwargs: base `keras.layers.Layer` arguments (name, dtype, ...).

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.
        training: whether to add the noise (sNMU only).

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.NMU(1)
    >>> layer.build((None, 2))
    >>> _ = layer.kernel.assign([[1.0], [1.0]])
    >>> keras.ops.convert_to_numpy(layer(np.array([[-3.0, 4.0]], "float32")))
    array([[-12.]], dtype=float32)
    >>> snmu = keras_nalu.layers.NMU(1, noise=(1.0, 5.0), seed=0)
    >>> snmu.build((None, 2))
    >>> _ = snmu.kernel.assign([[1.0], [1.0]])
    >>> y = snmu(np.array([[-3.0, 4.0]], "float32"), training=True)
    >>> keras.ops.convert_to_numpy(y).round(3)
    array([[-12.]], dtype=float32)

    Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §2.5
    (eq. 10-12), §2.6, App. A.3 and B.4. The sNMU: Mistry, Farrahi & Hare,
    "Improving the Robustness of Neural Multiplication Units with Reversible
    Stochasticity" (2022), §3.
    """

    def __init__(
        self,
        units: int,
        kernel_initializer="nmu_uniform",
        kernel_regularizer="sparsity",
        kernel_constraint="clip",
        noise=None,
        seed: int | None = None,
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.kernel_initializer = resolve_initializer(kernel_initializer)
        self.kernel_regularizer = resolve_regularizer(
            kernel_regularizer, nalu_regularizers.nmu_sparsity
        )
        self.kernel_constraint = resolve_constraint(kernel_constraint, 0.0, 1.0)
        self.noise = check_noise(type(self).__name__, noise)
        if seed is not None and (
            isinstance(seed, bool) or not isinstance(seed, numbers.Integral)
        ):
            raise ValueError(
                f"{type(self).__name__} expects seed to be None or an integer. "
                f"Received: seed={seed!r}"
            )
        self.seed = None if seed is None else int(seed)
        # Only the sNMU has random state: a plain NMU stays stateless.
        if self.noise is not None:
            self.seed_generator = keras.random.SeedGenerator(self.seed)

    def build_weights(self, input_dim):
        self.kernel = self.add_kernel(
            "kernel",
            input_dim,
            self.kernel_initializer,
            self.kernel_regularizer,
            self.kernel_constraint,
        )

    def effective_weights(self):
        kernel = clip_like_constraint(self.to_math(self.kernel), self.kernel_constraint)
        return {"kernel": kernel}

    def call(self, inputs, training=None):
        kernel = self.effective_weights()["kernel"]
        x = self.to_math(inputs)
        if not training or self.noise is None:
            return self.to_output(nmu_product(x, kernel))
        noise = draw_noise(x, self.noise, self.seed_generator)
        y = nmu_product(x * noise, kernel) / nmu_product(noise, kernel)
        return self.to_output(y)

    def get_config(self):
        noise = list(self.noise) if isinstance(self.noise, tuple) else self.noise
        return {
            **super().get_config(),
            **serialize_parts(self, "kernel"),
            "noise": noise,
            "seed": self.seed,
        }
