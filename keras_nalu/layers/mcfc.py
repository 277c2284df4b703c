"""The mass-conserving fully connected layer (MC-FC) and its log-space form."""

import keras
from keras import ops

from keras_nalu._api import export
from keras_nalu.layers.base import (
    ArithmeticLayer,
    resolve_initializer,
    resolve_regularizer,
)


@export
class MCFC(ArithmeticLayer):
    """Mass-conserving fully connected layer: the inputs' mass, redistributed.

        y = σ(w + b) ⊙ (x · softmax(R))

    The softmax runs over the outputs (each row of R), so every input's mass
    is split among the outputs and none is created: with the output gate
    σ(w + b) at 1 the outputs sum to the inputs' sum. A selection
    (softmax(R) one-hot per row) and a saturated gate make each output an
    exact sum of inputs; it cannot subtract. The gate is the MC-LSTM's output
    gate on a constant auxiliary input 1: w (`gate_kernel`, shape
    `(1, units)`) and b (`gate_bias`). With one output the junction is
    always 1 and y = σ(w + b)·Σx. The authors' regularizer rewards large R,
    w and b (`keras_nalu.regularizers.NegativeL2`, the `single_mcfc` preset).

    Args:
        units: output size, an integer >= 1.
        junction_initializer: for R; None for the authors' choice, the
            identity when `input_dim == units`, else orthogonal.
        junction_regularizer: on R; default None.
        gate_initializer: for w; default `"orthogonal"`.
        gate_bias_initializer: for b; default `"zeros"`.
        gate_regularizer: on w; default None.
        gate_bias_regularizer: on b; default None.
        **kwargs: base `keras.layers.Layer` arguments (name, dtype, ...).

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.MCFC(1)
    >>> layer.build((None, 2))
    >>> _ = layer.gate_kernel.assign([[20.0]])  # σ(20) = 1 in float32
    >>> keras.ops.convert_to_numpy(layer(np.array([[3.0, 4.0]], "float32")))
    array([[7.]], dtype=float32)

    Reference: Hoedt et al., "MC-LSTM: Mass-Conserving LSTM", ICML 2021,
    §2 and App. B.1.3 (MC-FC on the arithmetic tasks).
    """

    def __init__(
        self,
        units: int,
        junction_initializer=None,
        junction_regularizer=None,
        gate_initializer="orthogonal",
        gate_bias_initializer="zeros",
        gate_regularizer=None,
        gate_bias_regularizer=None,
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.junction_initializer = (
            None
            if junction_initializer is None
            else resolve_initializer(junction_initializer)
        )
        self.junction_regularizer = resolve_regularizer(junction_regularizer)
        self.gate_initializer = resolve_initializer(gate_initializer)
        self.gate_bias_initializer = resolve_initializer(gate_bias_initializer)
        self.gate_regularizer = resolve_regularizer(gate_regularizer)
        self.gate_bias_regularizer = resolve_regularizer(gate_bias_regularizer)

    def build_weights(self, input_dim):
        initializer = self.junction_initializer
        if initializer is None:
            square = input_dim == self.units
            initializer = keras.initializers.get("identity" if square else "orthogonal")
        self.junction = self.add_kernel(
            "junction", input_dim, initializer, self.junction_regularizer, None
        )
        self.gate_kernel = self.add_weight(
            name="gate_kernel",
            shape=(1, self.units),
            initializer=self.gate_initializer,
            regularizer=self.gate_regularizer,
            autocast=False,
        )
        self.gate_bias = self.add_weight(
            name="gate_bias",
            shape=(self.units,),
            initializer=self.gate_bias_initializer,
            regularizer=self.gate_bias_regularizer,
            autocast=False,
        )

    def gate_values(self):
        """σ(w + b), the output gate, shape `(units,)`."""
        return ops.sigmoid(
            self.to_math(self.gate_kernel)[0] + self.to_math(self.gate_bias)
        )

    def effective_weights(self):
        """The map x ↦ y: softmax(R) ⊙ σ(w + b), shape `(input_dim, units)`."""
        # softmax over the outputs, written out: `ops.softmax` warns on every
        # call when there is a single output (the junction is then all ones).
        logits = self.to_math(self.junction)
        scaled = ops.exp(logits - ops.max(logits, axis=-1, keepdims=True))
        junction = scaled / ops.sum(scaled, axis=-1, keepdims=True)
        return {"kernel": junction * self.gate_values()}

    def call(self, inputs):
        kernel = self.effective_weights()["kernel"]
        return self.to_output(ops.matmul(self.to_math(inputs), kernel))

    def get_config(self):
        config = {**super().get_config()}
        config["junction_initializer"] = (
            None
            if self.junction_initializer is None
            else keras.initializers.serialize(self.junction_initializer)
        )
        config["junction_regularizer"] = keras.regularizers.serialize(
            self.junction_regularizer
        )
        config["gate_initializer"] = keras.initializers.serialize(self.gate_initializer)
        config["gate_bias_initializer"] = keras.initializers.serialize(
            self.gate_bias_initializer
        )
        config["gate_regularizer"] = keras.regularizers.serialize(self.gate_regularizer)
        config["gate_bias_regularizer"] = keras.regularizers.serialize(
            self.gate_bias_regularizer
        )
        return config


@export
class MCFCMul(MCFC):
    """The MC-FC in log space: products with mass-conserving exponents.

        y = exp(σ(w + b) ⊙ (log x · softmax(R)) + β)

    `MCFC` applied to log x, plus a bias β (`bias`, zeros at first) in log
    space, exponentiated: each output is a product of powers of the inputs
    whose exponents in each row of softmax(R) sum to at most 1. Its domain is
    x >= 0. An input of 0 makes every output it has a share of exactly 0,
    with finite gradients: 0 for the weights (the limit of y·log x as x -> 0)
    and for that input; a share of exactly 0 (an underflowed softmax or
    gate) leaves the output as if the input were 1 (0^0 = 1). A negative
    input gives NaN (its logarithm), as in the authors' MulMCFC, which also
    gives NaN gradients at 0; it cannot divide either. Same arguments as
    `MCFC`, plus the bias's.

    Args:
        units: output size, an integer >= 1.
        bias_initializer: for β; default `"zeros"`.
        bias_regularizer: on β; default None.
        **kwargs: the arguments of `MCFC`.

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`, non-negative.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.MCFCMul(1)
    >>> layer.build((None, 2))
    >>> _ = layer.gate_kernel.assign([[20.0]])
    >>> y = layer(np.array([[3.0, 4.0]], "float32"))
    >>> keras.ops.convert_to_numpy(y).round(4)
    array([[12.]], dtype=float32)

    Reference: Hoedt et al., "MC-LSTM: Mass-Conserving LSTM", ICML 2021,
    App. B.1.3 (the multiplicative MC-FC).
    """

    def __init__(
        self,
        units: int,
        bias_initializer="zeros",
        bias_regularizer=None,
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.bias_initializer = resolve_initializer(bias_initializer)
        self.bias_regularizer = resolve_regularizer(bias_regularizer)

    def build_weights(self, input_dim):
        super().build_weights(input_dim)
        self.bias = self.add_weight(
            name="bias",
            shape=(self.units,),
            initializer=self.bias_initializer,
            regularizer=self.bias_regularizer,
            autocast=False,
        )

    def call(self, inputs):
        kernel = self.effective_weights()["kernel"]
        x = self.to_math(inputs)
        # A factor 0 makes the product 0 (0^k = 0 for k > 0, 0^0 = 1). Written
        # as a mask, not as log 0 = -inf: -inf would reach the gradient as
        # 0 · -inf = NaN, where the derivative, the limit of y·log x, is 0.
        zero = ops.equal(x, 0)
        log_x = ops.log(ops.where(zero, ops.ones_like(x), x))
        y = ops.exp(ops.matmul(log_x, kernel) + self.to_math(self.bias))
        has_zero = ops.greater(ops.matmul(ops.cast(zero, x.dtype), kernel), 0)
        return self.to_output(ops.where(has_zero, ops.zeros_like(y), y))

    def get_config(self):
        return {
            **super().get_config(),
            "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            "bias_regularizer": keras.regularizers.serialize(self.bias_regularizer),
        }
