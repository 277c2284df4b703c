"""The layer kinds a preset names, and the layer each makes (`make_layer`)."""

import keras

from keras_nalu import layers as units
from keras_nalu import regularizers
from keras_nalu.presets.preset import Preset

#: Kinds whose recurrent cell starts from the multiplicative identity 1.
MULTIPLICATIVE_KINDS = frozenset(
    {
        "nmu",
        "snmu",
        "nmru",
        "nac_mul",
        "nac_mul_sigmoid",
        "nac_mul_nmu",
        "npu",
        "real_npu",
        "real_npu_modified",
        "mcfc_mul",
    }
)


def _sparsity(preset: Preset, domain: str):
    if preset.sparsity is None:
        return None
    return regularizers.Sparsity(
        preset.sparsity, preset.start, preset.end, domain=domain
    )


def _l1(preset: Preset):
    if preset.l1 is not None:
        return regularizers.L1(**preset.l1)
    if preset.sparsity is None:
        return None
    return regularizers.L1(preset.sparsity, preset.start, preset.end)


def _combined(*parts):
    """None, the one regularizer given, or the `Sum` of several."""
    present = [part for part in parts if part is not None]
    if len(present) > 1:
        return regularizers.Sum(present)
    return present[0] if present else None


def _real_npu(n, preset: Preset, name: str):
    """RealNPU; with `Preset.l1` set, its L1 covers the gate too, as Heim et al.'s.

    Alone (the single-module presets) it is Mistry et al.'s baseline, whose
    g is clipped in the forward pass only (`ForwardClip`).
    """
    l1 = _l1(preset)
    gate = l1 if preset.l1 is not None else None
    return units.RealNPU(
        n,
        kernel_regularizer=l1,
        gate_regularizer=gate,
        gate_constraint="forward_clip" if preset.single_module else "clip",
        name=name,
    )


def _real_npu_modified(n, preset: Preset, name: str):
    """The modified RealNPU (Mistry et al. 2021): clip, NAU init, two ramps, L1."""

    def ramped(cls, **kwargs):
        if preset.sparsity is None:
            return None
        return cls(preset.sparsity, preset.start, preset.end, **kwargs)

    # One L1 for both weights: Σ|Re| + Σ|g| with one β(t).
    l1 = regularizers.L1(**preset.l1) if preset.l1 is not None else None
    kernel = _combined(ramped(regularizers.UnitMagnitude), l1)
    gate = _combined(ramped(regularizers.Sparsity, domain="unsigned"), l1)
    return units.RealNPU(
        n,
        kernel_initializer="nau_uniform",
        kernel_constraint="clip",
        kernel_regularizer=kernel,
        gate_regularizer=gate,
        name=name,
    )


def _mcfc(cls, n, preset: Preset, name: str):
    """MC-FC (or its log-space form) with -mean(p²) on R, w and b, one λ(t)."""
    reward = None
    if preset.sparsity is not None:
        reward = regularizers.NegativeL2(preset.sparsity, preset.start, preset.end)
    return cls(
        n,
        junction_regularizer=reward,
        gate_regularizer=reward,
        gate_bias_regularizer=reward,
        name=name,
    )


#: kind -> the layer it makes; NAU/NMU-type weights share the preset's λ(t).
_LAYER_KINDS = {
    "nau": lambda n, p, name: units.NAU(
        n, kernel_regularizer=_sparsity(p, "signed"), name=name
    ),
    "nmu": lambda n, p, name: units.NMU(
        n, kernel_regularizer=_sparsity(p, "unsigned"), name=name
    ),
    "nac": lambda n, p, name: units.NAC(n, name=name),
    "nac_mul": lambda n, p, name: units.NACMul(n, name=name),
    "nac_mul_sigmoid": lambda n, p, name: units.NACMul(
        n, parametrization="sigmoid", name=name
    ),
    "nac_mul_nmu": lambda n, p, name: units.NACMul(
        n,
        parametrization="nmu",
        kernel_regularizer=_sparsity(p, "unsigned"),
        name=name,
    ),
    "nalu": lambda n, p, name: units.NALU(n, name=name),
    "nalu_separate": lambda n, p, name: units.NALU(n, separate_weights=True, name=name),
    "gated_nau_nmu": lambda n, p, name: units.GatedNAUNMU(
        n,
        nau_kernel_regularizer=_sparsity(p, "signed"),
        nmu_kernel_regularizer=_sparsity(p, "unsigned"),
        name=name,
    ),
    "inalu": lambda n, p, name: units.iNALU(n, name=name),
    "npu": lambda n, p, name: units.NPU(n, kernel_regularizer=_l1(p), name=name),
    "real_npu": _real_npu,
    "real_npu_modified": _real_npu_modified,
    "snmu": lambda n, p, name: units.NMU(
        n, kernel_regularizer=_sparsity(p, "unsigned"), noise=(1.0, 5.0), name=name
    ),
    "nmru": lambda n, p, name: units.NMRU(
        n, kernel_regularizer=_sparsity(p, "unsigned"), name=name
    ),
    "mcfc": lambda n, p, name: _mcfc(units.MCFC, n, p, name),
    "mcfc_mul": lambda n, p, name: _mcfc(units.MCFCMul, n, p, name),
    "dmu_add": lambda n, p, name: units.DMU(n, initialization="add", name=name),
    "dmu_sub": lambda n, p, name: units.DMU(n, initialization="sub", name=name),
}
#: kind -> (activation, use_bias, kernel initializer) of a Dense baseline.
_DENSE_KINDS = {
    "linear": (None, False, "glorot_uniform"),
    "relu": ("relu", False, "glorot_uniform"),
    "relu6": ("relu6", False, "glorot_uniform"),
    "linear_bias": (None, True, "glorot_uniform"),
    "relu_bias": ("relu", True, "he_uniform"),
    "relu6_bias": ("relu6", True, "he_uniform"),
}
LAYER_KINDS = (*_LAYER_KINDS, *_DENSE_KINDS)


def make_layer(kind: str, units_out: int, preset: Preset, name: str):
    """One layer of a preset; NAU/NMU share the preset's λ(t) (Madsen & Johansen 2020,
    §2.7).

    Kinds: "nau", "nmu", "snmu" (noise U[1, 5]), "nmru", "nac", "nac_mul",
    "nac_mul_sigmoid" (NAC•σ), "nac_mul_nmu" (NAC•NMU), "nalu",
    "nalu_separate", "gated_nau_nmu", "inalu", "npu", "real_npu",
    "real_npu_modified", "mcfc", "mcfc_mul", "dmu_add", "dmu_sub" (the DMU
    with each initialization), the bias-free Dense baselines
    "linear", "relu", "relu6", and "linear_bias", "relu_bias", "relu6_bias":
    Dense layers with a zero-initialized bias, the ReLUs with He-uniform
    kernels, as the reference code builds its baselines.
    """
    if kind in _LAYER_KINDS:
        return _LAYER_KINDS[kind](units_out, preset, name)
    if kind not in _DENSE_KINDS:
        raise ValueError(
            f"Unknown layer kind. Expected one of {sorted(LAYER_KINDS)}. "
            f"Received: kind={kind!r}"
        )
    activation, use_bias, initializer = _DENSE_KINDS[kind]
    return keras.layers.Dense(
        units_out,
        activation=activation,
        use_bias=use_bias,
        kernel_initializer=initializer,
        name=name,
    )
