"""The gated NAU/NMU: a NALU-style sigmoid gate between an NAU and an NMU."""

import keras
from keras import ops

from keras_nalu._api import export
from keras_nalu.layers.base import (
    ArithmeticLayer,
    gated_sum,
    resolve_initializer,
    resolve_regularizer,
)
from keras_nalu.layers.nau import NAU
from keras_nalu.layers.nmu import NMU


@export
class GatedNAUNMU(ArithmeticLayer):
    """A sigmoid gate between an NAU and an NMU with separate weights.

        g = σ(x·G)
        y = g ⊙ NAU(x) + (1 - g) ⊙ NMU(x)

    The two paths are an `NAU` and an `NMU` sublayer (`layer.nau`,
    `layer.nmu`) with their own weights, clamps, initializations and
    sparsity regularizers (by default each unit's paper schedule); the gate is
    the NALU's, without bias. Madsen & Johansen (2020) introduces this unit to show
    that the gate's choice is close to random; weights cannot be shared because the
    NAU and NMU constrain them differently.

    Args:
        units: output size, an integer >= 1.
        gate_initializer: for G; default `"glorot_uniform"` (as the NALU).
        gate_regularizer: Keras regularizer on G; default None.
        nau_kernel_initializer, nau_kernel_regularizer, nau_kernel_constraint:
            the NAU path's (see `NAU`); defaults `"nau_uniform"`,
            `"sparsity"`, `"clip"`.
        nmu_kernel_initializer, nmu_kernel_regularizer, nmu_kernel_constraint:
            the NMU path's (see `NMU`); defaults `"nmu_uniform"`,
            `"sparsity"`, `"clip"`.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.GatedNAUNMU(1)
    >>> layer.build((None, 2))
    >>> _ = layer.nau.kernel.assign([[1.0], [1.0]])
    >>> _ = layer.nmu.kernel.assign([[1.0], [1.0]])
    >>> _ = layer.gate.assign([[0.0], [0.0]])
    >>> y = layer(np.array([[2.0, 4.0]], "float32"))  # ½(2 + 4) + ½(2·4)
    >>> keras.ops.convert_to_numpy(y)
    array([[7.]], dtype=float32)

    Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §2.8
    and App. C.5 (Table 5, Fig. 9).
    """

    def __init__(
        self,
        units: int,
        gate_initializer="glorot_uniform",
        gate_regularizer=None,
        nau_kernel_initializer="nau_uniform",
        nau_kernel_regularizer="sparsity",
        nau_kernel_constraint="clip",
        nmu_kernel_initializer="nmu_uniform",
        nmu_kernel_regularizer="sparsity",
        nmu_kernel_constraint="clip",
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.gate_initializer = resolve_initializer(gate_initializer)
        self.gate_regularizer = resolve_regularizer(gate_regularizer)
        self.nau = NAU(
            self.units,
            kernel_initializer=nau_kernel_initializer,
            kernel_regularizer=nau_kernel_regularizer,
            kernel_constraint=nau_kernel_constraint,
            dtype=self.dtype_policy,
            name="nau",
        )
        self.nmu = NMU(
            self.units,
            kernel_initializer=nmu_kernel_initializer,
            kernel_regularizer=nmu_kernel_regularizer,
            kernel_constraint=nmu_kernel_constraint,
            dtype=self.dtype_policy,
            name="nmu",
        )

    def build_weights(self, input_dim):
        self.gate = self.add_kernel(
            "gate", input_dim, self.gate_initializer, self.gate_regularizer, None
        )
        self.nau.build((None, input_dim))
        self.nmu.build((None, input_dim))

    def effective_weights(self):
        return {
            "nau_kernel": self.nau.effective_weights()["kernel"],
            "nmu_kernel": self.nmu.effective_weights()["kernel"],
        }

    def gate_values(self, inputs):
        """g = σ(x·G): 1 selects the NAU, 0 the NMU. Shape `(..., units)`."""
        return ops.sigmoid(ops.matmul(self.to_math(inputs), self.to_math(self.gate)))

    def call(self, inputs):
        gate = self.gate_values(inputs)
        addition = self.to_math(self.nau(inputs))
        multiplication = self.to_math(self.nmu(inputs))
        return self.to_output(gated_sum(gate, addition, 1.0 - gate, multiplication))

    def get_config(self):
        config = {
            **super().get_config(),
            "gate_initializer": keras.initializers.serialize(self.gate_initializer),
            "gate_regularizer": keras.regularizers.serialize(self.gate_regularizer),
        }
        for prefix, unit in (("nau", self.nau), ("nmu", self.nmu)):
            config[f"{prefix}_kernel_initializer"] = keras.initializers.serialize(
                unit.kernel_initializer
            )
            config[f"{prefix}_kernel_regularizer"] = keras.regularizers.serialize(
                unit.kernel_regularizer
            )
            config[f"{prefix}_kernel_constraint"] = keras.constraints.serialize(
                unit.kernel_constraint
            )
        return config
