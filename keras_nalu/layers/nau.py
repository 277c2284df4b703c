"""The Neural Addition Unit."""

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


@export
class NAU(ArithmeticLayer):
    """Neural Addition Unit: a linear map with weights clamped to [-1, 1].

        y = x · clip(W, -1, 1)

    Sparse weights in {-1, 0, 1} make each output an exact signed sum of
    inputs. The defaults are the paper's: W ~ U[-r, r] with
    r = min(0.5, √3·√(2/(I+O))), a `Clip(-1, 1)` constraint applied after each
    optimizer step and in the forward pass, and a linear sparsity regularizer
    of strength 0.01 ramped in between steps 5·10³ and 5·10⁴ (add
    `keras_nalu.callbacks.RegularizationSchedule` to `fit` to drive the ramp).

    Args:
        units: output size, an integer >= 1.
        kernel_initializer: initializer for W; default `"nau_uniform"`.
        kernel_regularizer: `"sparsity"` (the paper's schedule above), None, or
            any Keras regularizer.
        kernel_constraint: `"clip"` (to [-1, 1]), None (no clamp, the
            ablation), or any Keras constraint.
        **kwargs: base `keras.layers.Layer` arguments (name, dtype, ...).

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.NAU(1)
    >>> layer.build((None, 2))
    >>> _ = layer.kernel.assign([[1.0], [-1.0]])
    >>> keras.ops.convert_to_numpy(layer(np.array([[5.0, 3.0]], "float32")))
    array([[2.]], dtype=float32)

    Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §2.2
    (eq. 5-7) and App. B.1.2.
    """

    def __init__(
        self,
        units: int,
        kernel_initializer="nau_uniform",
        kernel_regularizer="sparsity",
        kernel_constraint="clip",
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.kernel_initializer = resolve_initializer(kernel_initializer)
        self.kernel_regularizer = resolve_regularizer(
            kernel_regularizer, nalu_regularizers.nau_sparsity
        )
        self.kernel_constraint = resolve_constraint(kernel_constraint, -1.0, 1.0)

    def build_weights(self, input_dim):
        self.kernel = self.add_weight(
            name="kernel",
            shape=(input_dim, self.units),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )

    def effective_weights(self):
        return {"kernel": clip_like_constraint(self.kernel, self.kernel_constraint)}

    def call(self, inputs):
        return ops.matmul(inputs, self.effective_weights()["kernel"])

    def get_config(self):
        return {**super().get_config(), **serialize_parts(self, "kernel")}
