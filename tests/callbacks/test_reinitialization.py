"""The Reinitialization callback (a NALU course report, §5.1): stall test, re-draw,
slot reset."""

import keras
import numpy as np
import pytest

from keras_nalu.callbacks import (
    Reinitialization,
    loss_stalled,
    optimizer_slots,
    reset_optimizer_slots,
)
from keras_nalu.initializers import NAUUniform
from keras_nalu.layers import NAU, NMU, iNALU
from tests.backend import to_numpy

STALLED = [5.0, 5.2, 4.9, 5.1, 5.0, 4.8, 5.1, 5.0, 4.9, 5.0]
FALLING = [100.0, 80.0, 60.0, 45.0, 35.0, 25.0, 18.0, 12.0, 8.0, 5.0]


@pytest.mark.parametrize(
    "losses, expected",
    [
        (STALLED, True),
        (FALLING, False),
        ([0.5] * 10, False),  # stalled, but below the threshold
        ([5.0] * 5 + [np.nan] * 5, True),  # diverged counts as stalled
        ([5.0], False),
    ],
)
def test_loss_stalled(losses, expected):
    assert loss_stalled(losses, loss_threshold=1.0) is expected


def _trained_model(optimizer="adam", steps=3, layers=None):
    layers = layers or [NAU(2, name="hidden"), NMU(1, name="output")]
    model = keras.Sequential([keras.Input((4,)), *layers])
    model.compile(optimizer, "mse", jit_compile=False)
    x = np.random.default_rng(20).uniform(1.0, 2.0, (8 * steps, 4)).astype("float32")
    model.fit(x, x[:, :1] * x[:, 1:2], batch_size=8, epochs=1, verbose=0)
    return model


def _slots(model):
    return [
        to_numpy(slot).copy()
        for variable in model.trainable_weights
        for slot in optimizer_slots(model.optimizer, variable)
    ]


def _drive(callback, model, losses, monitor="loss"):
    callback.set_model(model)
    callback.on_train_begin()
    logs = {}
    for epoch, loss in enumerate(losses):
        logs = {monitor: loss}
        callback.on_epoch_end(epoch, logs)
    return logs


def test_fires_on_a_stalled_loss_redraws_weights_and_zeroes_adam_slots():
    model = _trained_model()
    before = [to_numpy(w).copy() for w in model.trainable_weights]
    slots = _slots(model)
    assert len(slots) == 2 * len(before) and all(np.any(s != 0) for s in slots)
    callback = Reinitialization(every=10, seed=0)
    logs = _drive(callback, model, STALLED)
    assert callback.reinitializations == 1 and logs["reinitializations"] == 1
    assert callback.history == []
    after = [to_numpy(w) for w in model.trainable_weights]
    assert all(not np.allclose(b, a) for b, a in zip(before, after))
    nau, nmu = model.layers
    assert np.abs(to_numpy(nau.kernel)).max() <= 0.5  # NAU's own initializer
    assert 0.25 <= to_numpy(nmu.kernel).min() and to_numpy(nmu.kernel).max() <= 0.75
    assert all(np.all(s == 0) for s in _slots(model))


def test_does_not_fire_on_a_falling_loss_or_between_checks():
    model = _trained_model()
    before = [to_numpy(w).copy() for w in model.trainable_weights]
    slots = _slots(model)
    callback = Reinitialization(every=10)
    _drive(callback, model, FALLING)
    _drive(callback, model, STALLED[:9])  # stalled, but not yet at a check
    assert callback.reinitializations == 0
    for b, a in zip(before, model.trainable_weights):
        np.testing.assert_array_equal(b, to_numpy(a))
    for s, t in zip(slots, _slots(model)):
        np.testing.assert_array_equal(s, t)


def test_seeded_initializers_still_draw_new_weights():
    layer = NAU(3, kernel_initializer=NAUUniform(seed=5), name="hidden")
    model = _trained_model(layers=[layer])
    first = to_numpy(layer.kernel).copy()
    callback = Reinitialization(every=2)
    callback.set_model(model)
    callback.reinitialize()
    second = to_numpy(layer.kernel).copy()
    callback.reinitialize()
    assert not np.allclose(first, second)
    assert not np.allclose(second, to_numpy(layer.kernel))


@pytest.mark.parametrize(
    "optimizer, per_variable",
    [
        (keras.optimizers.SGD(0.01, momentum=0.9), 1),
        (keras.optimizers.RMSprop(0.01, momentum=0.5, centered=True), 3),
        (keras.optimizers.Adam(0.01, amsgrad=True), 3),
    ],
)
def test_resets_the_slots_of_other_optimizers(optimizer, per_variable):
    model = _trained_model(optimizer)
    slots = _slots(model)
    assert len(slots) == per_variable * len(model.trainable_weights)
    assert any(np.any(s != 0) for s in slots)
    reset_optimizer_slots(model.optimizer, model.trainable_weights)
    assert all(np.all(s == 0) for s in _slots(model))


def test_unsupported_optimizer_is_named():
    model = _trained_model(keras.optimizers.Adagrad())
    with pytest.raises(ValueError, match="Adagrad"):
        reset_optimizer_slots(model.optimizer, model.trainable_weights)


def test_layers_and_initializer_arguments():
    model = _trained_model()
    nau, nmu = model.layers
    nmu_before = to_numpy(nmu.kernel).copy()
    callback = Reinitialization(
        layers=["hidden"], initializer=keras.initializers.Constant(0.25)
    )
    callback.set_model(model)
    callback.reinitialize()
    np.testing.assert_array_equal(to_numpy(nau.kernel), 0.25)
    np.testing.assert_array_equal(to_numpy(nmu.kernel), nmu_before)
    bad = Reinitialization(layers=["missing"])
    bad.set_model(model)
    with pytest.raises(ValueError, match="missing"):
        bad.on_train_begin()


def test_keras_dense_layers_use_their_initializer_attributes():
    dense = keras.layers.Dense(
        2, kernel_initializer="ones", bias_initializer="zeros", name="dense"
    )
    model = _trained_model(layers=[dense])
    callback = Reinitialization()
    callback.set_model(model)
    callback.reinitialize()
    np.testing.assert_array_equal(to_numpy(dense.kernel), 1.0)
    np.testing.assert_array_equal(to_numpy(dense.bias), 0.0)


def test_switches_loss_gated_regularizers_off():
    model = _trained_model(layers=[iNALU(1, name="inalu")])
    regularizer = model.layers[0].kernel_regularizer
    regularizer.set_enabled(True)
    callback = Reinitialization()
    callback.set_model(model)
    callback.reinitialize()
    assert not regularizer.enabled
    assert float(to_numpy(regularizer.current_strength)) == 0.0


def test_fires_inside_fit_and_the_traced_step_sees_the_new_weights():
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((4,)), NAU(1, kernel_regularizer=None)])
    # No learning: the loss stalls far above 1.
    model.compile(keras.optimizers.Adam(0.0), "mse", jit_compile=False)
    x = np.ones((16, 4), "float32")
    y = np.full((16, 1), 100.0, "float32")
    callback = Reinitialization(every=2, seed=3)
    before = model.predict(x[:1], verbose=0)
    history = model.fit(x, y, batch_size=8, epochs=2, callbacks=[callback], verbose=0)
    assert history.history["reinitializations"] == [0, 1]
    assert not np.allclose(model.predict(x[:1], verbose=0), before)


def test_constructor_validation_names_the_argument():
    with pytest.raises(ValueError, match="every=0"):
        Reinitialization(every=0)
    with pytest.raises(ValueError, match="loss_threshold="):
        Reinitialization(loss_threshold=-1.0)
    config = Reinitialization(every=5, monitor="mse", seed=2).get_config()
    assert Reinitialization(**config).get_config() == config


def test_several_workers_need_a_seed(monkeypatch):
    from keras_nalu.callbacks import reinitialization

    model = _trained_model()
    assert reinitialization._worker_count(model) == 1  # no strategy: one worker
    monkeypatch.setattr(reinitialization, "_worker_count", lambda model: 2)
    unseeded = Reinitialization(every=10)
    unseeded.set_model(model)
    with pytest.raises(ValueError, match="needs an integer seed .* 2 workers"):
        unseeded.on_train_begin()
    seeded = Reinitialization(every=10, seed=3)
    seeded.set_model(model)
    seeded.on_train_begin()  # every worker draws the same weights
