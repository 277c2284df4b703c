"""The Domain Mixed Unit (DMU): a gate between a sum and a product."""

import math

import keras
from keras import ops

from keras_nalu import _ops
from keras_nalu._api import export
from keras_nalu._validation import check_choice
from keras_nalu.layers.base import (
    ArithmeticLayer,
    resolve_initializer,
    resolve_regularizer,
)

#: The operand signs of each initialization: DMU_add (a + b, a·b) and DMU_sub
#: (a - b, a / b).
OPERAND_SIGNS = {"add": (1.0, 1.0), "sub": (1.0, -1.0)}

#: The magnitude limits of the author's code: (floor, ceiling, log limit) in
#: training, and the wider ones of its evaluation.
TRAINING_LIMITS = (1e-11, 1e6, math.log(1e6) - 1.0)
INFERENCE_LIMITS = (1e-20, 1e20, 50.0)

#: The sign of the linear path is tanh(r / SIGN_SCALE); its magnitude is
#: √(r² + MAGNITUDE_SMOOTHING), smooth at 0.
SIGN_SCALE = 1e-4
MAGNITUDE_SMOOTHING = 1e-8

#: PyTorch's softplus returns z itself above this (`threshold=20`).
SOFTPLUS_THRESHOLD = 20.0


def torch_softplus(z):
    """log(1 + eᶻ), and z itself above 20, as PyTorch's `softplus`."""
    above = ops.greater(z, SOFTPLUS_THRESHOLD)
    return ops.where(above, z, ops.softplus(ops.minimum(z, SOFTPLUS_THRESHOLD)))


def soft_clamp(z, limit):
    """z pushed smoothly into [-limit, limit]: a soft ceiling, then a soft floor."""
    below_ceiling = limit - torch_softplus(limit - z)
    return -limit + torch_softplus(below_ceiling + limit)


@export
class DMU(ArithmeticLayer):
    """Domain Mixed Unit: one signed pair of operands, added in linear space
    and in log space, mixed by a learned gate.

        r_lin = Σ_i o_i·x_i,             s_lin = tanh(r_lin / 10⁻⁴)
        r_log = Σ_i o_i·log max(|x_i|, m₀),  s_log = cos(π Σ_i |o_i|·[x_i < 0])
        (g_lin, g_log) = softmax(LayerNorm(x)·W + b)
        y = (g_lin·s_lin + g_log·s_log)
            · clip(g_lin·max(√(r_lin² + 10⁻⁸), m₀) + g_log·exp(c(r_log)), m₀, m₁)

    The operands o are fixed by `initialization`: (1, 1, 0, …) for DMU_add,
    which computes x₀ + x₁ in linear space and x₀·x₁ in log space, and
    (1, -1, 0, …) for DMU_sub, x₀ - x₁ and x₀ / x₁. What is learned is the
    gate: a LayerNorm of the inputs (scale γ, offset β, ε = 10⁻⁵) and a linear
    map W, b to two logits per output, softmax-ed. c is a soft clamp to
    [-L, L] (a softplus ceiling, then a softplus floor). In training
    m₀ = 10⁻¹¹, m₁ = 10⁶, L = log(10⁶) - 1; at inference (`training`
    false) m₀ = 10⁻²⁰, m₁ = 10²⁰, L = 50, and with `discretize` the gate is
    one-hot (the larger logit wins), so a trained unit computes the exact
    sum or the exact product. Everything above is the author's code at the
    paper's date (`DAGLayer` with one step, the output selector off and the
    operands frozen by operation); the paper's own equations could not be
    read for this package.

    Args:
        units: output size, an integer >= 1; every output has its own gate.
        initialization: `"add"` (DMU_add, for + and ×) or `"sub"` (DMU_sub,
            for − and ÷); needs at least 2 inputs.
        discretize: whether inference uses the one-hot gate (the author's
            evaluation); default True.
        gate_initializer: for W, shape `(input_dim, 2·units)` (columns: the
            linear logits of the outputs, then their log logits); default
            `"glorot_uniform"`, PyTorch's Xavier-uniform for one output.
        gate_bias_initializer: for b; default `"zeros"`.
        gate_regularizer: on W; default None.
        gate_bias_regularizer: on b; default None.
        **kwargs: base `keras.layers.Layer` arguments (name, dtype, ...).

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.
        training: whether to use the training limits and the soft gate.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.DMU(1, initialization="sub")
    >>> layer.build((None, 2))
    >>> _ = layer.gate_bias.assign([0.0, 1.0])  # the log logit wins: x0 / x1
    >>> _ = layer.gate_kernel.assign(np.zeros((2, 2)))
    >>> y = layer(np.array([[-3.0, 4.0]], "float32"))
    >>> keras.ops.convert_to_numpy(y).round(5)
    array([[-0.75]], dtype=float32)

    Reference: Curry, "The Domain Mixed Unit: A New Neural Arithmetic Layer"
    (2025, arXiv:2509.08180); the author's code: `marict/nalm-benchmark`,
    `stable_nalu/layer/dag.py` at commit 9350f32 (2025-09-01).
    """

    def __init__(
        self,
        units: int,
        initialization: str = "add",
        discretize: bool = True,
        gate_initializer="glorot_uniform",
        gate_bias_initializer="zeros",
        gate_regularizer=None,
        gate_bias_regularizer=None,
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.initialization = check_choice(
            "DMU", "initialization", initialization, OPERAND_SIGNS
        )
        if not isinstance(discretize, bool):
            raise ValueError(
                f"DMU expects discretize to be True or False. "
                f"Received: discretize={discretize!r}"
            )
        self.discretize = discretize
        self.gate_initializer = resolve_initializer(gate_initializer)
        self.gate_bias_initializer = resolve_initializer(gate_bias_initializer)
        self.gate_regularizer = resolve_regularizer(gate_regularizer)
        self.gate_bias_regularizer = resolve_regularizer(gate_bias_regularizer)

    def build_weights(self, input_dim):
        if input_dim < 2:
            raise ValueError(
                "DMU needs at least 2 inputs (its operands are x0 and x1). "
                f"Received: input_dim={input_dim}"
            )
        self.norm_scale = self.add_weight(
            name="norm_scale", shape=(input_dim,), initializer="ones", autocast=False
        )
        self.norm_offset = self.add_weight(
            name="norm_offset", shape=(input_dim,), initializer="zeros", autocast=False
        )
        self.gate_kernel = self.add_weight(
            name="gate_kernel",
            shape=(input_dim, 2 * self.units),
            initializer=self.gate_initializer,
            regularizer=self.gate_regularizer,
            autocast=False,
        )
        self.gate_bias = self.add_weight(
            name="gate_bias",
            shape=(2 * self.units,),
            initializer=self.gate_bias_initializer,
            regularizer=self.gate_bias_regularizer,
            autocast=False,
        )

    def effective_weights(self):
        """`kernel`: the operands o, fixed by `initialization`, `(input_dim,
        units)`; the gate is not a weight of the arithmetic."""
        input_dim = self.gate_kernel.shape[0]
        signs = list(OPERAND_SIGNS[self.initialization])
        column = ops.convert_to_tensor(
            signs + [0.0] * (input_dim - 2), dtype=self.math_dtype
        )
        return {"kernel": ops.tile(column[:, None], (1, self.units))}

    def gate_logits(self, inputs):
        """LayerNorm(x)·W + b, shape `(..., units, 2)`: linear, then log."""
        x = self.to_math(inputs)
        mean = ops.mean(x, axis=-1, keepdims=True)
        variance = ops.var(x, axis=-1, keepdims=True)
        normed = (x - mean) / ops.sqrt(variance + 1e-5)
        normed = normed * self.to_math(self.norm_scale) + self.to_math(self.norm_offset)
        logits = ops.matmul(normed, self.to_math(self.gate_kernel))
        logits = logits + self.to_math(self.gate_bias)
        return ops.stack([logits[..., : self.units], logits[..., self.units :]], -1)

    def gate_values(self, inputs, training=None):
        """(g_lin, g_log) per output, shape `(..., units, 2)`: the softmax, or
        at inference with `discretize` the one-hot of the larger logit."""
        logits = self.gate_logits(inputs)
        if training or not self.discretize:
            return ops.softmax(logits, axis=-1)
        # The larger logit wins; a tie goes to the linear domain, as
        # PyTorch's argmax (the first) in the author's code.
        linear = ops.cast(ops.greater_equal(logits[..., 0], logits[..., 1]), "int32")
        return ops.one_hot(1 - linear, 2, dtype=logits.dtype)

    def call(self, inputs, training=None):
        x = self.to_math(inputs)
        floor, ceiling, log_limit = TRAINING_LIMITS if training else INFERENCE_LIMITS
        operands = self.effective_weights()["kernel"]
        if not training and self.discretize:
            operands = _ops.clip(ops.round(operands), -1.0, 1.0)
        magnitude = _ops.absolute(x)
        r_lin = ops.matmul(x, operands)
        r_log = ops.matmul(ops.log(ops.maximum(magnitude, floor)), operands)
        negative = ops.cast(ops.less(x, 0.0), x.dtype)
        sign_log = ops.cos(math.pi * ops.matmul(negative, _ops.absolute(operands)))
        sign_lin = ops.tanh(r_lin / SIGN_SCALE)
        magnitude_lin = ops.maximum(
            ops.sqrt(r_lin * r_lin + MAGNITUDE_SMOOTHING), floor
        )
        magnitude_log = ops.exp(soft_clamp(r_log, log_limit))
        gate = self.gate_values(inputs, training=training)
        g_lin, g_log = gate[..., 0], gate[..., 1]
        sign = g_lin * sign_lin + g_log * sign_log
        mixed = _ops.clip(g_lin * magnitude_lin + g_log * magnitude_log, floor, ceiling)
        return self.to_output(sign * mixed)

    def get_config(self):
        return {
            **super().get_config(),
            "initialization": self.initialization,
            "discretize": self.discretize,
            "gate_initializer": keras.initializers.serialize(self.gate_initializer),
            "gate_bias_initializer": keras.initializers.serialize(
                self.gate_bias_initializer
            ),
            "gate_regularizer": keras.regularizers.serialize(self.gate_regularizer),
            "gate_bias_regularizer": keras.regularizers.serialize(
                self.gate_bias_regularizer
            ),
        }
