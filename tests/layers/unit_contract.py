"""Checks every new unit shares: the layer contract and the two round trips."""

import json

import keras
import numpy as np

from tests.backend import to_numpy


def check_layer_contract(make_layer, input_dim, units, num_weights, num_losses):
    """Shapes (2-D and 3-D), weight and loss counts, config round trip."""
    layer = make_layer()
    x = np.random.default_rng(0).uniform(1.0, 2.0, (5, input_dim)).astype("float32")
    y = layer(x)
    assert tuple(y.shape) == (5, units)
    assert layer.compute_output_shape((5, input_dim)) == (5, units)
    assert len(layer.weights) == num_weights
    assert len(layer.losses) == num_losses
    sequence = np.stack([x, x[::-1]], axis=1)  # (B, T, I)
    y_sequence = layer(sequence)
    assert tuple(y_sequence.shape) == (5, 2, units)
    np.testing.assert_allclose(y_sequence[:, 0], y, rtol=1e-5)
    assert layer.compute_output_shape((5, 2, input_dim)) == (5, 2, units)
    config = layer.get_config()
    assert json.loads(json.dumps(config)) == config  # JSON-native values
    revived = keras.layers.deserialize(keras.layers.serialize(layer))
    assert type(revived) is type(layer)  # registered: no custom_objects needed
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    clone(x)
    assert [w.shape for w in clone.weights] == [w.shape for w in layer.weights]
    with np.testing.assert_raises(ValueError):
        layer(np.ones((5, input_dim + 1), "float32"))  # InputSpec
    return layer


def check_training_step(layer, input_dim, units, jit_compile=False):
    """One optimizer step changes the trainable weights and keeps them finite."""
    model = keras.Sequential([keras.Input((input_dim,)), layer])
    model.compile(keras.optimizers.Adam(0.01), "mse", jit_compile=jit_compile)
    rng = np.random.default_rng(1)
    x = rng.uniform(1.0, 2.0, (16, input_dim)).astype("float32")
    y = rng.uniform(1.0, 2.0, (16, units)).astype("float32")
    before = [to_numpy(w).copy() for w in model.trainable_weights]
    history = model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    after = [to_numpy(w) for w in model.trainable_weights]
    assert all(np.all(np.isfinite(w)) for w in after)
    assert any(not np.allclose(b, a) for b, a in zip(before, after))


def check_mixed_float16(make_layer, input_dim, units):
    """Under mixed_float16: float16 outputs, float32 weights, finite values."""
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        layer = make_layer()
        x = np.random.default_rng(2).uniform(1.0, 2.0, (4, input_dim))
        y = layer(x.astype("float32"))
    finally:
        keras.mixed_precision.set_global_policy(previous)
    assert keras.backend.standardize_dtype(y.dtype) == "float16"
    assert tuple(y.shape) == (4, units)
    assert all(w.dtype == "float32" for w in layer.weights)
    assert np.all(np.isfinite(y))


def check_keras_round_trip(model, x, tmp_path):
    """`.keras` save/load gives the same outputs and weights."""
    expected = model.predict(x, verbose=0)
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), expected, rtol=1e-6)
    for original, restored in zip(model.weights, loaded.weights):
        np.testing.assert_array_equal(to_numpy(original), to_numpy(restored))
    return loaded


def check_export_round_trip(model, x, tmp_path):
    """`model.export` SavedModel served by `tf.saved_model.load` matches."""
    import tensorflow as tf

    expected = model.predict(x, verbose=0)
    path = tmp_path / "saved_model"
    model.export(str(path), verbose=False)
    loaded = tf.saved_model.load(str(path))
    served = loaded.serve(tf.constant(x))
    np.testing.assert_allclose(served.numpy(), expected, rtol=1e-5)
