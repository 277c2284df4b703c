"""The papers' model presets as data: which units, λ and schedule (001 Table 4).

A preset names its two layers and its sparsity schedule; `build_model` turns
it into a compiled Keras model plus the callbacks it trains with. Every field
can be overridden per call.
"""

import dataclasses

import keras

from keras_nalu import layers as units
from keras_nalu import regularizers
from keras_nalu._validation import check_positive, check_positive_int
from keras_nalu.callbacks import RegularizationSchedule


@dataclasses.dataclass(frozen=True)
class Preset:
    """A two-layer model of seed 001 Table 4.

    Attributes:
        name: the preset's name (`keras-nalu train --model NAME`).
        layers: the kind of the hidden and of the output layer.
        sparsity: λ_sparse, or None for units without a sparsity regularizer.
        start: step at which λ starts to ramp up.
        end: step at which λ reaches `sparsity`.
        description: one line for `--help` and the README.
    """

    name: str
    layers: tuple[str, str]
    sparsity: float | None = None
    start: int | None = None
    end: int | None = None
    description: str = ""


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
    )
}

#: Whose sparsity regularizer acts on which weight domain.
_DOMAINS = {"nau": "signed", "nmu": "unsigned"}


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ValueError(
            f"Unknown model preset. Expected one of {sorted(PRESETS)}. "
            f"Received: model={name!r}"
        )
    return PRESETS[name]


def make_layer(kind: str, units_out: int, preset: Preset, name: str):
    """One layer of a preset; NAU/NMU share the preset's λ(t) (seed 001 §2.7)."""
    if kind in _DOMAINS:
        sparsity = None
        if preset.sparsity is not None:
            sparsity = regularizers.Sparsity(
                preset.sparsity, preset.start, preset.end, domain=_DOMAINS[kind]
            )
        cls = units.NAU if kind == "nau" else units.NMU
        return cls(units_out, kernel_regularizer=sparsity, name=name)
    if kind == "nac":
        return units.NAC(units_out, name=name)
    if kind == "nac_mul":
        return units.NACMul(units_out, name=name)
    if kind == "nalu":
        return units.NALU(units_out, name=name)
    activation = {"linear": None, "relu": "relu", "relu6": "relu6"}[kind]
    return keras.layers.Dense(
        units_out, activation=activation, use_bias=False, name=name
    )


def build_model(
    preset: Preset | str,
    input_size: int,
    hidden_size: int = 2,
    output_size: int = 1,
    learning_rate: float = 1e-3,
    optimizer: str = "adam",
    sparsity: float | None = None,
    start: int | None = None,
    end: int | None = None,
    jit_compile: bool | str = "auto",
    steps_per_execution: int = 1,
) -> tuple[keras.Model, list[keras.callbacks.Callback]]:
    """A compiled two-layer model of `preset` and the callbacks it needs.

    Args:
        preset: a `Preset` or its name.
        input_size: length of the input vector.
        hidden_size: width of the hidden layer (the paper's default 2).
        output_size: width of the output.
        learning_rate: Adam's (or `optimizer`'s) learning rate; 1e-3 default.
        optimizer: a Keras optimizer name.
        sparsity, start, end: override the preset's λ and its schedule.
        jit_compile, steps_per_execution: passed to `model.compile`.

    Returns:
        `(model, callbacks)`; the callbacks hold the `RegularizationSchedule`
        for presets with a sparsity regularizer.

    Example:

    >>> from keras_nalu.models import build_model
    >>> model, callbacks = build_model("nmu", input_size=100)
    >>> [type(layer).__name__ for layer in model.layers]
    ['NAU', 'NMU']
    """
    preset = get_preset(preset) if isinstance(preset, str) else preset
    overrides = {
        key: value
        for key, value in {"sparsity": sparsity, "start": start, "end": end}.items()
        if value is not None
    }
    preset = dataclasses.replace(preset, **overrides)
    check_positive_int("build_model", "input_size", input_size)
    check_positive_int("build_model", "hidden_size", hidden_size)
    check_positive("build_model", "learning_rate", learning_rate)
    hidden_kind, output_kind = preset.layers
    model = keras.Sequential(
        [
            keras.Input((input_size,)),
            make_layer(hidden_kind, hidden_size, preset, "hidden"),
            make_layer(output_kind, output_size, preset, "output"),
        ],
        name=preset.name,
    )
    model.compile(
        optimizer=keras.optimizers.get(
            {"class_name": optimizer, "config": {"learning_rate": learning_rate}}
        ),
        loss="mse",
        jit_compile=jit_compile,
        steps_per_execution=steps_per_execution,
    )
    callbacks = []
    if preset.sparsity is not None:
        callbacks.append(RegularizationSchedule())
    return model, callbacks
