"""`build_model` and `build_sequence_model`: a preset as a compiled Keras model."""

import dataclasses

import keras

from keras_nalu import callbacks as nalu_callbacks
from keras_nalu import layers as units
from keras_nalu._validation import check_positive, check_positive_int
from keras_nalu.callbacks import RegularizationSchedule
from keras_nalu.presets.catalog import PRESETS, get_preset
from keras_nalu.presets.kinds import MULTIPLICATIVE_KINDS, make_layer
from keras_nalu.presets.preset import DEFAULT_LEARNING_RATE, Preset
from keras_nalu.regularizers import find_scheduled_regularizers

#: Sequence-only baselines of `build_sequence_model` (not in PRESETS).
SEQUENCE_BASELINES = ("lstm", "gru")


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
