"""The multiplicative Neural Accumulator, NAC•, and its NAC•σ / NAC•NMU weights."""

from keras import ops

from keras_nalu import regularizers as nalu_regularizers
from keras_nalu._api import export
from keras_nalu._validation import check_choice, check_positive
from keras_nalu.layers.base import (
    clip_like_constraint,
    resolve_constraint,
    resolve_initializer,
    resolve_regularizer,
)
from keras_nalu.layers.nac import NACWeights, nac_weight

#: How W is made from the stored parameters: name -> (initializer,
#: regularizer, constraint, clip box) used for the "auto" arguments.
PARAMETRIZATIONS = {
    "nac": ("nac_uniform", None, None, (-1.0, 1.0)),
    "sigmoid": ("glorot_normal", None, None, (-1.0, 1.0)),
    "nmu": ("nmu_uniform", "sparsity", "clip", (0.0, 1.0)),
}
AUTO = "auto"


def _is_auto(identifier) -> bool:
    return isinstance(identifier, str) and identifier == AUTO


def log_space_product(x, kernel, epsilon):
    """exp(log(|x| + ε) · W): ∏_i (|x_i| + ε)^W_io (Trask et al. 2018, eq. 3).

    Magnitudes only: the sign of x is lost, and a negative weight divides.
    """
    return ops.exp(ops.matmul(ops.log(ops.abs(x) + epsilon), kernel))


@export
class NACMul(NACWeights):
    """Multiplicative NAC (NAC•): a NAC applied in log space.

        y = exp(log(|x| + ε) · W)

    with one of three parametrizations of W (Madsen & Johansen 2020, §4.1.3, Table 4):

        "nac"      W = tanh(Ŵ) ⊙ σ(M̂)    NAC• (Trask et al. 2018): weights in [-1, 1]
        "sigmoid"  W = σ(Ŵ)              NAC•σ: multiplication only, no division
        "nmu"      W = clip(Ŵ, 0, 1)     NAC•NMU: the NMU's weights in log space

    Weights of 1 multiply, -1 divide, 0 ignore; the result is within ε of the
    exact product for positive inputs and its magnitude for negative ones.
    The `"auto"` defaults of the initializer, regularizer and constraint are
    each parametrization's paper defaults: NAC• `"nac_uniform"` on Ŵ and M̂;
    NAC•σ Glorot-normal on Ŵ; NAC•NMU the NMU's U[0.25, 0.75], its `Clip(0,
    1)` constraint (also applied in the forward pass) and its sparsity
    regularizer (λ = 10 ramped over steps 10⁶ → 2·10⁶, Table 4). Ŵ is stored
    as `w_hat` in all three; M̂ (`m_hat`) exists only for "nac". `layer.kernel`
    gives W. Computed in float32 under a mixed-precision policy.

    Args:
        units: output size, an integer >= 1.
        epsilon: ε > 0 inside the log; default 1e-7 (the reference code).
        parametrization: "nac", "sigmoid" or "nmu" (see above).
        kernel_initializer: initializer for Ŵ (and M̂, with an independent
            draw); `"auto"` for the parametrization's default.
        kernel_regularizer: regularizer on Ŵ (and M̂); `"auto"` for the
            parametrization's default, `"sparsity"` (with "nmu") for the NMU's,
            None, or any Keras regularizer.
        kernel_constraint: constraint on Ŵ (and M̂); `"auto"`, `"clip"` (to
            [0, 1] for "nmu", [-1, 1] otherwise), None, or a Keras constraint.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.NACMul(1)
    >>> layer.build((None, 2))
    >>> _ = layer.w_hat.assign([[20.0], [20.0]])
    >>> _ = layer.m_hat.assign([[20.0], [20.0]])
    >>> keras.ops.convert_to_numpy(layer(np.array([[5.0, 3.0]], "float32"))).round(3)
    array([[15.]], dtype=float32)
    >>> nmu = keras_nalu.layers.NACMul(1, parametrization="nmu")
    >>> nmu.build((None, 3))
    >>> _ = nmu.w_hat.assign([[1.0], [1.0], [0.0]])
    >>> keras.ops.convert_to_numpy(nmu(np.array([[5.0, 3.0, 7.0]], "float32"))).round(3)
    array([[15.]], dtype=float32)

    Reference: Trask et al., "Neural Arithmetic Logic Units", NeurIPS 2018,
    §2 (eq. 3); Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020,
    §2.3-2.4, §4.1.3 (NAC•σ, NAC•NMU) and App. C.2 Table 4.
    """

    def __init__(
        self,
        units: int,
        epsilon: float = 1e-7,
        parametrization: str = "nac",
        kernel_initializer=AUTO,
        kernel_regularizer=AUTO,
        kernel_constraint=AUTO,
        **kwargs,
    ):
        check_choice("NACMul", "parametrization", parametrization, PARAMETRIZATIONS)
        initializer, regularizer, constraint, box = PARAMETRIZATIONS[parametrization]
        if _is_auto(kernel_initializer):
            kernel_initializer = initializer
        if _is_auto(kernel_regularizer):
            kernel_regularizer = regularizer
        if _is_auto(kernel_constraint):
            kernel_constraint = constraint
        default = nalu_regularizers.nmu_sparsity if parametrization == "nmu" else None
        super().__init__(
            units,
            kernel_initializer=resolve_initializer(kernel_initializer),
            kernel_regularizer=resolve_regularizer(kernel_regularizer, default),
            kernel_constraint=resolve_constraint(kernel_constraint, *box),
            **kwargs,
        )
        self.epsilon = check_positive("NACMul", "epsilon", epsilon)
        self.parametrization = parametrization

    def build_weights(self, input_dim):
        if self.parametrization == "nac":
            super().build_weights(input_dim)
            return
        self.w_hat = self.add_kernel(
            "w_hat",
            input_dim,
            self.kernel_initializer,
            self.kernel_regularizer,
            self.kernel_constraint,
        )

    @property
    def kernel(self):
        """The effective weight matrix W (read-only)."""
        w_hat = self.to_math(self.w_hat)
        if self.parametrization == "sigmoid":
            return ops.sigmoid(w_hat)
        if self.parametrization == "nmu":
            return clip_like_constraint(w_hat, self.kernel_constraint)
        return nac_weight(w_hat, self.to_math(self.m_hat))

    def call(self, inputs):
        y = log_space_product(self.to_math(inputs), self.kernel, self.epsilon)
        return self.to_output(y)

    def get_config(self):
        return {
            **super().get_config(),
            "epsilon": self.epsilon,
            "parametrization": self.parametrization,
        }
