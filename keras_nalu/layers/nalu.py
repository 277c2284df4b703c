"""The Neural Arithmetic Logic Unit."""

import keras
from keras import ops

from keras_nalu._api import export
from keras_nalu._validation import check_choice, check_positive
from keras_nalu.initializers import clone_with_new_seed
from keras_nalu.layers.base import (
    gated_sum,
    resolve_initializer,
    resolve_regularizer,
)
from keras_nalu.layers.nac import NACWeights, nac_weight
from keras_nalu.layers.nac_mul import log_space_product

GATE_TYPES = ("input", "constant")


@export
class NALU(NACWeights):
    """Neural Arithmetic Logic Unit: a learned gate between NAC+ and NAC•.

        g = σ(x·G + b)
        y = g ⊙ (x·W_add) + (1 - g) ⊙ exp(log(|x| + ε)·W_mul)

    By default the two paths share one W = tanh(Ŵ)⊙σ(M̂) (Trask et al. 2018) and the
    gate has no bias. Variants:

    - `separate_weights=True` gives the multiplicative path its own Ŵ, M̂
      (`mul_w_hat`, `mul_m_hat`; a NALU course report, §7.1, Madsen & Johansen (2020),
      App. C.5 "separate").
    - `use_gate_bias=True` adds b (Madsen & Johansen's (2020) reference code).
    - `gate_type="constant"`: an input-independent gate g = σ(G) with one
      parameter per output unit (`gate` of shape `(units,)`), as in the iNALU
      (Schlör, Ring & Hotho 2020). It cannot take a bias (it is one).
    - `two_gates=True`: one gate per path, y = g_a ⊙ a + g_m ⊙ m, with
      g_a = σ(x·G_a + b_a) and g_m = σ(x·G_m + b_m) (`gate`, `mul_gate`; or
      both input-independent with `gate_type="constant"`), not constrained to
      g_a + g_m = 1. This package's reading of "two gates": Madsen & Johansen (2020),
      §2.8 shows that the coupled choice g vs 1 - g starves the unselected path of
      gradient; independent gates let both paths learn and be switched off
      separately. It is not from a paper.

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
        gate_type: "input" (σ(x·G + b), Trask et al. (2018)) or "constant" (σ(G)).
        two_gates: a separate gate for the multiplicative path (see above).
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.NALU(1)
    >>> layer.build((None, 2))
    >>> _ = layer.w_hat.assign([[20.0], [20.0]])  # W = tanh(20)·σ(20) ≈ 1
    >>> _ = layer.m_hat.assign([[20.0], [20.0]])
    >>> x = np.array([[2.0, 3.0]], "float32")
    >>> _ = layer.gate.assign([[20.0], [20.0]])  # g = σ(x·G) ≈ 1: NAC+, 2 + 3
    >>> keras.ops.convert_to_numpy(layer(x)).round(3)
    array([[5.]], dtype=float32)
    >>> _ = layer.gate.assign([[-20.0], [-20.0]])  # g ≈ 0: NAC•, 2 · 3
    >>> keras.ops.convert_to_numpy(layer(x)).round(3)
    array([[6.]], dtype=float32)

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
        gate_type: str = "input",
        two_gates: bool = False,
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
        self.gate_type = check_choice("NALU", "gate_type", gate_type, GATE_TYPES)
        self.two_gates = bool(two_gates)
        if self.use_gate_bias and self.gate_type == "constant":
            raise ValueError(
                "NALU takes use_gate_bias=True only with gate_type='input' (a "
                "constant gate is its own bias). Received: use_gate_bias=True, "
                "gate_type='constant'"
            )

    def build_weights(self, input_dim):
        self.w_hat, self.m_hat = self.add_nac_weights(input_dim)
        if self.separate_weights:
            self.mul_w_hat, self.mul_m_hat = self.add_nac_weights(
                input_dim, prefix="mul_"
            )
        self.gate, self.gate_bias = self._add_gate(input_dim, "")
        if self.two_gates:
            self.mul_gate, self.mul_gate_bias = self._add_gate(input_dim, "mul_")

    def _add_gate(self, input_dim, prefix):
        # A seeded initializer repeats its values; the second gate draws anew.
        initializer = self.gate_initializer
        if prefix:
            initializer = clone_with_new_seed(initializer)
        shape = (input_dim, self.units)
        if self.gate_type == "constant":
            shape = (self.units,)
        gate = self.add_weight(
            name=f"{prefix}gate",
            shape=shape,
            initializer=initializer,
            regularizer=self.gate_regularizer,
            autocast=False,
        )
        bias = None
        if self.use_gate_bias:
            bias = self.add_weight(
                name=f"{prefix}gate_bias",
                shape=(self.units,),
                initializer=self.gate_bias_initializer,
                autocast=False,
            )
        return gate, bias

    @property
    def mul_kernel(self):
        """The multiplicative path's W (the shared one unless separate)."""
        if not self.separate_weights:
            return self.kernel
        return nac_weight(self.to_math(self.mul_w_hat), self.to_math(self.mul_m_hat))

    def effective_weights(self):
        """W of the additive path and of the multiplicative one (equal if shared)."""
        return {"kernel": self.kernel, "mul_kernel": self.mul_kernel}

    def _gate_values(self, x, gate, bias):
        if self.gate_type == "constant":
            return ops.zeros_like(x[..., :1]) + ops.sigmoid(self.to_math(gate))
        logits = ops.matmul(x, self.to_math(gate))
        if bias is not None:
            logits = logits + self.to_math(bias)
        return ops.sigmoid(logits)

    def gate_values(self, inputs):
        """g = σ(x·G + b) (or σ(G)), shape `(..., units)`: the additive path's."""
        return self._gate_values(self.to_math(inputs), self.gate, self.gate_bias)

    def mul_gate_values(self, inputs):
        """The multiplicative path's weight: g_m with `two_gates`, else 1 - g."""
        x = self.to_math(inputs)
        if self.two_gates:
            return self._gate_values(x, self.mul_gate, self.mul_gate_bias)
        return 1.0 - self.gate_values(x)

    def call(self, inputs):
        x = self.to_math(inputs)
        gate = self.gate_values(x)
        mul_gate = self.mul_gate_values(x) if self.two_gates else 1.0 - gate
        additive = ops.matmul(x, self.kernel)
        multiplicative = log_space_product(x, self.mul_kernel, self.epsilon)
        return self.to_output(gated_sum(gate, additive, mul_gate, multiplicative))

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
            "gate_type": self.gate_type,
            "two_gates": self.two_gates,
        }
