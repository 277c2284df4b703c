"""export_saved_model: a SavedModel TF Serving loads, written on TF or JAX;
export_onnx: an ONNX file ONNX Runtime serves, written on every backend."""

import json

import keras
import numpy as np
import pytest

from keras_nalu._optional import installed
from keras_nalu.export import MANIFEST, export_onnx, export_run, export_saved_model
from keras_nalu.layers import DMU, NAU, NMU, NPU, NSR, iNALU
from tests.backend import BACKEND
from tests.helpers import run_in_fresh_python

# Exports a NAU -> NMU model of input width 10 to argv[1] on this process's
# backend (KERAS_BACKEND).
_EXPORT = r"""
import sys
import keras
from keras_nalu.export import export_saved_model
from keras_nalu.layers import NAU, NMU
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((10,)), NAU(2), NMU(1)])
print(export_saved_model(model, sys.argv[1], "nau_nmu"))
"""

# Calls the signature of each SavedModel in argv[2:] with TensorFlow alone
# (keras_nalu never imported): the batch saved in argv[1] (its outputs saved
# next to it, one file per SavedModel), an empty batch, and a batch of width 7
# instead of 10.
_SERVE = r"""
import json, sys
import numpy as np
import tensorflow as tf
x, answers = np.load(sys.argv[1]), []
for index, path in enumerate(sys.argv[2:]):
    served = tf.saved_model.load(path).signatures["serving_default"]
    (value,) = served(tf.constant(x)).values()
    np.save(f"{sys.argv[1]}.{index}.npy", value.numpy())
    (empty,) = served(tf.constant(np.ones((0, 10), np.float32))).values()
    try:
        served(tf.constant(np.ones((2, 7), np.float32)))
        error = None
    except tf.errors.InvalidArgumentError as failure:
        error = failure.message
    answers.append({"empty": empty.shape.as_list(), "error": error})
assert not any(name.startswith("keras_nalu") for name in sys.modules)
print(json.dumps(answers))
"""


@pytest.mark.skipif(not installed("tensorflow"), reason="needs TensorFlow")
@pytest.mark.skipif(
    BACKEND not in ("tensorflow", "jax"), reason=f"not tested on {BACKEND}"
)
def test_exported_model_serves_with_tensorflow_alone(tmp_path):
    """One TensorFlow-only process serves the export of this backend, and in
    the TensorFlow pass also one of the JAX backend (written in a fresh
    process; in the JAX pass it is this one): the outputs, the same width
    check and message, the empty batch served."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((10,)), NAU(2), NMU(1)])
    x = np.random.default_rng(0).uniform(-2.0, 2.0, (6, 10)).astype("float32")
    path = export_saved_model(model, tmp_path, "nau_nmu", manifest={"task": "mul"})
    assert path == tmp_path / "nau_nmu" / "1"
    paths = [path]
    if BACKEND == "tensorflow":
        jax = run_in_fresh_python(
            _EXPORT, tmp_path / "jax", env={"KERAS_BACKEND": "jax"}
        )
        paths.append(jax.strip().splitlines()[-1])
    np.save(tmp_path / "x.npy", x)
    answers = json.loads(
        run_in_fresh_python(_SERVE, tmp_path / "x.npy", *paths).strip().splitlines()[-1]
    )
    served = np.load(tmp_path / "x.npy.0.npy")
    np.testing.assert_allclose(served, model.predict(x, verbose=0), rtol=1e-6)
    manifest = json.loads((tmp_path / "nau_nmu" / MANIFEST).read_text())
    assert manifest["latest"] == 1
    assert manifest["versions"]["1"]["task"] == "mul"
    assert manifest["versions"]["1"]["input_shape"] == [None, 10]
    assert len(answers) == len(paths)
    for answer in answers:
        assert answer["empty"] == [0, 1]
        assert (
            "assertion failed: [serving_default expects inputs of shape (batch, 10): "
            "10 float32 numbers per example. Send 10 numbers per example.]"
        ) in answer["error"]
        # TensorFlow's few lines around it, not a dump of the converted module
        assert len(answer["error"]) < 1000 and "refinement" not in answer["error"]


@pytest.mark.skipif(
    BACKEND != "torch", reason="Keras writes SavedModels on TensorFlow and JAX"
)
def test_saved_model_export_on_pytorch_says_to_export_onnx(tmp_path):
    model = keras.Sequential([keras.Input((3,)), NAU(1)])
    with pytest.raises(ValueError, match=r"Export to ONNX instead"):
        export_saved_model(model, tmp_path, "nau")
    assert not (tmp_path / "nau").exists()


def test_an_unsolved_run_is_not_exported_over_the_served_version(tmp_path):
    (tmp_path / "adder" / "1").mkdir(parents=True)  # what TF Serving serves
    model = keras.Sequential([keras.Input((2,)), NAU(1)])
    record = {"success": False, "task": {}, "config": {}}
    export_format = "onnx" if BACKEND == "torch" else "saved_model"
    assert export_run(model, record, tmp_path, "adder", export_format) is None
    assert record["not_exported"].endswith(
        "serves version 1; pass --overwrite to export it as version 2, the new "
        "latest, anyway"
    )
    assert export_format not in record
    assert [path.name for path in (tmp_path / "adder").iterdir()] == ["1"]


def test_onnx_export_serves_the_same_outputs(tmp_path):
    import onnxruntime

    keras.utils.set_random_seed(0)
    inputs = keras.Input((3,))
    hidden = NAU(2)(inputs)
    outputs = [NMU(1)(hidden), iNALU(1)(hidden), NPU(1)(inputs)]
    # The DMU's one-hot gate at inference and the NSR's soft selections too:
    # one export covers every unit with a path of its own.
    outputs += [DMU(2, initialization="sub")(inputs), NSR(2, redundancy=2)(inputs)]
    model = keras.Model(inputs, keras.layers.Concatenate()(outputs))
    x = np.random.default_rng(0).uniform(-2.0, 2.0, (6, 3)).astype("float32")
    path = export_onnx(model, tmp_path, "units", manifest={"task": "mul"})
    assert path == tmp_path / "units" / "1" / "model.onnx"
    session = onnxruntime.InferenceSession(str(path))
    (served,) = session.run(None, {session.get_inputs()[0].name: x})
    expected = model.predict(x, verbose=0)
    np.testing.assert_allclose(served, expected, rtol=1e-5, atol=1e-6)
    # The batch size is free; the width is part of the graph.
    (one,) = session.run(None, {session.get_inputs()[0].name: x[:1]})
    np.testing.assert_allclose(one, served[:1], rtol=1e-6, atol=1e-7)
    with pytest.raises(Exception, match="dimensions"):
        session.run(None, {session.get_inputs()[0].name: np.ones((2, 4), "float32")})
    entry = json.loads((tmp_path / "units" / MANIFEST).read_text())["versions"]["1"]
    assert entry["format"] == "onnx"
    assert entry["path"] == "units/1/model.onnx"
    assert entry["input_shape"] == [None, 3]
    assert entry["task"] == "mul"


def test_a_model_folder_holds_the_versions_of_one_format(tmp_path):
    """TF Serving serves a folder's highest version: an ONNX version there
    would be one without a saved_model.pb, so another format is refused."""
    model = keras.Sequential([keras.Input((2,)), NAU(1)])
    if BACKEND == "torch":  # no SavedModel on PyTorch: the folder of another run
        (tmp_path / "adder" / "1").mkdir(parents=True)
        (tmp_path / "adder" / "1" / "saved_model.pb").write_bytes(b"")
    else:
        export_saved_model(model, tmp_path, "adder")
    before = sorted(path.name for path in (tmp_path / "adder").iterdir())
    with pytest.raises(
        ValueError,
        match=r"adder holds SavedModel versions \(1\); a model folder holds one "
        r"format.*export the ONNX model under another name\. "
        r"Received: name='adder'$",
    ):
        export_onnx(model, tmp_path, "adder")
    assert sorted(path.name for path in (tmp_path / "adder").iterdir()) == before
    assert export_onnx(model, tmp_path, "adder-onnx").parent.name == "1"
    if BACKEND != "torch":
        with pytest.raises(ValueError, match=r"adder-onnx holds ONNX versions \(1\)"):
            export_saved_model(model, tmp_path, "adder-onnx")
        assert not (tmp_path / "adder-onnx" / "2").exists()
