"""Every model preset builds and trains; the new presets carry their recipe as data."""

import dataclasses
import hashlib
import inspect
import json

import keras
import numpy as np
import pytest

from keras_nalu import callbacks as nalu_callbacks
from keras_nalu import layers, regularizers
from keras_nalu.experiments import ExperimentConfig
from keras_nalu.models import (
    MULTIPLICATIVE_KINDS,
    PRESETS,
    SEQUENCE_BASELINES,
    build_model,
    build_sequence_model,
    get_preset,
    make_layer,
)
from keras_nalu.sweeps.results import config_id
from keras_nalu.tasks import ArithmeticTask, RecurrentArithmeticTask

NEW_PRESETS = {
    "nac_mul_sigma": ("NAC", "NACMul"),
    "nac_mul_nmu": ("NAU", "NACMul"),
    "gated_nau_nmu": ("NAU", "GatedNAUNMU"),
    "nalu_separate": ("NAC", "NALU"),
    "nalu_shared": ("NAC", "NALU"),
    "inalu": ("iNALU", "iNALU"),
    "npu": ("NAU", "NPU"),
    "real_npu": ("NAU", "RealNPU"),
}


@pytest.fixture(scope="module")
def task_batch():
    task = ArithmeticTask("mul", seed=0)  # default input size 100, U[1, 2]
    x, t = next(iter(task.train_dataset()))
    return x.numpy(), t.numpy()


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_builds_and_takes_a_training_step(name, task_batch):
    keras.utils.set_random_seed(0)
    model, callbacks = build_model(name, input_size=100)
    x, t = task_batch
    assert x.shape == (128, 100)
    before = [w.numpy().copy() for w in model.trainable_weights]
    history = model.fit(x, t, batch_size=128, epochs=1, callbacks=callbacks, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    after = [w.numpy() for w in model.trainable_weights]
    assert all(np.all(np.isfinite(a)) for a in after)
    if "relu" not in name:  # ReLUs may all be dead on positive inputs
        assert any(not np.allclose(b, a) for b, a in zip(before, after))
    assert int(model.optimizer.iterations.numpy()) == 1
    if name == "inalu":  # its callbacks and metric ran
        logged = {"mse", "saturation_strength", "reinitializations"}
        assert logged <= set(history.history)
    assert get_preset(name).name == name
    ExperimentConfig(model=name)  # reachable from `keras-nalu train --model NAME`


def test_existing_presets_are_unchanged():
    assert PRESETS["nmu"].layers == ("nau", "nmu")
    assert (PRESETS["nmu"].sparsity, PRESETS["nmu"].start, PRESETS["nmu"].end) == (
        10.0,
        1_000_000,
        2_000_000,
    )
    for name in ("nmu", "nau", "nau_sparse", "nac", "nac_mul", "nalu", "linear"):
        preset = PRESETS[name]
        assert dict(preset.optimizer_options) == {}
        assert preset.metrics == () and dict(preset.callbacks) == {}
    parameters = list(inspect.signature(build_model).parameters)
    assert parameters[:4] == ["preset", "input_size", "hidden_size", "output_size"]


@pytest.mark.parametrize("name", list(NEW_PRESETS))
def test_new_presets_use_their_units(name):
    model, _ = build_model(name, input_size=10)
    assert [type(layer).__name__ for layer in model.layers] == list(NEW_PRESETS[name])


def test_nac_mul_variant_presets():
    model, callbacks = build_model("nac_mul_nmu", input_size=10)
    output = model.layers[1]
    assert output.parametrization == "nmu"
    reg = output.kernel_regularizer
    assert isinstance(reg, regularizers.Sparsity) and reg.domain == "unsigned"
    assert (reg.strength, reg.start, reg.end) == (10.0, 1_000_000, 2_000_000)
    assert [type(c).__name__ for c in callbacks] == ["RegularizationSchedule"]
    sigma, callbacks = build_model("nac_mul_sigma", input_size=10)
    assert sigma.layers[1].parametrization == "sigmoid" and callbacks == []
    assert sigma.layers[0].kernel_regularizer is None  # NAC+ has none
    # the NAU below the NAC•NMU shares its λ(t), as in the reference code
    hidden_reg = model.layers[0].kernel_regularizer
    assert hidden_reg.domain == "signed" and hidden_reg.strength == 10.0


def test_gated_and_nalu_presets():
    model, _ = build_model("gated_nau_nmu", input_size=10, sparsity=2.0)
    gated = model.layers[1]
    assert gated.nau.kernel_regularizer.strength == 2.0  # one λ(t) for all
    assert gated.nmu.kernel_regularizer.domain == "unsigned"
    separate, _ = build_model("nalu_separate", input_size=10)
    assert separate.layers[1].separate_weights
    shared, _ = build_model("nalu_shared", input_size=10)
    assert not shared.layers[1].separate_weights


def test_inalu_preset_carries_clipping_metrics_and_callbacks():
    model, callbacks = build_model("inalu", input_size=10)
    assert model.optimizer.clipvalue == pytest.approx(0.1)
    assert [type(c).__name__ for c in callbacks] == [
        "LossGatedRegularization",
        "Reinitialization",
    ]
    switch, reinit = callbacks
    assert switch.monitor == "mse" and reinit.monitor == "mse"
    assert (reinit.every, reinit.loss_threshold) == (10, 1.0)
    other, _ = build_model("nau", input_size=10)
    assert other.optimizer.clipvalue is None


@pytest.mark.parametrize(
    "name, activation, initializer",
    [
        ("linear_bias", "linear", "GlorotUniform"),
        ("relu_bias", "relu", "HeUniform"),
        ("relu6_bias", "relu6", "HeUniform"),
    ],
)
def test_the_reference_codes_baselines_have_biases(name, activation, initializer):
    model, _ = build_model(name, input_size=100)
    for layer in model.layers:
        assert layer.use_bias and layer.activation.__name__ == activation
        assert type(layer.kernel_initializer).__name__ == initializer
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer.bias), 0.0)
    plain, _ = build_model(name.removesuffix("_bias"), input_size=100)
    assert not any(layer.use_bias for layer in plain.layers)


def test_epsilon_reaches_the_optimizer_beside_the_preset_options():
    model, _ = build_model("inalu", input_size=10, epsilon=1e-8)
    assert model.optimizer.epsilon == pytest.approx(1e-8)
    assert model.optimizer.clipvalue == pytest.approx(0.1)  # the preset's, kept
    assert get_preset("inalu").optimizer_options == {"clipvalue": 0.1}  # unchanged
    default, _ = build_model("nmu", input_size=10)
    assert default.optimizer.epsilon == pytest.approx(1e-7)  # Keras' own
    with pytest.raises(ValueError, match="epsilon"):
        build_model("nmu", input_size=10, epsilon=-1.0)


def test_npu_presets_share_lambda_between_sparsity_and_l1():
    model, callbacks = build_model("npu", input_size=10)
    nau, npu = model.layers
    assert isinstance(nau.kernel_regularizer, regularizers.Sparsity)
    assert isinstance(npu.kernel_regularizer, regularizers.L1)
    assert npu.kernel_regularizer.strength == nau.kernel_regularizer.strength
    assert npu.kernel_regularizer.start == nau.kernel_regularizer.start
    assert isinstance(callbacks[0], nalu_callbacks.RegularizationSchedule)


@pytest.mark.parametrize("name", [*SEQUENCE_BASELINES, "nmu", "gated_nau_nmu"])
def test_sequence_models_train_on_short_and_run_on_long_sequences(name):
    keras.utils.set_random_seed(0)
    task = RecurrentArithmeticTask("add", seed=0, test_size=2, test_length=50)
    x, t = next(iter(task.train_dataset()))
    # XLA for one recurrent arithmetic unit; the rest compile faster without.
    jit_compile = "auto" if name == "nmu" else False
    model, callbacks = build_sequence_model(
        name, input_size=10, jit_compile=jit_compile
    )
    assert tuple(x.shape[1:]) == (10, 10)
    history = model.fit(x, t, epochs=1, callbacks=callbacks, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    test_x, _ = task.test_data()
    assert model.predict(test_x, verbose=0).shape == (2, 1)


def test_sequence_model_cells():
    model, _ = build_sequence_model("nmu", input_size=10, hidden_size=3)
    cell = model.layers[0].cell
    assert isinstance(cell, layers.ArithmeticCell) and isinstance(cell.unit, layers.NAU)
    assert cell.initial_state_value == 0.0 and cell.state_size == 3
    product, _ = build_sequence_model("nac_mul_nmu", input_size=4)
    assert product.layers[0].cell.initial_state_value == 0.0  # hidden NAU adds
    assert "nmu" in MULTIPLICATIVE_KINDS and "nau" not in MULTIPLICATIVE_KINDS
    lstm, _ = build_sequence_model("lstm", input_size=4)
    assert isinstance(lstm.layers[0], keras.layers.LSTM)


def test_unknown_names_list_the_choices():
    with pytest.raises(ValueError, match="inalu"):
        get_preset("nope")
    with pytest.raises(ValueError, match="lstm"):
        build_sequence_model("nope", input_size=4)
    with pytest.raises(ValueError, match="kind='nope'"):
        make_layer("nope", 1, PRESETS["nmu"], "layer")


# Each preset's recipe (everything but its name, description and revision)
# as a hash, with the revision it has. Results rows are keyed by config_id,
# which does not hash the recipe: when a recipe changes, raise the preset's
# `revision` (old rows then stop matching) and update its line here.
RECIPES = {
    "nmu": ("9fb249e3982b", 0),
    "nau": ("3c3213d16852", 0),
    "nau_sparse": ("6267fc5456b1", 0),
    "nac": ("fa7ff6b39879", 0),
    "nac_mul": ("8b6ce75d445d", 0),
    "nalu": ("2dab3b3f1c53", 0),
    "linear": ("225d0d2cc06e", 0),
    "relu": ("8b22c2c9a220", 0),
    "relu6": ("dd66ff24e931", 0),
    "linear_bias": ("5bd97b1600ea", 0),
    "relu_bias": ("18faaed7b45b", 0),
    "relu6_bias": ("eae78d66ecef", 0),
    "nac_mul_sigma": ("6c0b29a7938e", 0),
    "nac_mul_nmu": ("be04b5da4258", 0),
    "gated_nau_nmu": ("103f6b5194b8", 0),
    "nalu_separate": ("83ca52bce9a6", 0),
    "nalu_shared": ("f284b4fdf4d4", 0),
    "inalu": ("2160edd95a0c", 0),
    "npu": ("6bf044de1a7f", 0),
    "real_npu": ("3a4a742f722b", 0),
}


def _recipe(preset):
    fields = dataclasses.asdict(preset)
    for key in ("name", "description", "revision"):
        fields.pop(key)
    encoded = json.dumps(fields, sort_keys=True).encode()
    return hashlib.sha256(encoded).hexdigest()[:12]


def test_a_changed_recipe_comes_with_a_new_revision():
    assert set(RECIPES) == set(PRESETS)
    for name, preset in PRESETS.items():
        assert (_recipe(preset), preset.revision) == RECIPES[name], (
            f"preset {name!r} changed: raise its revision so results rows of "
            "the old recipe stop matching, then update RECIPES"
        )


def test_a_preset_revision_changes_the_config_id(monkeypatch):
    config = ExperimentConfig(model="nmu")
    before = config_id(config)
    revised = dataclasses.replace(PRESETS["nmu"], revision=1)
    monkeypatch.setitem(PRESETS, "nmu", revised)
    assert config_id(config) != before
