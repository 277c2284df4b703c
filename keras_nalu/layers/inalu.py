"""The improved NALU (iNALU): independent paths, clipped log space, sign, gate."""

import keras
from keras import ops

from keras_nalu import _ops
from keras_nalu._api import export
from keras_nalu._validation import check_positive
from keras_nalu.initializers import clone_with_new_seed
from keras_nalu.layers.base import (
    ArithmeticLayer,
    gated_sum,
    resolve_constraint,
    resolve_initializer,
    resolve_regularizer,
)
from keras_nalu.layers.nac import nac_weight
from keras_nalu.layers.nmu import nmu_product

#: The authors' initialization: N(mean, 0.1) for Ŵ, M̂ and G.
DEFAULT_MEANS = {"w_hat": 1.0, "m_hat": -1.0, "gate": 0.0}
DEFAULT_STDDEV = 0.1


def inalu_product(x, kernel, epsilon, omega):
    """The iNALU's multiplicative path: a log-space product with its sign.

        m = exp(min(log(max(|x|, ε)) · W, ω))
        s = clip(∏_i (sign(x_i)·|W_io| + 1 - |W_io|), -1, 1)

    returns m ⊙ s. The sign factor of an input is its sign where |W| = 1 and
    1 where W = 0, so s is the sign of the product of the selected inputs
    (the NMU's gated product of sign(x) with weights |W|).
    """
    log_magnitude = ops.log(ops.maximum(ops.abs(x), epsilon))
    magnitude = ops.exp(ops.minimum(ops.matmul(log_magnitude, kernel), omega))
    sign = _ops.clip(nmu_product(ops.sign(x), _ops.absolute(kernel)), -1.0, 1.0)
    return magnitude * sign


def _normal(identifier, name):
    if identifier is None:
        return keras.initializers.RandomNormal(
            mean=DEFAULT_MEANS[name], stddev=DEFAULT_STDDEV
        )
    return resolve_initializer(identifier)


@export
class iNALU(ArithmeticLayer):
    """Improved NALU: independent add/mul weights, clipped mul path, sign, gate.

        a = x · W_a,                        W_a = tanh(Ŵ_a) ⊙ σ(M̂_a)
        m = exp(min(log(max(|x|, ε)) · W_m, ω)),   W_m = tanh(Ŵ_m) ⊙ σ(M̂_m)
        s = clip(∏_i (sign(x_i)·|W_m,io| + 1 - |W_m,io|), -1, 1)
        g = σ(G)                            (one value per output unit)
        y = g ⊙ a + (1 - g) ⊙ m ⊙ s

    The fixes of a NALU course report / Schlör et al. to the NALU: independent weights
    for the two paths; ω = 20 caps the log-space sum against exploding
    intermediate results; the sign factor s gives products of mixed-sign
    inputs their sign; the gate does not depend on the input. Defaults follow
    the authors' script: Ŵ ~ N(1, 0.1), M̂ ~ N(-1, 0.1), G ~ N(0, 0.1)
    (standard deviations), ε = 1e-7, and the `Saturation` regularizer
    0.05·mean(max(20 - |p|, 0)) on every parameter, switched on after 10
    epochs while the loss is below 1 (by
    `keras_nalu.callbacks.LossGatedRegularization`). The rest of the recipe,
    gradient clipping to ±0.1 and `keras_nalu.callbacks.Reinitialization`,
    belongs to training (the `"inalu"` preset of `keras_nalu.presets`).
    Weights: `w_hat`, `m_hat` (additive path), `mul_w_hat`, `mul_m_hat` and
    `gate` (shape `(units,)`); `layer.kernel` and `layer.mul_kernel` give W_a
    and W_m.

    Args:
        units: output size, an integer >= 1.
        epsilon: ε > 0, the smallest |x| the log sees; default 1e-7.
        omega: ω > 0, the cap on the log-space sum; default 20.
        w_hat_initializer: for Ŵ_a and Ŵ_m (independent draws); None for
            N(1, 0.1).
        m_hat_initializer: for M̂_a and M̂_m; None for N(-1, 0.1).
        gate_initializer: for G; None for N(0, 0.1).
        kernel_regularizer: on Ŵ_a, M̂_a, Ŵ_m, M̂_m; `"saturation"` (the
            default above), None, or any Keras regularizer.
        gate_regularizer: on G; `"saturation"` (the same regularizer object
            as the kernels' when both are `"saturation"`), None, or any.
        kernel_constraint: Keras constraint on Ŵ and M̂; default None.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.iNALU(1)
    >>> layer.build((None, 2))
    >>> _ = layer.mul_w_hat.assign([[20.0], [20.0]])
    >>> _ = layer.mul_m_hat.assign([[20.0], [20.0]])
    >>> _ = layer.gate.assign([-20.0])
    >>> keras.ops.convert_to_numpy(layer(np.array([[-3.0, 4.0]], "float32"))).round(3)
    array([[-12.]], dtype=float32)

    Reference: Schlör, Ring, Hotho, "iNALU: Improved Neural Arithmetic Logic
    Unit", arXiv:2003.07629 (2020), and the authors' code; a NALU course report, §5-7.
    """

    def __init__(
        self,
        units: int,
        epsilon: float = 1e-7,
        omega: float = 20.0,
        w_hat_initializer=None,
        m_hat_initializer=None,
        gate_initializer=None,
        kernel_regularizer="saturation",
        gate_regularizer="saturation",
        kernel_constraint=None,
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.epsilon = check_positive("iNALU", "epsilon", epsilon)
        self.omega = check_positive("iNALU", "omega", omega)
        self.w_hat_initializer = _normal(w_hat_initializer, "w_hat")
        self.m_hat_initializer = _normal(m_hat_initializer, "m_hat")
        self.gate_initializer = _normal(gate_initializer, "gate")
        self.kernel_regularizer = resolve_regularizer(kernel_regularizer)
        if (
            isinstance(gate_regularizer, str)
            and gate_regularizer == "saturation"
            and isinstance(kernel_regularizer, str)
            and kernel_regularizer == "saturation"
        ):
            # One strength variable for the whole unit, as the authors' one loss.
            self.gate_regularizer = self.kernel_regularizer
        else:
            self.gate_regularizer = resolve_regularizer(gate_regularizer)
        self.kernel_constraint = resolve_constraint(kernel_constraint, -1.0, 1.0)

    def _add_path(self, input_dim, prefix, w_hat_initializer, m_hat_initializer):
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
            m_hat_initializer,
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        return w_hat, m_hat

    def build_weights(self, input_dim):
        # Seeded initializers repeat their values: every tensor draws anew,
        # even when Ŵ and M̂ are given the same integer seed.
        self.w_hat, self.m_hat = self._add_path(
            input_dim,
            "",
            self.w_hat_initializer,
            clone_with_new_seed(self.m_hat_initializer, 1),
        )
        self.mul_w_hat, self.mul_m_hat = self._add_path(
            input_dim,
            "mul_",
            clone_with_new_seed(self.w_hat_initializer, 2),
            clone_with_new_seed(self.m_hat_initializer, 3),
        )
        self.gate = self.add_weight(
            name="gate",
            shape=(self.units,),
            initializer=self.gate_initializer,
            regularizer=self.gate_regularizer,
            autocast=False,
        )

    @property
    def kernel(self):
        """W_a = tanh(Ŵ_a) ⊙ σ(M̂_a), the additive path's weights (read-only)."""
        return nac_weight(self.to_math(self.w_hat), self.to_math(self.m_hat))

    @property
    def mul_kernel(self):
        """W_m = tanh(Ŵ_m) ⊙ σ(M̂_m), the multiplicative path's (read-only)."""
        return nac_weight(self.to_math(self.mul_w_hat), self.to_math(self.mul_m_hat))

    def effective_weights(self):
        return {"kernel": self.kernel, "mul_kernel": self.mul_kernel}

    def gate_values(self, inputs):
        """g = σ(G) broadcast to `(..., units)`: 1 selects the additive path."""
        x = self.to_math(inputs)
        return ops.zeros_like(x[..., :1]) + ops.sigmoid(self.to_math(self.gate))

    def call(self, inputs):
        x = self.to_math(inputs)
        gate = ops.sigmoid(self.to_math(self.gate))
        additive = ops.matmul(x, self.kernel)
        multiplicative = inalu_product(x, self.mul_kernel, self.epsilon, self.omega)
        return self.to_output(gated_sum(gate, additive, 1.0 - gate, multiplicative))

    def get_config(self):
        return {
            **super().get_config(),
            "epsilon": self.epsilon,
            "omega": self.omega,
            "w_hat_initializer": keras.initializers.serialize(self.w_hat_initializer),
            "m_hat_initializer": keras.initializers.serialize(self.m_hat_initializer),
            "gate_initializer": keras.initializers.serialize(self.gate_initializer),
            "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
            "gate_regularizer": keras.regularizers.serialize(self.gate_regularizer),
            "kernel_constraint": keras.constraints.serialize(self.kernel_constraint),
        }
