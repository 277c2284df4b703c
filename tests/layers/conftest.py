"""Fixtures for the unit tests in tests/layers: the layer contract, the policy.

`layer_contract(cls, kwargs, ...)` returns a `LayerContract`, whose `check_*`
methods are the checks every arithmetic unit passes (the house style): shapes,
weights and losses, a training step, the config round trip, the three model
styles, XLA, float64 and mixed precision. Each unit's test file calls them
with its own variants and its own NumPy reference of the forward pass.
"""

import json

import keras
import numpy as np
import pytest

from tests.backend import to_numpy

INPUT_DIM = 3
UNITS = 2


class Wrapper(keras.Model):
    """A subclassed model holding one unit."""

    def __init__(self, unit, **kwargs):
        super().__init__(**kwargs)
        self.unit = unit

    def call(self, inputs):
        return self.unit(inputs)


class LayerContract:
    """The checks of one unit variant.

    Args:
        layer_cls: the unit's class.
        kwargs: constructor arguments besides `units`.
        reference: `reference(layer, x)`, the unit's forward pass in NumPy
            float64 from the layer's current weights.
        num_trainable_weights: expected `len(layer.trainable_weights)`.
        num_losses: expected `len(layer.losses)` once built.
        low, high: the range of the test inputs.
    """

    def __init__(
        self,
        layer_cls,
        kwargs,
        reference,
        num_trainable_weights,
        num_losses,
        low=1.0,
        high=2.0,
    ):
        self.layer_cls = layer_cls
        self.kwargs = dict(kwargs)
        self.reference = reference
        self.num_trainable_weights = num_trainable_weights
        self.num_losses = num_losses
        self.low, self.high = low, high

    def make(self, **overrides):
        return self.layer_cls(UNITS, **{**self.kwargs, **overrides})

    def inputs(self, *shape, dtype="float32", seed=0):
        shape = shape or (5, INPUT_DIM)
        rng = np.random.default_rng(seed)
        return rng.uniform(self.low, self.high, shape).astype(dtype)

    def targets(self, batch, seed=1):
        rng = np.random.default_rng(seed)
        return rng.uniform(self.low, self.high, (batch, UNITS)).astype("float32")

    def check_output_shapes(self):
        layer = self.make()
        x = self.inputs(5, INPUT_DIM)
        y = layer(x)
        assert tuple(y.shape) == (5, UNITS)
        np.testing.assert_allclose(y, self.reference(layer, x), rtol=1e-5, atol=1e-6)
        # Extra leading axes (batch, time, features): the unit acts on the last.
        sequence = self.inputs(4, 6, INPUT_DIM, seed=2)
        y_sequence = layer(sequence)
        assert tuple(y_sequence.shape) == (4, 6, UNITS)
        np.testing.assert_allclose(
            y_sequence, self.reference(layer, sequence), rtol=1e-5, atol=1e-6
        )
        np.testing.assert_allclose(
            y_sequence[:, 2], layer(sequence[:, 2]), rtol=1e-6, atol=1e-7
        )
        assert layer.compute_output_shape((None, INPUT_DIM)) == (None, UNITS)
        assert layer.compute_output_shape((4, None, INPUT_DIM)) == (4, None, UNITS)
        symbolic = layer(keras.Input((6, INPUT_DIM)))
        assert tuple(symbolic.shape) == (None, 6, UNITS)

    def check_weights_and_losses(self):
        layer = self.make()
        layer.build((None, INPUT_DIM))
        assert len(layer.trainable_weights) == self.num_trainable_weights
        assert layer.non_trainable_weights == []
        assert len(layer.losses) == self.num_losses
        names = [w.name for w in layer.weights]
        assert len(set(names)) == len(names), names
        for weight in layer.trainable_weights:
            assert weight.shape[0] == INPUT_DIM or weight.shape == (UNITS,)
        # The count holds after a call too (no weights created in `call`).
        layer(self.inputs())
        assert len(layer.trainable_weights) == self.num_trainable_weights
        assert len(layer.losses) == self.num_losses

    def check_training_step(self, **compile_kwargs):
        model = keras.Sequential([keras.Input((INPUT_DIM,)), self.make()])
        model.compile(keras.optimizers.Adam(0.01), "mse", **compile_kwargs)
        x, y = self.inputs(8, INPUT_DIM), self.targets(8)
        before = [to_numpy(w).copy() for w in model.trainable_weights]
        history = model.fit(x, y, batch_size=8, epochs=1, verbose=0)
        assert np.isfinite(history.history["loss"][0])
        assert int(to_numpy(model.optimizer.iterations)) == 1
        after = [to_numpy(w) for w in model.trainable_weights]
        assert all(np.all(np.isfinite(w)) for w in after)
        assert any(not np.array_equal(b, a) for b, a in zip(before, after))
        return model

    def check_config_round_trip(self):
        layer = self.make(name="unit_under_test")
        x = self.inputs()
        y = layer(x)
        config = layer.get_config()
        assert json.loads(json.dumps(config)) == config  # JSON-native values
        assert config["units"] == UNITS
        for key, value in self.kwargs.items():
            if isinstance(value, bool | int | float):
                assert config[key] == value, key
        clone = self.layer_cls.from_config(config)
        assert clone.get_config() == config
        clone.build((None, INPUT_DIM))
        clone.set_weights(layer.get_weights())
        np.testing.assert_array_equal(clone(x), y)
        # The registered name resolves without custom_objects.
        revived = keras.layers.deserialize(keras.layers.serialize(layer))
        assert type(revived) is self.layer_cls
        assert revived.get_config() == config

    def check_in_model(self, style):
        layer = self.make()
        if style == "sequential":
            model = keras.Sequential([keras.Input((INPUT_DIM,)), layer])
        elif style == "functional":
            inputs = keras.Input((INPUT_DIM,))
            model = keras.Model(inputs, layer(inputs))
        else:
            model = Wrapper(layer)
        x = self.inputs(8, INPUT_DIM)
        np.testing.assert_allclose(
            model(x), self.reference(layer, x), rtol=1e-5, atol=1e-6
        )
        assert len(model.trainable_weights) == self.num_trainable_weights
        model.compile(keras.optimizers.Adam(0.01), "mse")
        loss = model.train_on_batch(x, self.targets(8))
        assert np.isfinite(loss)
        assert int(to_numpy(model.optimizer.iterations)) == 1

    def check_jit_compile(self):
        model = self.check_training_step(jit_compile=True)
        assert model.jit_compile
        (layer,) = model.layers
        x = self.inputs(8, INPUT_DIM, seed=3)
        np.testing.assert_allclose(
            model.predict(x, verbose=0), self.reference(layer, x), rtol=1e-5, atol=1e-6
        )

    def check_float64(self):
        layer = self.make(dtype="float64")
        x = self.inputs(dtype="float64")
        y = layer(x)
        assert keras.backend.standardize_dtype(y.dtype) == "float64"
        assert all(w.dtype == "float64" for w in layer.weights)
        # float64 all the way: agrees with NumPy far below float32's precision.
        np.testing.assert_allclose(y, self.reference(layer, x), rtol=1e-12, atol=0)

    def check_mixed_float16(self):
        assert keras.mixed_precision.global_policy().name == "mixed_float16"
        layer = self.make()
        x = self.inputs()
        y = layer(x)
        assert keras.backend.standardize_dtype(y.dtype) == "float16"
        assert all(w.dtype == "float32" for w in layer.weights)
        assert np.all(np.isfinite(y))
        # The layer sees float16 inputs; the rest is float32 up to the output.
        expected = self.reference(layer, x.astype("float16").astype("float64"))
        np.testing.assert_allclose(
            np.asarray(y, "float64"), expected, rtol=2e-3, atol=2e-3
        )
        self.check_training_step()


@pytest.fixture
def layer_contract():
    """`layer_contract(cls, kwargs, reference, ...)` -> a `LayerContract`."""
    return LayerContract


@pytest.fixture
def mixed_float16():
    """Runs the test under the "mixed_float16" global policy, then restores it."""
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)
    assert keras.mixed_precision.global_policy().name == previous.name


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


@pytest.fixture
def numpy_units():
    """NumPy float64 forward passes of the units, from a layer's weights."""
    return NumpyUnits


class NumpyUnits:
    """The units' formulas (Madsen & Johansen 2020; Trask et al. 2018) in NumPy
    float64."""

    @staticmethod
    def weights(layer, name):
        return np.asarray(to_numpy(getattr(layer, name)), "float64")

    @staticmethod
    def nac_weight(layer, prefix=""):
        w_hat = NumpyUnits.weights(layer, f"{prefix}w_hat")
        m_hat = NumpyUnits.weights(layer, f"{prefix}m_hat")
        return np.tanh(w_hat) * sigmoid(m_hat)

    @staticmethod
    def nau(layer, x):
        kernel = np.clip(NumpyUnits.weights(layer, "kernel"), -1.0, 1.0)
        return np.asarray(x, "float64") @ kernel

    @staticmethod
    def nmu(layer, x):
        kernel = np.clip(NumpyUnits.weights(layer, "kernel"), 0.0, 1.0)
        x = np.asarray(x, "float64")[..., :, None]
        return np.prod(kernel * x + 1.0 - kernel, axis=-2)

    @staticmethod
    def nac(layer, x):
        return np.asarray(x, "float64") @ NumpyUnits.nac_weight(layer)

    @staticmethod
    def log_space_product(x, kernel, epsilon):
        return np.exp(np.log(np.abs(np.asarray(x, "float64")) + epsilon) @ kernel)

    @staticmethod
    def nac_mul(layer, x):
        kernel = NumpyUnits.nac_weight(layer)
        return NumpyUnits.log_space_product(x, kernel, layer.epsilon)

    @staticmethod
    def nalu(layer, x):
        x = np.asarray(x, "float64")
        logits = x @ NumpyUnits.weights(layer, "gate")
        if layer.use_gate_bias:
            logits = logits + NumpyUnits.weights(layer, "gate_bias")
        gate = sigmoid(logits)
        additive = x @ NumpyUnits.nac_weight(layer)
        prefix = "mul_" if layer.separate_weights else ""
        mul_kernel = NumpyUnits.nac_weight(layer, prefix)
        multiplicative = NumpyUnits.log_space_product(x, mul_kernel, layer.epsilon)
        return gate * additive + (1.0 - gate) * multiplicative
