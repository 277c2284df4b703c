"""The multiplicative Neural Accumulator, NAC•."""

from keras import ops

from keras_nalu._api import export
from keras_nalu._validation import check_positive
from keras_nalu.layers.nac import NACWeights


def log_space_product(x, kernel, epsilon):
    """exp(log(|x| + ε) · W): ∏_i (|x_i| + ε)^W_io (seed 002 eq. 3).

    Magnitudes only: the sign of x is lost, and a negative weight divides.
    """
    return ops.exp(ops.matmul(ops.log(ops.abs(x) + epsilon), kernel))


@export
class NACMul(NACWeights):
    """Multiplicative NAC (NAC•): a NAC applied in log space.

        y = exp(log(|x| + ε) · W),   W = tanh(Ŵ) ⊙ σ(M̂)

    Weights of 1 multiply, -1 divide, 0 ignore; the result is within ε of the
    exact product for positive inputs and its magnitude for negative ones.
    Computed in float32 under a mixed-precision policy.

    Args:
        units: output size, an integer >= 1.
        epsilon: ε > 0 inside the log; default 1e-7 (the reference code).
        kernel_initializer: initializer for Ŵ and M̂; default `"nac_uniform"`.
        kernel_regularizer: Keras regularizer on Ŵ and M̂; default None.
        kernel_constraint: Keras constraint on Ŵ and M̂; default None.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras_nalu
    >>> layer = keras_nalu.layers.NACMul(1)
    >>> layer.build((None, 2))
    >>> _ = layer.w_hat.assign([[20.0], [20.0]])
    >>> _ = layer.m_hat.assign([[20.0], [20.0]])
    >>> layer(np.array([[5.0, 3.0]], "float32")).numpy().round(3)
    array([[15.]], dtype=float32)

    Reference: Trask et al., "Neural Arithmetic Logic Units", NeurIPS 2018,
    §2 (eq. 3); Madsen & Johansen (2020), §2.3-2.4.
    """

    def __init__(self, units: int, epsilon: float = 1e-7, **kwargs):
        super().__init__(units, **kwargs)
        self.epsilon = check_positive("NACMul", "epsilon", epsilon)

    def call(self, inputs):
        y = log_space_product(self.to_math(inputs), self.kernel, self.epsilon)
        return self.to_output(y)

    def get_config(self):
        return {**super().get_config(), "epsilon": self.epsilon}
