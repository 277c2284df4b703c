"""The Neural Multiplicative Reciprocal Unit (NMRU): division with an NMU."""

import math

import numpy as np
from keras import ops

from keras_nalu import _ops
from keras_nalu import regularizers as nalu_regularizers
from keras_nalu._api import export
from keras_nalu._validation import check_positive
from keras_nalu.layers.base import (
    ArithmeticLayer,
    clip_like_constraint,
    resolve_constraint,
    resolve_initializer,
    resolve_regularizer,
    serialize_parts,
)
from keras_nalu.layers.nmu import nmu_product

#: float32's machine epsilon 2⁻²³, the reference code's ε (`torch.finfo().eps`).
FLOAT32_EPSILON = float(np.finfo(np.float32).eps)


@export
class NMRU(ArithmeticLayer):
    """Neural Multiplicative Reciprocal Unit: an NMU over the inputs and their
    reciprocals, with the sign of the result.

        z = [|x|, 1 / (|x| + ε)],     k = π·[x < 0]
        y_o = ∏_j (W_jo·z_j + 1 - W_jo) · cos(Σ_i k_i·(W_io + W_(I+i)o))

    W has `2·input_dim` rows, clipped to [0, 1]: row i selects x_i as a
    factor, row I + i selects 1/x_i, so W ∈ {0, 1} makes each output an exact
    product of inputs and reciprocals of inputs, e.g. x₀ / x₁. The cosine
    gives the sign: −1 for an odd number of selected negative inputs, −0
    counted negative. ε keeps a zero input finite in training; at inference
    (`training` false) the reciprocal is exact, as float division: an output
    that divides by an input of ±0 (its reciprocal weight > 0) is ±inf with
    the sign of the quotient (1/−0 = −inf, 1/(0·0) = inf, and NaN for 0/0),
    while an input of 0 whose reciprocal weight is 0 stays ignored. The
    defaults are the paper's: W ~
    U[0.25, 0.75], a `Clip(0, 1)` constraint after each step and in the
    forward pass, and the NMU's linear sparsity regularizer, λ = 10 ramped
    over steps 5·10⁴ → 7.5·10⁴ (its 10-input division recipe). The authors
    train it with Adam at 10⁻² and the global gradient norm clipped to 1 (the
    `single_nmru` preset).

    Args:
        units: output size, an integer >= 1.
        epsilon: ε > 0 added to |x| in training; default 2⁻²³ (float32's
            machine epsilon, as the authors' code).
        kernel_initializer: initializer for W; default `"nmu_uniform"`.
        kernel_regularizer: `"sparsity"` (the schedule above), None, or any
            Keras regularizer (it sees the whole `(2·input_dim, units)` W).
        kernel_constraint: `"clip"` (to [0, 1]), None, or any Keras constraint.
        **kwargs: base `keras.layers.Layer` arguments (name, dtype, ...).

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.
        training: whether to use the training reciprocal 1/(|x| + ε).

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.NMRU(1)
    >>> layer.build((None, 2))  # W: rows x0, x1, 1/x0, 1/x1
    >>> _ = layer.kernel.assign([[1.0], [0.0], [0.0], [1.0]])
    >>> keras.ops.convert_to_numpy(layer(np.array([[-3.0, 4.0]], "float32")))
    array([[-0.75]], dtype=float32)

    Reference: Mistry, Farrahi & Hare, "Learning Division with Neural
    Arithmetic Logic Modules" (2021, arXiv:2110.05177), the NMRU with
    sign retrieval.
    """

    def __init__(
        self,
        units: int,
        epsilon: float = FLOAT32_EPSILON,
        kernel_initializer="nmu_uniform",
        kernel_regularizer="sparsity",
        kernel_constraint="clip",
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.epsilon = check_positive(type(self).__name__, "epsilon", epsilon)
        self.kernel_initializer = resolve_initializer(kernel_initializer)
        self.kernel_regularizer = resolve_regularizer(
            kernel_regularizer, nalu_regularizers.nmru_sparsity
        )
        self.kernel_constraint = resolve_constraint(kernel_constraint, 0.0, 1.0)

    def build_weights(self, input_dim):
        # One W over [|x|, 1/|x|], as the paper: the regularizer and the
        # sparsity error see both halves together.
        self.kernel = self.add_weight(
            name="kernel",
            shape=(2 * input_dim, self.units),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
            autocast=False,
        )

    def _kernel(self):
        return clip_like_constraint(self.to_math(self.kernel), self.kernel_constraint)

    def effective_weights(self):
        """`kernel` (the rows of x) and `reciprocal_kernel` (of 1/x), clipped."""
        kernel = self._kernel()
        half = kernel.shape[0] // 2
        return {"kernel": kernel[:half], "reciprocal_kernel": kernel[half:]}

    def call(self, inputs, training=None):
        x = self.to_math(inputs)
        magnitude = _ops.absolute(x)
        kernel = self._kernel()
        half = kernel.shape[0] // 2
        if training:
            reciprocal = 1.0 / (magnitude + self.epsilon)
        else:
            # 1/0 = inf enters after the product: inside it, a weight of 0
            # would make 0·inf = NaN of a zero the output does not use.
            zero = ops.equal(magnitude, 0.0)
            reciprocal = 1.0 / ops.where(zero, 1.0, magnitude)
        y = nmu_product(ops.concatenate([magnitude, reciprocal], axis=-1), kernel)
        if not training:
            divisor = ops.matmul(ops.cast(zero, x.dtype), kernel[half:])
            y = ops.where(ops.greater(divisor, 0.0), y * math.inf, y)
        # The sign bit, not x < 0: -0 is negative, as 1/-0 = -inf.
        negative = ops.cast(ops.signbit(x), x.dtype) * math.pi
        sign = ops.cos(ops.matmul(negative, kernel[:half] + kernel[half:]))
        return self.to_output(y * sign)

    def get_config(self):
        return {
            **super().get_config(),
            "epsilon": self.epsilon,
            **serialize_parts(self, "kernel"),
        }
