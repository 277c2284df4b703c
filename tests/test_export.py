"""export_saved_model: a SavedModel TF Serving loads, written on TF or JAX."""

import json

import keras
import numpy as np
import pytest

from keras_nalu._optional import installed
from keras_nalu.export import MANIFEST, export_saved_model
from keras_nalu.layers import NAU, NMU
from tests.backend import BACKEND
from tests.serving import serve_in_fresh_process


@pytest.mark.skipif(not installed("tensorflow"), reason="needs TensorFlow")
@pytest.mark.skipif(
    BACKEND not in ("tensorflow", "jax"), reason=f"not tested on {BACKEND}"
)
def test_exported_model_serves_with_tensorflow_alone(tmp_path):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), NAU(2), NMU(1)])
    x = np.random.default_rng(0).uniform(-2.0, 2.0, (6, 3)).astype("float32")
    path = export_saved_model(model, tmp_path, "nau_nmu", manifest={"task": "mul"})
    assert path == tmp_path / "nau_nmu" / "1"
    served = serve_in_fresh_process(path, x, tmp_path)
    np.testing.assert_allclose(served, model.predict(x, verbose=0), rtol=1e-6)
    manifest = json.loads((tmp_path / "nau_nmu" / MANIFEST).read_text())
    assert manifest["latest"] == 1
    assert manifest["versions"]["1"]["task"] == "mul"
    assert manifest["versions"]["1"]["input_shape"] == [None, 3]
