"""The Neural Multiplication Unit."""

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


def nmu_product(x, kernel):
    """y_o = ∏_i (W_io·x_i + 1 - W_io) for x of shape (..., I), W of (I, O).

    A weight of 1 lets its input through as a factor, a weight of 0 turns it
    into the multiplicative identity. TensorFlow's product gradient is exact
    even when a factor is zero (Madsen & Johansen 2020, eq. 26-27 divide by it).
    """
    factors = ops.expand_dims(x, -1) * kernel + (1.0 - kernel)
    return ops.prod(factors, axis=-2)


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

    Args:
        units: output size, an integer >= 1.
        kernel_initializer: initializer for W; default `"nmu_uniform"`.
        kernel_regularizer: `"sparsity"` (the paper's schedule above), None, or
            any Keras regularizer.
        kernel_constraint: `"clip"` (to [0, 1]), None, or any Keras constraint.
        **kwargs: base `keras.layers.Layer` arguments (name, dtype, ...).

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras_nalu
    >>> layer = keras_nalu.layers.NMU(1)
    >>> layer.build((None, 2))
    >>> _ = layer.kernel.assign([[1.0], [1.0]])
    >>> layer(np.array([[-3.0, 4.0]], "float32")).numpy()
    array([[-12.]], dtype=float32)

    Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §2.5
    (eq. 10-12), §2.6, App. A.3 and B.4.
    """

    def __init__(
        self,
        units: int,
        kernel_initializer="nmu_uniform",
        kernel_regularizer="sparsity",
        kernel_constraint="clip",
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.kernel_initializer = resolve_initializer(kernel_initializer)
        self.kernel_regularizer = resolve_regularizer(
            kernel_regularizer, nalu_regularizers.nmu_sparsity
        )
        self.kernel_constraint = resolve_constraint(kernel_constraint, 0.0, 1.0)

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

    def call(self, inputs):
        kernel = self.effective_weights()["kernel"]
        return self.to_output(nmu_product(self.to_math(inputs), kernel))

    def get_config(self):
        return {**super().get_config(), **serialize_parts(self, "kernel")}
