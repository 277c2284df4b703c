"""The Neural Power Unit (NPU) and its real-valued form (RealNPU)."""

import math

import keras
from keras import ops

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

#: The paper's initial relevance gate: every input half relevant.
DEFAULT_GATE = 0.5


def npu_product(x, gate, real_kernel, imaginary_kernel, epsilon):
    """The NPU's complex power product, real part, for x of (..., I), W of (I, O).

        r = g ⊙ (|x| + ε) + (1 - g),   k = g ⊙ π·[x < 0]
        z = exp(log r · Re - k · Im) ⊙ cos(k · Re + log r · Im)

    `imaginary_kernel=None` is the RealNPU, z = exp(log r · Re) ⊙ cos(k · Re).
    A gate g_i = 0 turns input i into the factor 1; π·[x < 0] is the phase of
    a negative number, so cos(k · Re) carries the sign of ∏ x_i^Re_i.
    """
    log_r = ops.log(gate * (ops.abs(x) + epsilon) + (1.0 - gate))
    k = gate * math.pi * ops.cast(ops.less(x, 0.0), x.dtype)
    if imaginary_kernel is None:
        return ops.exp(ops.matmul(log_r, real_kernel)) * ops.cos(
            ops.matmul(k, real_kernel)
        )
    magnitude = ops.exp(
        ops.matmul(log_r, real_kernel) - ops.matmul(k, imaginary_kernel)
    )
    phase = ops.matmul(k, real_kernel) + ops.matmul(log_r, imaginary_kernel)
    return magnitude * ops.cos(phase)


@export
class NPU(ArithmeticLayer):
    """Neural Power Unit: products and powers of inputs of any sign.

        r = g ⊙ (|x| + ε) + (1 - g),   k = g ⊙ π·[x < 0]
        y = exp(log r · Re - k · Im) ⊙ cos(k · Re + log r · Im)

    The real part of exp(W · log x) for complex W = Re + i·Im and the complex
    logarithm of x, with a relevance gate g ∈ [0, 1] per input that replaces an
    irrelevant input by 1 (and so keeps log 0 out of the way). Re ∈ R^(I×O) is
    the exponent (1 multiplies, -1 divides, ½ takes a root), `kernel`; Im
    (`imaginary_kernel`) starts at zero; g (`gate`, shape `(input_dim,)`)
    starts at ½ and is clamped to [0, 1] after each step and in the forward
    pass. The paper's L1 penalty with a growing strength β is
    `keras_nalu.regularizers.L1` with a schedule (the `"npu"` preset).

    Args:
        units: output size, an integer >= 1.
        epsilon: ε > 0 added to |x|; default 1e-7.
        kernel_initializer: for Re; default `"glorot_uniform"`.
        kernel_regularizer: on Re (and Im); default None.
        kernel_constraint: on Re (and Im); default None. `"clip"` clamps to
            [-1, 1] after each step and in the forward pass.
        imaginary_initializer: for Im; default `"zeros"`.
        gate_initializer: for g; None for the constant ½.
        gate_regularizer: on g; default None.
        gate_constraint: `"clip"` (to [0, 1] after each step and in the
            forward pass, the default), `"forward_clip"` (in the forward pass
            only, `ForwardClip`), None, or any Keras constraint.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.NPU(1)
    >>> layer.build((None, 3))
    >>> _ = layer.kernel.assign([[1.0], [1.0], [0.0]])
    >>> _ = layer.gate.assign([1.0, 1.0, 0.0])
    >>> y = layer(np.array([[-3.0, 4.0, 0.0]], "float32"))
    >>> keras.ops.convert_to_numpy(y).round(3)
    array([[-12.]], dtype=float32)

    Reference: Heim, Pevný, Šmídl, "Neural Power Units", NeurIPS 2020,
    §3.
    """

    #: Whether the unit has the imaginary weights Im (False for RealNPU).
    complex_weights = True

    def __init__(
        self,
        units: int,
        epsilon: float = 1e-7,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        kernel_constraint=None,
        imaginary_initializer="zeros",
        gate_initializer=None,
        gate_regularizer=None,
        gate_constraint="clip",
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        owner = type(self).__name__
        self.epsilon = check_positive(owner, "epsilon", epsilon)
        self.kernel_initializer = resolve_initializer(kernel_initializer)
        self.kernel_regularizer = resolve_regularizer(kernel_regularizer)
        self.kernel_constraint = resolve_constraint(kernel_constraint, -1.0, 1.0)
        self.imaginary_initializer = (
            resolve_initializer(imaginary_initializer) if self.complex_weights else None
        )
        if gate_initializer is None:
            gate_initializer = keras.initializers.Constant(DEFAULT_GATE)
        self.gate_initializer = resolve_initializer(gate_initializer)
        self.gate_regularizer = resolve_regularizer(gate_regularizer)
        self.gate_constraint = resolve_constraint(gate_constraint, 0.0, 1.0)

    def build_weights(self, input_dim):
        self.kernel = self.add_kernel(
            "kernel",
            input_dim,
            self.kernel_initializer,
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        if self.complex_weights:
            self.imaginary_kernel = self.add_kernel(
                "imaginary_kernel",
                input_dim,
                self.imaginary_initializer,
                self.kernel_regularizer,
                self.kernel_constraint,
            )
        self.gate = self.add_weight(
            name="gate",
            shape=(input_dim,),
            initializer=self.gate_initializer,
            regularizer=self.gate_regularizer,
            constraint=self.gate_constraint,
            autocast=False,
        )

    def effective_weights(self):
        """Re (and Im), clamped as in the forward pass under a `Clip` constraint."""
        weights = {"kernel": self.to_math(self.kernel)}
        if self.complex_weights:
            weights["imaginary_kernel"] = self.to_math(self.imaginary_kernel)
        return {
            name: clip_like_constraint(value, self.kernel_constraint)
            for name, value in weights.items()
        }

    def gate_values(self):
        """g clamped as in the forward pass, shape `(input_dim,)`."""
        return clip_like_constraint(self.to_math(self.gate), self.gate_constraint)

    def call(self, inputs):
        weights = self.effective_weights()
        y = npu_product(
            self.to_math(inputs),
            self.gate_values(),
            weights["kernel"],
            weights.get("imaginary_kernel"),
            self.epsilon,
        )
        return self.to_output(y)

    def get_config(self):
        config = {
            **super().get_config(),
            "epsilon": self.epsilon,
            **serialize_parts(self, "kernel", "gate"),
        }
        if self.complex_weights:
            config["imaginary_initializer"] = keras.initializers.serialize(
                self.imaginary_initializer
            )
        return config


@export
class RealNPU(NPU):
    """Real Neural Power Unit: the NPU without imaginary weights.

        r = g ⊙ (|x| + ε) + (1 - g),   k = g ⊙ π·[x < 0]
        y = exp(log r · Re) ⊙ cos(k · Re)

    Exact for products, quotients and powers of inputs of any sign when Re is
    integer; the sign comes from cos(π·Σ Re_i over negative inputs). Same
    arguments, weights and defaults as `NPU` minus `imaginary_initializer`.

    The modified Real NPU of Mistry et al. (2021) is this layer with Re
    clipped to [-1, 1] (`kernel_constraint="clip"`), the NAU's
    initialization (`kernel_initializer="nau_uniform"`), g₀ = ½, and the
    penalties mean|1 - |Re|| (`keras_nalu.regularizers.UnitMagnitude`) and
    mean min(g, 1 - g) (`Sparsity(domain="unsigned")`) on a linear ramp,
    plus Heim et al.'s growing L1 on every parameter: the
    `single_real_npu_modified` preset.

    Args:
        units: output size, an integer >= 1.
        epsilon: ε > 0 added to |x|; default 1e-7.
        kernel_initializer: for Re; default `"glorot_uniform"`.
        kernel_regularizer: on Re; default None.
        kernel_constraint: on Re; default None. `"clip"` clamps to [-1, 1]
            after each step and in the forward pass.
        gate_initializer: for g; None for the constant ½.
        gate_regularizer: on g; default None.
        gate_constraint: `"clip"` (to [0, 1]), `"forward_clip"`, None, or any
            Keras constraint.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.RealNPU(1)
    >>> layer.build((None, 2))
    >>> _ = layer.kernel.assign([[1.0], [-1.0]])
    >>> _ = layer.gate.assign([1.0, 1.0])
    >>> keras.ops.convert_to_numpy(layer(np.array([[-3.0, 4.0]], "float32"))).round(3)
    array([[-0.75]], dtype=float32)

    Reference: Heim, Pevný, Šmídl, "Neural Power Units", NeurIPS 2020,
    §3 (the RealNPU); Mistry, Farrahi & Hare, "Learning Division with Neural
    Arithmetic Logic Modules" (2021; the modified Real NPU).
    """

    complex_weights = False

    def __init__(
        self,
        units: int,
        epsilon: float = 1e-7,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        kernel_constraint=None,
        gate_initializer=None,
        gate_regularizer=None,
        gate_constraint="clip",
        **kwargs,
    ):
        if "imaginary_initializer" in kwargs:
            raise ValueError(
                "RealNPU has no imaginary weights; use NPU. Received: "
                f"imaginary_initializer={kwargs['imaginary_initializer']!r}"
            )
        super().__init__(
            units,
            epsilon=epsilon,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            kernel_constraint=kernel_constraint,
            gate_initializer=gate_initializer,
            gate_regularizer=gate_regularizer,
            gate_constraint=gate_constraint,
            **kwargs,
        )
