"""`.keras` and SavedModel round trips, loaded where nothing else is in memory.

Two trained models, a NAU→NMU stack and a block of every NAC-family unit
(NALU shared / separate with gate bias, NAC, NAC•), are saved once per test
session worker; one fresh interpreter then loads the exported SavedModels
with TensorFlow alone, fails to load a `.keras` file before `import
keras_nalu`, and loads the `.keras` files after it.
"""

import json
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_nalu.callbacks import RegularizationSchedule
from keras_nalu.layers import NAC, NALU, NAU, NMU, NACMul
from keras_nalu.regularizers import Sparsity, find_scheduled_regularizers
from tests.backend import BACKEND, requires_tensorflow, to_numpy
from tests.helpers import run_in_fresh_python

INPUT_DIM = 4
ROOT = Path(__file__).resolve().parents[1]


def nau_nmu_model():
    inputs = keras.Input((INPUT_DIM,))
    hidden = NAU(3, name="nau")(inputs)
    return keras.Model(inputs, NMU(2, name="nmu")(hidden), name="nau_nmu")


def nalu_model():
    inputs = keras.Input((INPUT_DIM,))
    branches = [
        NALU(2, name="nalu")(inputs),
        NALU(
            2,
            separate_weights=True,
            use_gate_bias=True,
            epsilon=1e-5,
            kernel_regularizer=Sparsity(0.5),
            name="nalu_separate",
        )(inputs),
        NAC(1, name="nac")(inputs),
        NACMul(1, name="nac_mul")(inputs),
    ]
    outputs = keras.layers.Concatenate()(branches)
    return keras.Model(inputs, outputs, name="nalu_family")


MODELS = {"nau_nmu": nau_nmu_model, "nalu": nalu_model}


def regularizer_configs(model):
    configs = [r.get_config() for r in find_scheduled_regularizers(model)]
    return sorted(json.dumps(c, sort_keys=True) for c in configs)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Trains each model a little, saves `.keras`, exports a SavedModel (TF)."""
    directory = tmp_path_factory.mktemp("serialization")
    rng = np.random.default_rng(0)
    x_train = rng.uniform(1.0, 2.0, (64, INPUT_DIM)).astype("float32")
    x = rng.uniform(-3.0, 3.0, (32, INPUT_DIM)).astype("float32")
    x[0] = 0.0  # exact zeros through the NAC• paths
    np.save(directory / "x.npy", x)
    record = {}
    for name, build in MODELS.items():
        keras.utils.set_random_seed(1)
        model = build()
        model.compile(keras.optimizers.Adam(0.01), "mse")
        targets = np.prod(x_train[:, :2], axis=1, keepdims=True)
        targets = np.repeat(targets, model.output_shape[-1], axis=1)
        model.fit(
            x_train,
            targets,
            batch_size=16,
            epochs=3,
            verbose=0,
            callbacks=[RegularizationSchedule(1.0, start=0, end=10)],
        )
        expected = model.predict(x, verbose=0)
        assert np.all(np.isfinite(expected))
        model.save(directory / f"{name}.keras")
        if BACKEND == "tensorflow":  # SavedModel export is TensorFlow's
            model.export(str(directory / f"{name}_export"), verbose=False)
        record[name] = {
            "expected": expected,
            "layers": {layer.name: type(layer).__name__ for layer in model.layers},
            "regularizers": regularizer_configs(model),
            "iterations": int(to_numpy(model.optimizer.iterations)),
        }
    return directory, record


# One fresh interpreter, in three stages: where asked (argv[2] == "1") it
# loads the exported SavedModels with TensorFlow alone and lists the modules
# named "nalu" then in memory; it loads a `.keras` file before `import
# keras_nalu`; then it imports `keras_nalu` alone and loads the `.keras` files.
FRESH = """
import json, re, sys
import numpy as np

directory, saved_models, names = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
report = {}
if saved_models:
    import tensorflow as tf

    x = tf.constant(np.load(f"{directory}/x.npy"))
    for name in names:
        loaded = tf.saved_model.load(f"{directory}/{name}_export")
        np.save(f"{directory}/{name}_serve.npy", loaded.serve(x).numpy())
        (output,) = loaded.signatures["serving_default"](x).values()
        np.save(f"{directory}/{name}_signature.npy", output.numpy())
    report["saved_model_modules"] = sorted(m for m in sys.modules if "nalu" in m)

import keras

try:
    keras.saving.load_model(f"{directory}/nau_nmu.keras")
except TypeError as error:
    found = re.search("Could not locate class '[^']*'", str(error))
    report["without_import"] = found[0]

import keras_nalu
from keras_nalu.regularizers import find_scheduled_regularizers

x = np.load(f"{directory}/x.npy")
for name in names:
    model = keras.saving.load_model(f"{directory}/{name}.keras")  # no custom_objects
    np.save(f"{directory}/{name}_keras_fresh.npy", model.predict(x, verbose=0))
    configs = [r.get_config() for r in find_scheduled_regularizers(model)]
    report[name] = {
        "layers": {layer.name: type(layer).__name__ for layer in model.layers},
        "modules": sorted({type(layer).__module__ for layer in model.layers}),
        "regularizers": sorted(json.dumps(c, sort_keys=True) for c in configs),
        "iterations": int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
    }
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def fresh(saved):
    """What the fresh interpreter reports (one start-up for three tests)."""
    directory, _ = saved
    saved_models = "1" if BACKEND == "tensorflow" else "0"
    stdout = run_in_fresh_python(FRESH, directory, saved_models, *MODELS)
    return json.loads(stdout.strip().splitlines()[-1])


def test_keras_file_loads_in_a_fresh_process(saved, fresh):
    directory, record = saved
    for name, original in record.items():
        loaded = fresh[name]
        assert loaded["layers"] == original["layers"]
        assert any(m.startswith("keras_nalu.layers") for m in loaded["modules"])
        assert loaded["regularizers"] == original["regularizers"]
        assert loaded["iterations"] == original["iterations"] == 12
        fresh_outputs = np.load(directory / f"{name}_keras_fresh.npy")
        np.testing.assert_array_equal(fresh_outputs, original["expected"])


@requires_tensorflow
def test_exported_saved_model_serves_without_keras_nalu(saved, fresh):
    directory, record = saved
    assert fresh["saved_model_modules"] == []  # keras_nalu never imported
    for name, original in record.items():
        for entry_point in ("serve", "signature"):
            served = np.load(directory / f"{name}_{entry_point}.npy")
            np.testing.assert_allclose(
                served, original["expected"], rtol=1e-6, atol=1e-7
            )


UNITS = {
    "NAU": lambda: NAU(3),
    "NMU": lambda: NMU(3),
    "NAC": lambda: NAC(3),
    "NACMul": lambda: NACMul(3, epsilon=1e-6),
    "NALU": lambda: NALU(3),
    "NALU_separate_gate_bias": lambda: NALU(
        3, separate_weights=True, use_gate_bias=True
    ),
}


@pytest.mark.parametrize("make_unit", list(UNITS.values()), ids=list(UNITS))
def test_keras_round_trip_of_each_unit(make_unit, tmp_path):
    keras.utils.set_random_seed(2)
    model = keras.Sequential([keras.Input((6, INPUT_DIM)), make_unit()])
    x = np.random.default_rng(3).uniform(0.5, 2.0, (5, 6, INPUT_DIM))
    x = x.astype("float32")
    expected = model.predict(x, verbose=0)
    path = tmp_path / "unit.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    (original_layer,) = model.layers
    (loaded_layer,) = loaded.layers
    assert type(loaded_layer) is type(original_layer)
    assert loaded_layer.get_config() == original_layer.get_config()
    for before, after in zip(original_layer.weights, loaded_layer.weights):
        assert before.name == after.name
        np.testing.assert_array_equal(to_numpy(before), to_numpy(after))
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), expected)


def test_a_keras_file_needs_the_import_that_registers_the_units(fresh):
    """As the README says: `import keras_nalu` registers; Keras has no other way."""
    assert fresh["without_import"] == "Could not locate class 'NAU'"
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "in a process that ran `import keras_nalu`, which registers every unit" in (
        readme
    )
    assert "Could not locate class 'NAU'" in readme
    assert '| JAX | `pip install ".[jax]"` |' in readme  # the extra of each backend
