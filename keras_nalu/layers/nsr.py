"""The Neural Status Register (NSR): a learned comparison of two inputs."""

import keras
import numpy as np
from keras import ops

from keras_nalu._api import export
from keras_nalu._validation import check_positive, check_positive_int
from keras_nalu.layers.base import (
    ArithmeticLayer,
    resolve_initializer,
    resolve_regularizer,
)


@export
class NSR(ArithmeticLayer):
    """Neural Status Register: the sign and zero bits of a learned difference
    of two operands, weighted into the probability that a comparison holds.

        o₁ = x·softmax(V₁),  o₂ = x·softmax(V₂)   (softmax over the inputs)
        d = o₁ - o₂,  S = tanh(λd),  Z = 1 - 2·tanh²(λd)
        y = σ(b + Σ_r W±_r·S_r + Σ_r W0_r·Z_r)

    Each operand is a soft selection of one input (a column of softmax(V)
    one-hot picks it exactly). S is a soft sign bit of d (-1, 0, 1) and Z a
    soft zero bit (1 at d = 0, -1 far from it); their weights and the bias
    learn which comparison holds: x₀ > x₁ from W± > 0 and b ≈ 0, x₀ = x₁
    from W0 > 0 and b < 0, and so on. Because S and Z saturate for |d| ≳ 3/λ,
    a comparison learned on small integers holds for numbers many orders of
    magnitude larger, as long as they differ by more than about 3/λ.
    `redundancy` R > 1 sums R independent operand pairs and bit weights into
    the one logit (the paper's redundant bit structures). The output is the
    probability of the first of the paper's two states; the second is
    1 - y. The paper's first version regularizes the operands towards
    one-hot, prunes redundant structures and pushes the output to 0 or 1;
    its formula could not be read for this package and the authors' code
    gives the NSR no regularizer, so none is applied here (any Keras
    regularizer can be passed).

    Args:
        units: how many comparisons, each with its own weights; an integer
            >= 1.
        redundancy: R, operand pairs and bits per comparison; default 1 (the
            authors' code).
        scale: λ > 0, the slope of the bits; default 1.0.
        operand_initializer: for V₁ and V₂, shape `(input_dim, units·R)`;
            default `"glorot_normal"`.
        bit_initializer: for W± and W0, shape `(R, units)`; default
            `"glorot_normal"`.
        bias_initializer: for b; default `"zeros"`.
        operand_regularizer, bit_regularizer, bias_regularizer: Keras
            regularizers of those weights; default None.
        **kwargs: base `keras.layers.Layer` arguments (name, dtype, ...).

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.

    Output shape: `(..., units)`, each in (0, 1).

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.NSR(1, scale=10.0)  # x0 > x1
    >>> layer.build((None, 2))
    >>> _ = layer.operand_1.assign([[20.0], [0.0]])  # o1 = x0
    >>> _ = layer.operand_2.assign([[0.0], [20.0]])  # o2 = x1
    >>> _ = layer.sign_kernel.assign([[10.0]])
    >>> _ = layer.zero_kernel.assign([[0.0]])
    >>> _ = layer.bias.assign([-5.0])
    >>> x = np.array([[3, 2], [2, 2], [2, 3], [5e9, 4e9]], "float32")
    >>> keras.ops.convert_to_numpy(layer(x))[:, 0].round(2)
    array([0.99, 0.01, 0.  , 0.99], dtype=float32)

    Reference: Faber & Wattenhofer, "Neural Status Registers", ICML 2023
    (arXiv:2004.07085); the authors' code, `lukasjf/neural_status_register`,
    `models.py` (`NeuralStatusRegister`).
    """

    def __init__(
        self,
        units: int,
        redundancy: int = 1,
        scale: float = 1.0,
        operand_initializer="glorot_normal",
        bit_initializer="glorot_normal",
        bias_initializer="zeros",
        operand_regularizer=None,
        bit_regularizer=None,
        bias_regularizer=None,
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.redundancy = check_positive_int("NSR", "redundancy", redundancy)
        self.scale = check_positive("NSR", "scale", scale)
        self.operand_initializer = resolve_initializer(operand_initializer)
        self.bit_initializer = resolve_initializer(bit_initializer)
        self.bias_initializer = resolve_initializer(bias_initializer)
        self.operand_regularizer = resolve_regularizer(operand_regularizer)
        self.bit_regularizer = resolve_regularizer(bit_regularizer)
        self.bias_regularizer = resolve_regularizer(bias_regularizer)

    def build_weights(self, input_dim):
        pairs = self.units * self.redundancy
        for name in ("operand_1", "operand_2"):
            setattr(
                self,
                name,
                self.add_weight(
                    name=name,
                    shape=(input_dim, pairs),
                    initializer=self.operand_initializer,
                    regularizer=self.operand_regularizer,
                    autocast=False,
                ),
            )
        for name in ("sign_kernel", "zero_kernel"):
            setattr(
                self,
                name,
                self.add_weight(
                    name=name,
                    shape=(self.redundancy, self.units),
                    initializer=self.bit_initializer,
                    regularizer=self.bit_regularizer,
                    autocast=False,
                ),
            )
        self.bias = self.add_weight(
            name="bias",
            shape=(self.units,),
            initializer=self.bias_initializer,
            regularizer=self.bias_regularizer,
            autocast=False,
        )

    def effective_weights(self):
        """`operand_1` and `operand_2`: softmax(V) over the inputs, the soft
        selections, `(input_dim, units·R)` (column u·R + r: comparison u's
        r-th pair); the bits' weights are not weights of an arithmetic."""
        return {
            name: ops.softmax(self.to_math(getattr(self, name)), axis=0)
            for name in ("operand_1", "operand_2")
        }

    def bits(self, inputs):
        """The sign and zero bits S and Z, each `(..., units·R)`."""
        x = self.to_math(inputs)
        selections = self.effective_weights()
        difference = ops.matmul(x, selections["operand_1"]) - ops.matmul(
            x, selections["operand_2"]
        )
        sign = ops.tanh(self.scale * difference)
        return sign, 1.0 - 2.0 * ops.square(sign)

    def _summed(self, kernel):
        """The `(units·R, units)` map that weights bit u·R + r by kernel[r, u]
        and sums each comparison's R bits."""
        blocks = np.kron(np.eye(self.units), np.ones((self.redundancy, 1)))
        column = ops.reshape(ops.transpose(self.to_math(kernel)), (-1, 1))
        return ops.convert_to_tensor(blocks, dtype=self.math_dtype) * column

    def call(self, inputs):
        sign, zero = self.bits(inputs)
        logit = (
            ops.matmul(sign, self._summed(self.sign_kernel))
            + ops.matmul(zero, self._summed(self.zero_kernel))
            + self.to_math(self.bias)
        )
        return self.to_output(ops.sigmoid(logit))

    def get_config(self):
        config = {
            **super().get_config(),
            "redundancy": self.redundancy,
            "scale": self.scale,
        }
        for part in ("operand", "bit", "bias"):
            config[f"{part}_initializer"] = keras.initializers.serialize(
                getattr(self, f"{part}_initializer")
            )
            config[f"{part}_regularizer"] = keras.regularizers.serialize(
                getattr(self, f"{part}_regularizer")
            )
        return config
