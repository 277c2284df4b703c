"""The papers' model presets as data: which units, λ and schedule (Madsen &
Johansen (2020), Table 4).

A preset names its layers (two, or one for the single-module task) and its
sparsity schedule; `build_model` turns it into a compiled Keras model plus the
callbacks it trains with. Every field can be overridden per call.
`build_sequence_model` makes the recurrent models (a preset's hidden unit as a
recurrent cell, or an LSTM/GRU baseline).
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

import keras

from keras_nalu import callbacks as nalu_callbacks
from keras_nalu import layers as units
from keras_nalu import regularizers
from keras_nalu._validation import check_positive, check_positive_int
from keras_nalu.callbacks import RegularizationSchedule, find_scheduled_regularizers

#: The learning rate of a preset that names none (Madsen & Johansen 2020).
DEFAULT_LEARNING_RATE = 1e-3

#: Output kinds that add ε to |x| before dividing by it (the NMRU in
#: training; the NPUs' log(|x| + ε)), so a divisor near 0 stays finite: the
#: division paper (Mistry et al. 2021) trains them on U[-2, 2].
ZERO_SAFE_DIVISION_KINDS = frozenset({"nmru", "npu", "real_npu", "real_npu_modified"})


@dataclasses.dataclass(frozen=True)
class Preset:
    """A two-layer model of Madsen & Johansen (2020), Table 4 (or of the paper of its
    unit), or one unit alone for the single-module task.

    Attributes:
        name: the preset's name (`keras-nalu train --model NAME`).
        layers: the kind of the hidden and of the output layer (see
            `make_layer`), or of the output layer alone: a single module
            maps the inputs to the output (`hidden_size` is unused).
        sparsity: λ_sparse, or None for units without a sparsity regularizer.
            One λ(t) for every unit of the model (Madsen & Johansen 2020, §2.7): the
            NAU/NMU sparsity terms and the NPU's L1 penalty.
        start: step at which λ starts to ramp up.
        end: step at which λ reaches `sparsity`.
        description: one line for `--help` and the README.
        optimizer_options: extra optimizer arguments, e.g. `{"clipvalue":
            0.1}` (gradient clipping of the iNALU).
        metrics: metrics to compile, e.g. `("mse",)` for a loss without the
            regularizers that a callback can monitor.
        callbacks: callbacks the preset trains with, as `{class name in
            keras_nalu.callbacks: constructor arguments}`.
        revision: raised by one whenever the recipe changes. A revision
            above 0 enters `keras_nalu.sweeps.config_id`, so results rows of
            the older recipe are no longer resumed or reused for this one.
        learning_rate: the recipe's learning rate, used when `build_model`
            is given none; None for `DEFAULT_LEARNING_RATE`.
        l1: keyword arguments of the `keras_nalu.regularizers.L1` that the
            Real NPU kinds put on every parameter (Heim et al.'s growing β),
            or None.
    """

    name: str
    layers: tuple[str, ...]
    sparsity: float | None = None
    start: int | None = None
    end: int | None = None
    description: str = ""
    optimizer_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    metrics: tuple[str, ...] = ()
    callbacks: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    revision: int = 0
    learning_rate: float | None = None
    l1: Mapping[str, Any] | None = None

    def __post_init__(self):
        if not 1 <= len(self.layers) <= 2:
            raise ValueError(
                "Preset expects one or two layer kinds. "
                f"Received: layers={self.layers!r}"
            )

    @property
    def single_module(self) -> bool:
        """Whether the model is one unit from the inputs to the output."""
        return len(self.layers) == 1

    @property
    def divides_near_zero(self) -> bool:
        """Whether its output unit may divide by inputs near 0 (the NMRU, the
        NPUs: `ZERO_SAFE_DIVISION_KINDS`).

        `ExperimentConfig` passes it to `ArithmeticTask(allow_zero_divisor=...)`,
        which otherwise refuses division over an input range that holds 0.
        """
        return self.layers[-1] in ZERO_SAFE_DIVISION_KINDS


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset("nmu", ("nau", "nmu"), 10.0, 1_000_000, 2_000_000, "NAU → NMU"),
        Preset("nau", ("nau", "nau"), 0.01, 5_000, 50_000, "NAU → NAU"),
        Preset(
            "nau_sparse",
            ("nau", "nau"),
            0.1,
            5_000,
            50_000,
            "NAU → NAU with λ = 0.1 (10× Table 4): discrete weights within 10⁵ steps",
        ),
        Preset("nac", ("nac", "nac"), description="NAC+ → NAC+"),
        Preset("nac_mul", ("nac", "nac_mul"), description="NAC+ → NAC•"),
        Preset("nalu", ("nalu", "nalu"), description="NALU → NALU (shared weights)"),
        Preset("linear", ("linear", "linear"), description="Linear → Linear"),
        Preset("relu", ("relu", "relu"), description="ReLU → ReLU"),
        Preset("relu6", ("relu6", "relu6"), description="ReLU6 → ReLU6"),
        # The reference code's baselines: every Dense layer has a bias
        # (initialized to 0), the ReLUs' kernels are He-uniform.
        Preset(
            "linear_bias",
            ("linear_bias", "linear_bias"),
            description="Linear → Linear with biases (the reference code's Linear)",
        ),
        Preset(
            "relu_bias",
            ("relu_bias", "relu_bias"),
            description="ReLU → ReLU with biases and He-uniform kernels (the "
            "reference code's ReLU)",
        ),
        Preset(
            "relu6_bias",
            ("relu6_bias", "relu6_bias"),
            description="ReLU6 → ReLU6 with biases and He-uniform kernels (the "
            "reference code's ReLU6)",
        ),
        Preset(
            "nac_mul_sigma",
            ("nac", "nac_mul_sigmoid"),
            description=(
                "NAC+ → NAC•σ, W = σ(Ŵ): multiplication only "
                "(Madsen & Johansen 2020, §4.1.3)"
            ),
        ),
        # The reference code's NAC•NMU (`--layer-type ReRegualizedLinearPosNAC
        # --nac-mul normal --first-layer ReRegualizedLinearNAC`) has an NAU
        # below it; Madsen & Johansen's (2020) Table 4 prints NAC+. We follow the code,
        # which produced the paper's numbers.
        Preset(
            "nac_mul_nmu",
            ("nau", "nac_mul_nmu"),
            10.0,
            1_000_000,
            2_000_000,
            "NAU → NAC•NMU, W = clip(Ŵ, 0, 1) with the NMU's sparsity "
            "(Madsen & Johansen 2020, §4.1.3, Table 4; "
            "first layer as the reference code)",
        ),
        Preset(
            "gated_nau_nmu",
            ("nau", "gated_nau_nmu"),
            10.0,
            1_000_000,
            2_000_000,
            "NAU → gated NAU/NMU (Madsen & Johansen 2020, App. C.5, Table 5), "
            "the NMU preset's λ(t)",
        ),
        Preset(
            "nalu_separate",
            ("nac", "nalu_separate"),
            description=(
                "NAC+ → NALU with separate weights "
                "(Madsen & Johansen 2020, App. C.5, Table 5)"
            ),
        ),
        Preset(
            "nalu_shared",
            ("nac", "nalu"),
            description=(
                "NAC+ → NALU with shared weights "
                "(Madsen & Johansen 2020, App. C.5, Table 5)"
            ),
        ),
        Preset(
            "inalu",
            ("inalu", "inalu"),
            description="iNALU → iNALU with gradient clipping ±0.1, the loss-gated "
            "saturation regularizer and reinitialization (Schlör et al. 2020)",
            optimizer_options={"clipvalue": 0.1},
            metrics=("mse",),
            callbacks={
                "LossGatedRegularization": {"monitor": "mse"},
                "Reinitialization": {
                    "every": 10,
                    "loss_threshold": 1.0,
                    "monitor": "mse",
                },
            },
        ),
        Preset(
            "npu",
            ("nau", "npu"),
            0.01,
            5_000,
            50_000,
            "NAU → NPU; λ(t) of the NAU preset for the NAU's sparsity and the "
            "NPU's L1 (Heim et al. 2020)",
        ),
        Preset(
            "real_npu",
            ("nau", "real_npu"),
            0.01,
            5_000,
            50_000,
            "NAU → RealNPU; λ(t) as the npu preset",
        ),
        Preset(
            "snmu",
            ("nau", "snmu"),
            10.0,
            1_000_000,
            2_000_000,
            "NAU → sNMU, noise U[1, 5] in training; the nmu preset's λ(t) "
            "(Mistry et al. 2022)",
        ),
        # The single-module task (one unit from 2 or 10 inputs to the output)
        # of Mistry et al.'s benchmark and division papers: the 2-input
        # recipes (5·10⁴ steps). The 10-input runs move the ramp to
        # 5·10⁴ → 7.5·10⁴ and train 10⁵ steps (sparsity_start/_end).
        Preset(
            "single_nau",
            ("nau",),
            0.01,
            20_000,
            35_000,
            "NAU alone (single-module task)",
        ),
        Preset(
            "single_nmu",
            ("nmu",),
            10.0,
            20_000,
            35_000,
            "NMU alone (single-module task)",
        ),
        Preset(
            "single_snmu",
            ("snmu",),
            10.0,
            20_000,
            35_000,
            "sNMU alone, noise U[1, 5] in training (Mistry et al. 2022)",
        ),
        Preset(
            "single_nmru",
            ("nmru",),
            10.0,
            20_000,
            35_000,
            "NMRU alone: Adam 10⁻², global gradient norm clipped to 1 "
            "(Mistry et al., TMLR 2022)",
            optimizer_options={"global_clipnorm": 1.0},
            learning_rate=1e-2,
        ),
        Preset(
            "single_real_npu",
            ("real_npu",),
            description="RealNPU alone: Adam 5·10⁻³, L1 on every parameter "
            "with β 10⁻⁷ → 10⁻⁵ (×10 every 10⁴ steps), g clipped in the forward "
            "pass only, the benchmark's × recipe",
            learning_rate=5e-3,
            revision=1,
            l1={"strength": 1e-5, "initial_strength": 1e-7, "reduction": "sum"},
        ),
        Preset(
            "single_real_npu_div",
            ("real_npu",),
            description="RealNPU alone, the ÷ recipe: β 10⁻⁹ → 10⁻⁷",
            learning_rate=5e-3,
            revision=1,
            l1={"strength": 1e-7, "initial_strength": 1e-9, "reduction": "sum"},
        ),
        Preset(
            "single_real_npu_modified",
            ("real_npu_modified",),
            1.0,
            40_000,
            50_000,
            "Modified RealNPU alone: Re clipped to [-1, 1], NAU init, g₀ = ½, "
            "mean|1 - |Re|| and mean min(g, 1 - g) ramped, L1 β 10⁻⁹ → 10⁻⁷ "
            "(Mistry et al., TMLR 2022)",
            learning_rate=5e-3,
            l1={"strength": 1e-7, "initial_strength": 1e-9, "reduction": "sum"},
        ),
        Preset(
            "single_mcfc",
            ("mcfc",),
            10.0,
            20_000,
            35_000,
            "MC-FC alone, -mean(p²) ramped (Hoedt et al. 2021)",
        ),
        Preset(
            "single_mcfc_mul",
            ("mcfc_mul",),
            10.0,
            20_000,
            35_000,
            "Log-space MC-FC alone, -mean(p²) ramped (Hoedt et al. 2021)",
        ),
    )
}

#: Sequence-only baselines of `build_sequence_model` (not in PRESETS).
SEQUENCE_BASELINES = ("lstm", "gru")

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


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ValueError(
            f"Unknown model preset. Expected one of {sorted(PRESETS)}. "
            f"Received: model={name!r}"
        )
    return PRESETS[name]


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
    """RealNPU; with `preset.l1`, its L1 covers the gate too, as Heim et al.'s.

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
    "real_npu_modified", "mcfc", "mcfc_mul", the bias-free Dense baselines
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


def _compile(model, preset, learning_rate, optimizer, jit_compile, steps_per_execution):
    model.compile(
        optimizer=keras.optimizers.get(
            {
                "class_name": optimizer,
                "config": {"learning_rate": learning_rate, **preset.optimizer_options},
            }
        ),
        loss="mse",
        metrics=list(preset.metrics) or None,
        jit_compile=jit_compile,
        steps_per_execution=steps_per_execution,
    )


def _preset_callbacks(model, preset: Preset) -> list[keras.callbacks.Callback]:
    callbacks = []
    scheduled = any(r.scheduled for r in find_scheduled_regularizers(model))
    if preset.sparsity is not None or scheduled:
        callbacks.append(RegularizationSchedule())
    for name, config in preset.callbacks.items():
        callbacks.append(getattr(nalu_callbacks, name)(**config))
    return callbacks


def _override(preset, sparsity, start, end) -> Preset:
    preset = get_preset(preset) if isinstance(preset, str) else preset
    overrides = {
        key: value
        for key, value in {"sparsity": sparsity, "start": start, "end": end}.items()
        if value is not None
    }
    return dataclasses.replace(preset, **overrides)


def build_model(
    preset: Preset | str,
    input_size: int,
    hidden_size: int = 2,
    output_size: int = 1,
    learning_rate: float | None = None,
    optimizer: str = "adam",
    sparsity: float | None = None,
    start: int | None = None,
    end: int | None = None,
    jit_compile: bool | str = "auto",
    steps_per_execution: int = 1,
    epsilon: float | None = None,
) -> tuple[keras.Model, list[keras.callbacks.Callback]]:
    """A compiled model of `preset` (two layers, or one) and the callbacks it needs.

    Args:
        preset: a `Preset` or its name.
        input_size: length of the input vector.
        hidden_size: width of the hidden layer (the paper's default 2); a
            single-module preset has none.
        output_size: width of the output.
        learning_rate: Adam's (or `optimizer`'s) learning rate; None for the
            preset's (`Preset.learning_rate`), else 1e-3.
        optimizer: a Keras optimizer name.
        sparsity, start, end: override the preset's λ and its schedule.
        jit_compile, steps_per_execution: passed to `model.compile`.
        epsilon: the optimizer's ε; None keeps the Keras default (10⁻⁷).

    Returns:
        `(model, callbacks)`; the callbacks hold the `RegularizationSchedule`
        for presets with a sparsity regularizer and the preset's own (the
        iNALU's `LossGatedRegularization` and `Reinitialization`).

    Example:

    >>> from keras_nalu.presets import build_model
    >>> model, callbacks = build_model("nmu", input_size=100)
    >>> [type(layer).__name__ for layer in model.layers]
    ['NAU', 'NMU']
    """
    preset = _override(preset, sparsity, start, end)
    if epsilon is not None:
        check_positive("build_model", "epsilon", epsilon)
        options = {**preset.optimizer_options, "epsilon": epsilon}
        preset = dataclasses.replace(preset, optimizer_options=options)
    check_positive_int("build_model", "input_size", input_size)
    check_positive_int("build_model", "hidden_size", hidden_size)
    learning_rate = _learning_rate(preset, learning_rate, "build_model")
    layers = [keras.Input((input_size,))]
    if not preset.single_module:
        layers.append(make_layer(preset.layers[0], hidden_size, preset, "hidden"))
    layers.append(make_layer(preset.layers[-1], output_size, preset, "output"))
    model = keras.Sequential(layers, name=preset.name)
    _compile(model, preset, learning_rate, optimizer, jit_compile, steps_per_execution)
    return model, _preset_callbacks(model, preset)


def _learning_rate(preset: Preset, learning_rate, owner: str) -> float:
    if learning_rate is None:
        learning_rate = preset.learning_rate or DEFAULT_LEARNING_RATE
    return check_positive(owner, "learning_rate", learning_rate)


def build_sequence_model(
    model: Preset | str,
    input_size: int,
    hidden_size: int = 2,
    output_size: int = 1,
    learning_rate: float | None = None,
    optimizer: str = "adam",
    sparsity: float | None = None,
    start: int | None = None,
    end: int | None = None,
    jit_compile: bool | str = "auto",
    steps_per_execution: int = 1,
) -> tuple[keras.Model, list[keras.callbacks.Callback]]:
    """A compiled recurrent model for sequences `(batch, time, input_size)`.

    For a preset (or its name) the hidden unit becomes an `ArithmeticCell`
    run by `keras.layers.RNN` over concat([x_t, h_{t-1}]) — h_0 = 1 for
    multiplicative units (`MULTIPLICATIVE_KINDS`), 0 otherwise — and the
    output unit reads the last state: e.g. "nmu" accumulates the subset sums
    with a recurrent NAU and multiplies them with an NMU (Trask et al.'s (2018)
    recurrent arithmetic task). "lstm" and "gru" are the baselines:
    `keras.layers.LSTM`/`GRU(hidden_size)` followed by a linear `Dense`. The
    time axis is left open, so a model trained on 10 steps runs on 1000.

    Args:
        model: a `Preset`, its name, or "lstm" / "gru".
        input_size: size of each step x_t.
        hidden_size: width of the recurrent state.
        output_size: width of the output.
        learning_rate, optimizer, sparsity, start, end, jit_compile,
            steps_per_execution: as for `build_model`.

    Returns:
        `(model, callbacks)` as `build_model`.

    Example:

    >>> from keras_nalu.presets import build_sequence_model
    >>> model, callbacks = build_sequence_model("nmu", input_size=10)
    >>> [type(layer).__name__ for layer in model.layers]
    ['RNN', 'NMU']
    >>> type(model.layers[0].cell.unit).__name__
    'NAU'
    """
    check_positive_int("build_sequence_model", "input_size", input_size)
    check_positive_int("build_sequence_model", "hidden_size", hidden_size)
    if learning_rate is not None:
        check_positive("build_sequence_model", "learning_rate", learning_rate)
    if isinstance(model, str) and model in SEQUENCE_BASELINES:
        preset = Preset(model, (model, "linear"), description=model.upper())
        recurrent_cls = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU}[model]
        recurrent = recurrent_cls(hidden_size, name="recurrent")
        output = keras.layers.Dense(output_size, name="output")
    else:
        if isinstance(model, str) and model not in PRESETS:
            raise ValueError(
                "Unknown sequence model. Expected one of "
                f"{sorted([*PRESETS, *SEQUENCE_BASELINES])}. Received: model={model!r}"
            )
        preset = _override(model, sparsity, start, end)
        if preset.single_module:
            raise ValueError(
                "build_sequence_model needs a two-layer preset: its hidden unit "
                f"becomes the recurrent cell. Received: model={preset.name!r}"
            )
        hidden_kind, output_kind = preset.layers
        initial = 1.0 if hidden_kind in MULTIPLICATIVE_KINDS else 0.0
        cell = units.ArithmeticCell(
            make_layer(hidden_kind, hidden_size, preset, "hidden"),
            initial_state_value=initial,
            name="cell",
        )
        recurrent = keras.layers.RNN(cell, name="recurrent")
        output = make_layer(output_kind, output_size, preset, "output")
    sequence_model = keras.Sequential(
        [keras.Input((None, input_size)), recurrent, output],
        name=f"{preset.name}_sequence",
    )
    _compile(
        sequence_model,
        preset,
        _learning_rate(preset, learning_rate, "build_sequence_model"),
        optimizer,
        jit_compile,
        steps_per_execution,
    )
    return sequence_model, _preset_callbacks(sequence_model, preset)
