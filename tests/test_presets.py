"""Every model preset builds and trains; the new presets carry their recipe as data."""

import dataclasses
import hashlib
import inspect
import json

import keras
import numpy as np
import pytest

from keras_nalu import callbacks as nalu_callbacks
from keras_nalu import constraints, initializers, layers, regularizers
from keras_nalu.experiments import ExperimentConfig
from keras_nalu.presets import (
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
from tests.backend import to_numpy

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
    x, t = task_batch
    assert x.shape == (128, 100)
    if get_preset(name).single_module:  # one unit: t = a · b of two inputs
        x, t = x[:, :2], x[:, :1] * x[:, 1:2]
    model, callbacks = build_model(name, input_size=x.shape[1])
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


SINGLE_MODULE_PRESETS = {
    "single_nau": "NAU",
    "single_nmu": "NMU",
    "single_snmu": "NMU",
    "single_nmru": "NMRU",
    "single_real_npu": "RealNPU",
    "single_real_npu_div": "RealNPU",
    "single_real_npu_modified": "RealNPU",
    "single_mcfc": "MCFC",
    "single_mcfc_mul": "MCFCMul",
    "single_dmu_add": "DMU",
    "single_dmu_sub": "DMU",
    "single_dmu_add_author": "DMU",
    "single_dmu_sub_author": "DMU",
}


@pytest.mark.parametrize("name, unit", list(SINGLE_MODULE_PRESETS.items()))
def test_single_module_presets_map_the_inputs_to_the_output(name, unit):
    model, _ = build_model(name, input_size=10, hidden_size=7)
    assert [type(layer).__name__ for layer in model.layers] == [unit]
    assert model.layers[0].name == "output" and model.output_shape == (None, 1)
    assert get_preset(name).single_module
    with pytest.raises(ValueError, match=f"two-layer preset.*model='{name}'"):
        build_sequence_model(name, input_size=4)


def test_a_preset_has_one_or_two_layers():
    with pytest.raises(ValueError, match=r"Received: layers=\(\)"):
        dataclasses.replace(PRESETS["nmu"], layers=())
    with pytest.raises(ValueError, match="layers=\\('nau', 'nau', 'nmu'\\)"):
        dataclasses.replace(PRESETS["nmu"], layers=("nau", "nau", "nmu"))


def test_the_preset_learning_rate_is_the_default_one():
    nmru, _ = build_model("single_nmru", input_size=2)
    assert float(to_numpy(nmru.optimizer.learning_rate)) == pytest.approx(1e-2)
    npu, _ = build_model("single_real_npu", input_size=2)
    assert float(to_numpy(npu.optimizer.learning_rate)) == pytest.approx(5e-3)
    nmu, _ = build_model("single_nmu", input_size=2)
    assert float(to_numpy(nmu.optimizer.learning_rate)) == pytest.approx(1e-3)
    given, _ = build_model("single_nmru", input_size=2, learning_rate=0.1)
    assert float(to_numpy(given.optimizer.learning_rate)) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="learning_rate=-1"):
        build_model("single_nmru", input_size=2, learning_rate=-1)


def test_nmru_preset_clips_the_global_gradient_norm():
    model, callbacks = build_model("single_nmru", input_size=10)
    assert model.optimizer.global_clipnorm == pytest.approx(1.0)
    assert model.optimizer.clipnorm is None and model.optimizer.clipvalue is None
    reg = model.layers[0].kernel_regularizer
    assert (reg.strength, reg.start, reg.end, reg.domain) == (
        10.0,
        20_000,
        35_000,
        "unsigned",
    )
    assert [type(c).__name__ for c in callbacks] == ["RegularizationSchedule"]
    assert get_preset("single_nmru").divides_near_zero
    assert not get_preset("single_nmu").divides_near_zero


def test_snmu_presets_add_noise_and_nothing_else():
    two, _ = build_model("snmu", input_size=10)
    assert two.layers[1].noise == (1.0, 5.0) and two.layers[0].__class__ is layers.NAU
    one, _ = build_model("single_snmu", input_size=2)
    assert one.layers[0].noise == (1.0, 5.0)
    plain, _ = build_model("single_nmu", input_size=2)
    assert plain.layers[0].noise is None
    # The seed generator's state is the sNMU's only extra variable.
    extra = {v.path for v in one.non_trainable_variables} - {
        v.path for v in plain.non_trainable_variables
    }
    assert len(extra) == 1 and "seed_generator_state" in extra.pop()


def test_real_npu_presets_put_heims_l1_on_every_parameter():
    model, callbacks = build_model("single_real_npu_div", input_size=2)
    npu = model.layers[0]
    assert npu.kernel_regularizer is npu.gate_regularizer  # Σ|Re| + Σ|g|, one β
    l1 = npu.kernel_regularizer
    assert (l1.initial_strength, l1.strength, l1.reduction) == (1e-9, 1e-7, "sum")
    assert [l1.strength_at(t) for t in (0, 10_000, 20_000)] == [1e-9, 1e-8, 1e-7]
    assert [type(c).__name__ for c in callbacks] == ["RegularizationSchedule"]
    mul, _ = build_model("single_real_npu", input_size=2)
    assert mul.layers[0].kernel_regularizer.strength_at(0) == 1e-7
    # The two-layer real_npu preset keeps its ramped L1 on Re only.
    two, _ = build_model("real_npu", input_size=2)
    assert two.layers[1].gate_regularizer is None
    # Mistry et al.'s plain Real NPU alone clips g in its forward pass only;
    # their modified one also after every step.
    modified, _ = build_model("single_real_npu_modified", input_size=2)
    for built, kind in [
        (npu, constraints.ForwardClip),
        (mul.layers[0], constraints.ForwardClip),
        (two.layers[1], constraints.Clip),  # NAU → RealNPU keeps Clip
        (modified.layers[0], constraints.Clip),
    ]:
        assert type(built.gate_constraint) is kind


def test_modified_real_npu_preset_is_the_papers_recipe():
    model, _ = build_model("single_real_npu_modified", input_size=10)
    npu = model.layers[0]
    assert isinstance(npu.kernel_initializer, initializers.NAUUniform)
    assert isinstance(npu.kernel_constraint, constraints.Clip)
    assert (npu.kernel_constraint.min_value, npu.kernel_constraint.max_value) == (
        -1.0,
        1.0,
    )
    np.testing.assert_array_equal(to_numpy(npu.gate), 0.5)
    kernel_parts = npu.kernel_regularizer.parts()
    gate_parts = npu.gate_regularizer.parts()
    assert [type(p).__name__ for p in kernel_parts] == ["UnitMagnitude", "L1"]
    assert [type(p).__name__ for p in gate_parts] == ["Sparsity", "L1"]
    assert kernel_parts[1] is gate_parts[1]
    ramp = kernel_parts[0]
    assert (ramp.strength, ramp.start, ramp.end) == (1.0, 40_000, 50_000)
    assert gate_parts[0].domain == "unsigned"
    names = {r.log_name for r in regularizers.find_scheduled_regularizers(model)}
    assert names == {"unit_magnitude_strength", "sparsity_strength", "l1_strength"}
    # sparsity_start/_end move the ramps, not the L1's growth.
    moved, _ = build_model(
        "single_real_npu_modified", input_size=10, start=50_000, end=75_000
    )
    parts = moved.layers[0].kernel_regularizer.parts()
    assert (parts[0].start, parts[0].end, parts[1].initial_strength) == (
        50_000,
        75_000,
        1e-9,
    )


def test_mcfc_presets_reward_large_parameters_on_one_schedule():
    model, _ = build_model("single_mcfc", input_size=2)
    mcfc = model.layers[0]
    reward = mcfc.junction_regularizer
    assert isinstance(reward, regularizers.NegativeL2)
    assert mcfc.gate_regularizer is reward and mcfc.gate_bias_regularizer is reward
    assert (reward.strength, reward.start, reward.end) == (10.0, 20_000, 35_000)
    mul, _ = build_model("single_mcfc_mul", input_size=2)
    assert mul.layers[0].bias_regularizer is None


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
    "snmu": ("dbc9cbc21c63", 0),
    "single_nau": ("599013861993", 0),
    "single_nmu": ("840bc175e2d3", 0),
    "single_snmu": ("bd61401e8abf", 0),
    "single_nmru": ("d31108432860", 0),
    "single_real_npu": ("fb56678c9820", 1),  # g: ForwardClip
    "single_real_npu_div": ("70682eec6ffd", 1),  # g: ForwardClip
    "single_real_npu_modified": ("aa6a8ac08fb2", 0),
    "single_mcfc": ("d03d5df6a306", 0),
    "single_mcfc_mul": ("1f8506fb7b4a", 0),
    "single_dmu_add": ("d99e631bfe41", 0),
    "single_dmu_sub": ("e58f6d364341", 0),
    "single_dmu_add_author": ("1805f1227a04", 0),
    "single_dmu_sub_author": ("3afaabeea842", 0),
}


# Preset fields added after RECIPES was first written, with their defaults: at
# the default they stay out of the hash, so the older recipes keep theirs.
LATER_PRESET_FIELDS = {"learning_rate": None, "l1": None}


def _recipe(preset):
    fields = dataclasses.asdict(preset)
    for key in ("name", "description", "revision"):
        fields.pop(key)
    for key, default in LATER_PRESET_FIELDS.items():
        if fields[key] == default:
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
