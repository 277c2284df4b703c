"""The Neural Arithmetic Logic Unit."""

import keras
from keras import ops

from keras_nalu._api import export
from keras_nalu._validation import check_positive
from keras_nalu.layers.base import resolve_initializer, resolve_regularizer
from keras_nalu.layers.nac import NACWeights, nac_weight
from keras_nalu.layers.nac_mul import log_space_product


@export
class NALU(NACWeights):
    """Neural Arithmetic Logic Unit: a learned gate between NAC+ and NAC•.

        g = σ(x·G + b)
        y = g ⊙ (x·W_add) + (1 - g) ⊙ exp(log(|x| + ε)·W_mul)

    By default the two paths share one W = tanh(Ŵ)⊙σ(M̂) (seed 002) and the
    gate has no bias. `separate_weights=True` gives the multiplicative path its
    own Ŵ, M̂ (seed 003's first iNALU fix, seed 001 App. C.5 "separate"), and
    `use_gate_bias=True` adds b.

    Args:
        units: output size, an integer >= 1.
        epsilon: ε > 0 inside the log of the multiplicative path; 1e-7.
        separate_weights: give the multiplicative path its own weights.
        use_gate_bias: add a bias b to the gate's pre-activation.
        kernel_initializer, kernel_regularizer, kernel_constraint: for the
            NAC weights Ŵ, M̂ (see `NAC`).
        gate_initializer: for G; default `"glorot_uniform"`.
        gate_regularizer: Keras regularizer on G; default None.
        gate_bias_initializer: for b; default `"zeros"`.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras_nalu
    >>> layer = keras_nalu.layers.NALU(1)
    >>> y = layer(np.array([[2.0, 3.0]], "float32"))
    >>> tuple(y.shape)
    (1, 1)

    Reference: Trask et al., "Neural Arithmetic Logic Units", NeurIPS 2018,
    §2; Madsen & Johansen (2020), §2.8 and App. C.5.
    """

    def __init__(
        self,
        units: int,
        epsilon: float = 1e-7,
        separate_weights: bool = False,
        use_gate_bias: bool = False,
        kernel_initializer="nac_uniform",
        kernel_regularizer=None,
        kernel_constraint=None,
        gate_initializer="glorot_uniform",
        gate_regularizer=None,
        gate_bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(
            units,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            kernel_constraint=kernel_constraint,
            **kwargs,
        )
        self.epsilon = check_positive("NALU", "epsilon", epsilon)
        self.separate_weights = bool(separate_weights)
        self.use_gate_bias = bool(use_gate_bias)
        self.gate_initializer = resolve_initializer(gate_initializer)
        self.gate_regularizer = resolve_regularizer(gate_regularizer)
        self.gate_bias_initializer = resolve_initializer(gate_bias_initializer)

    def build_weights(self, input_dim):
        self.w_hat, self.m_hat = self.add_nac_weights(input_dim)
        if self.separate_weights:
            self.mul_w_hat, self.mul_m_hat = self.add_nac_weights(
                input_dim, prefix="mul_"
            )
        self.gate = self.add_kernel(
            "gate", input_dim, self.gate_initializer, self.gate_regularizer, None
        )
        if self.use_gate_bias:
            self.gate_bias = self.add_weight(
                name="gate_bias",
                shape=(self.units,),
                initializer=self.gate_bias_initializer,
                autocast=False,
            )

    @property
    def mul_kernel(self):
        """The multiplicative path's W (the shared one unless separate)."""
        if not self.separate_weights:
            return self.kernel
        return nac_weight(self.to_math(self.mul_w_hat), self.to_math(self.mul_m_hat))

    def gate_values(self, inputs):
        """g = σ(x·G + b): 1 selects the additive path, 0 the multiplicative."""
        logits = ops.matmul(self.to_math(inputs), self.to_math(self.gate))
        if self.use_gate_bias:
            logits = logits + self.to_math(self.gate_bias)
        return ops.sigmoid(logits)

    def call(self, inputs):
        x = self.to_math(inputs)
        gate = self.gate_values(x)
        additive = ops.matmul(x, self.kernel)
        multiplicative = log_space_product(x, self.mul_kernel, self.epsilon)
        return self.to_output(gate * additive + (1.0 - gate) * multiplicative)

    def get_config(self):
        return {
            **super().get_config(),
            "epsilon": self.epsilon,
            "separate_weights": self.separate_weights,
            "use_gate_bias": self.use_gate_bias,
            "gate_initializer": keras.initializers.serialize(self.gate_initializer),
            "gate_regularizer": keras.regularizers.serialize(self.gate_regularizer),
            "gate_bias_initializer": keras.initializers.serialize(
                self.gate_bias_initializer
            ),
        }
