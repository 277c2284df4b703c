"""The Neural Accumulator (additive NAC, "NAC+")."""

from keras import ops

from keras_nalu._api import export
from keras_nalu.initializers import clone_with_new_seed
from keras_nalu.layers.base import (
    ArithmeticLayer,
    resolve_constraint,
    resolve_initializer,
    resolve_regularizer,
    serialize_parts,
)


def nac_weight(w_hat, m_hat):
    """W = tanh(Ŵ) ⊙ σ(M̂): biased towards {-1, 0, 1} (Trask et al. 2018, eq. 1)."""
    return ops.tanh(w_hat) * ops.sigmoid(m_hat)


class NACWeights(ArithmeticLayer):
    """Holds the NAC's Ŵ and M̂ and their initializer/regularizer/constraint."""

    def __init__(
        self,
        units: int,
        kernel_initializer="nac_uniform",
        kernel_regularizer=None,
        kernel_constraint=None,
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.kernel_initializer = resolve_initializer(kernel_initializer)
        self.kernel_regularizer = resolve_regularizer(kernel_regularizer)
        self.kernel_constraint = resolve_constraint(kernel_constraint, -1.0, 1.0)

    def add_nac_weights(self, input_dim, prefix=""):
        """Adds Ŵ and M̂; M̂ gets its own draw even from a seeded initializer.

        A second pair (a `prefix`, e.g. the NALU's separate "mul_" weights)
        draws anew too, rather than repeating the first pair's values.
        """
        offset = 2 if prefix else 0
        w_hat_initializer = self.kernel_initializer
        if offset:
            w_hat_initializer = clone_with_new_seed(w_hat_initializer, offset)
        w_hat = self.add_kernel(
            f"{prefix}w_hat",
            input_dim,
            w_hat_initializer,
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        m_hat = self.add_kernel(
            f"{prefix}m_hat",
            input_dim,
            clone_with_new_seed(self.kernel_initializer, offset + 1),
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        return w_hat, m_hat

    def build_weights(self, input_dim):
        self.w_hat, self.m_hat = self.add_nac_weights(input_dim)

    @property
    def kernel(self):
        """The effective weight matrix W (read-only)."""
        return nac_weight(self.to_math(self.w_hat), self.to_math(self.m_hat))

    def effective_weights(self):
        return {"kernel": self.kernel}

    def get_config(self):
        return {**super().get_config(), **serialize_parts(self, "kernel")}


@export
class NAC(NACWeights):
    """Neural Accumulator: addition and subtraction with W = tanh(Ŵ)⊙σ(M̂).

        y = x · W,   W = tanh(Ŵ) ⊙ σ(M̂)

    Ŵ and M̂ are unconstrained; their initialization makes Var[W] the Glorot
    variance 2/(I+O) (Madsen & Johansen 2020, App. B.2). `layer.kernel` gives W.

    Args:
        units: output size, an integer >= 1.
        kernel_initializer: initializer for Ŵ and M̂ (M̂ gets an independent
            draw); default `"nac_uniform"`.
        kernel_regularizer: Keras regularizer on Ŵ and M̂; default None.
        kernel_constraint: Keras constraint on Ŵ and M̂; default None.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.NAC(1)
    >>> layer.build((None, 2))
    >>> _ = layer.w_hat.assign([[20.0], [20.0]])
    >>> _ = layer.m_hat.assign([[20.0], [20.0]])
    >>> y = layer(np.array([[5.0, 3.0]], "float32"))
    >>> keras.ops.convert_to_numpy(y).round(4)
    array([[8.]], dtype=float32)

    Reference: Trask et al., "Neural Arithmetic Logic Units", NeurIPS 2018,
    §2 (eq. 1); initialization from Madsen & Johansen (2020), App. B.2.
    """

    def call(self, inputs):
        return self.to_output(ops.matmul(self.to_math(inputs), self.kernel))
