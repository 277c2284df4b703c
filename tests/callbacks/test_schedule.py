"""RegularizationSchedule: λ(t) from the optimizer step into the regularizers."""

import keras
import numpy as np
import pytest

from keras_nalu.callbacks import RegularizationSchedule
from keras_nalu.layers import NAU, NMU
from keras_nalu.regularizers import (
    OutOfBounds,
    Sparsity,
    find_scheduled_regularizers,
)
from keras_nalu.regularizers.schedules import Ramp
from tests.backend import BACKEND, to_numpy


def nau_nmu_model(nau_regularizer="sparsity", nmu_regularizer="sparsity"):
    return keras.Sequential(
        [
            keras.Input((4,)),
            NAU(2, kernel_regularizer=nau_regularizer),
            NMU(1, kernel_regularizer=nmu_regularizer),
        ]
    )


def sparsity_penalties(model):
    """Σ of the NAU's and NMU's sparsity penalties at strength 1, in NumPy."""
    nau, nmu = (
        np.abs(to_numpy(layer.kernel).astype("float64")) for layer in model.layers
    )
    return np.mean(np.minimum(nau, 1 - nau)) + np.mean(np.minimum(nmu, 1 - nmu))


STRENGTH, START, END = 2.0, 10, 50


def imposed(step):
    return Ramp(STRENGTH, START, END)(step)


# On PyTorch, Keras' trainer takes one step per execution, and torch.compile
# takes over a minute on 2 cores: the schedule through it is
# tests/test_backend_parity.py's "schedule_compiled" (same λ, same weights as
# TensorFlow's). Those cases are not collected there.
SCHEDULE_CASES = [
    pytest.param(jit_compile, steps_per_execution, id=f"{name}-{steps_per_execution}")
    for jit_compile, name in ((False, "graph"), (True, "xla"))
    for steps_per_execution in (1, 10)
    if BACKEND != "torch" or (not jit_compile and steps_per_execution == 1)
]


@pytest.mark.parametrize("jit_compile, steps_per_execution", SCHEDULE_CASES)
def test_training_loss_follows_the_schedule(jit_compile, steps_per_execution):
    # Frozen weights (learning rate 0) and one repeated sample: every step's
    # loss is MSE + λ(t)·R with the same MSE and R, so each epoch's mean loss
    # shows exactly which λ the compiled train step saw.
    keras.utils.set_random_seed(0)
    model = nau_nmu_model(Sparsity(domain="signed"), Sparsity(domain="unsigned"))
    model.compile(
        keras.optimizers.SGD(0.0),
        "mse",
        jit_compile=jit_compile,
        steps_per_execution=steps_per_execution,
    )
    x = np.tile(np.array([[1.5, 0.5, 2.0, -1.0]], "float32"), (10, 1))
    y = np.full((10, 1), 3.0, "float32")
    mse = float(np.mean((model.predict(x[:1], verbose=0) - 3.0) ** 2))
    penalty = sparsity_penalties(model)
    assert penalty > 0.05
    schedule = RegularizationSchedule(STRENGTH, START, END)
    history = model.fit(x, y, batch_size=1, epochs=4, callbacks=[schedule], verbose=0)
    assert int(to_numpy(model.optimizer.iterations)) == 40
    # The callback updates λ before each execution of `steps_per_execution`
    # steps; step t trains with λ at the start of its execution.
    in_force = [
        imposed(t - t % steps_per_execution) for t in range(40)
    ]  # λ for steps 0..39
    for epoch in range(4):
        expected = mse + penalty * np.mean(in_force[10 * epoch : 10 * epoch + 10])
        assert history.history["loss"][epoch] == pytest.approx(expected, rel=1e-5)
    assert history.history["loss"][3] > history.history["loss"][0] + 0.5 * penalty
    # History reports the strength of each epoch's last execution ...
    np.testing.assert_allclose(
        history.history["sparsity_strength"],
        [in_force[10 * epoch + 9] for epoch in range(4)],
        rtol=1e-6,
    )
    # ... and after fit every regularizer holds λ(optimizer.iterations).
    for regularizer in find_scheduled_regularizers(model):
        assert float(to_numpy(regularizer.current_strength)) == pytest.approx(
            imposed(40)
        )
    assert imposed(40) == pytest.approx(1.5)


def test_without_the_callback_the_scheduled_strength_stays_at_step_0():
    keras.utils.set_random_seed(0)
    model = nau_nmu_model(
        Sparsity(STRENGTH, START, END),
        Sparsity(STRENGTH, START, END, domain="unsigned"),
    )
    model.compile(keras.optimizers.SGD(0.0), "mse")
    x = np.ones((60, 4), "float32")
    history = model.fit(x, np.ones((60, 1)), batch_size=1, epochs=1, verbose=0)
    assert "sparsity_strength" not in history.history
    for regularizer in find_scheduled_regularizers(model):
        assert float(to_numpy(regularizer.current_strength)) == 0.0


def test_each_regularizer_follows_its_own_schedule_by_default():
    nau_reg = Sparsity(1.0, start=0, end=20)
    nmu_reg = Sparsity(8.0, start=10, end=30, domain="unsigned", mode="exp")
    model = nau_nmu_model(nau_reg, nmu_reg)
    model.compile(keras.optimizers.Adam(1e-3), "mse")
    x = np.random.default_rng(0).uniform(1, 2, (16, 4)).astype("float32")
    history = model.fit(
        x,
        x[:, :1],
        batch_size=1,
        epochs=1,
        callbacks=[RegularizationSchedule()],
        verbose=0,
    )
    assert float(to_numpy(nau_reg.current_strength)) == pytest.approx(16 / 20)
    assert float(to_numpy(nmu_reg.current_strength)) == pytest.approx(
        nmu_reg.strength_at(16)
    )
    # The log shows the larger of the two in force during the last step.
    logged = history.history["sparsity_strength"][0]
    assert logged == pytest.approx(max(15 / 20, nmu_reg.strength_at(15)))


def test_one_strength_imposed_on_every_regularizer():
    # The units' own defaults differ (NAU 0.01 from 5·10³, NMU 10 from 10⁶).
    model = nau_nmu_model()
    model.compile(keras.optimizers.Adam(1e-3), "mse")
    x = np.random.default_rng(0).uniform(1, 2, (8, 4)).astype("float32")
    found = find_scheduled_regularizers(model)
    assert len(found) == 2
    constant = RegularizationSchedule(3.0)
    model.fit(x, x[:, :1], epochs=1, batch_size=8, callbacks=[constant], verbose=0)
    assert [float(to_numpy(r.current_strength)) for r in found] == [3.0, 3.0]
    ramp = RegularizationSchedule(4.0, start=0, end=12, mode="linear")
    model.fit(x, x[:, :1], epochs=5, batch_size=8, callbacks=[ramp], verbose=0)
    assert [float(to_numpy(r.current_strength)) for r in found] == [2.0, 2.0]


class Holder(keras.Model):
    """A subclassed model keeping its unit as an attribute."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.nmu = NMU(1, kernel_regularizer=Sparsity(domain="unsigned"))

    def call(self, inputs):
        return self.nmu(inputs)


def test_finds_regularizers_in_nested_models():
    inner = keras.Sequential([keras.Input((4,)), NAU(3)], name="inner")
    inputs = keras.Input((4,))
    hidden = inner(inputs)
    outputs = Holder()(hidden) + NAU(1, kernel_regularizer=OutOfBounds())(hidden)
    model = keras.Model(inputs, outputs)
    found = find_scheduled_regularizers(model)
    assert sorted(type(r).__name__ for r in found) == [
        "OutOfBounds",
        "Sparsity",
        "Sparsity",
    ]
    model.compile(keras.optimizers.Adam(1e-3), "mse")
    x = np.random.default_rng(0).uniform(1, 2, (8, 4)).astype("float32")
    history = model.fit(
        x,
        x[:, :1],
        batch_size=4,
        epochs=2,
        verbose=0,
        callbacks=[RegularizationSchedule(5.0, start=0, end=8)],
    )
    assert [float(to_numpy(r.current_strength)) for r in found] == [2.5] * 3
    # Two steps per epoch: the last ones start at steps 1 and 3.
    assert history.history["sparsity_strength"] == [0.625, 1.875]
    assert history.history["out_of_bounds_strength"] == [0.625, 1.875]


def test_finds_regularizers_in_a_reloaded_keras_model(tmp_path):
    model = nau_nmu_model(
        Sparsity(1.0, start=0, end=100), Sparsity(2.0, 0, 100, domain="unsigned")
    )
    model.compile(keras.optimizers.Adam(1e-3), "mse")
    x = np.random.default_rng(0).uniform(1, 2, (10, 4)).astype("float32")
    model.fit(x, x[:, :1], batch_size=1, epochs=3, verbose=0)  # no callback
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    found = find_scheduled_regularizers(loaded)
    assert sorted(r.strength for r in found) == [1.0, 2.0]
    assert all(r not in find_scheduled_regularizers(model) for r in found)
    assert int(to_numpy(loaded.optimizer.iterations)) == 30
    history = loaded.fit(
        x,
        x[:, :1],
        batch_size=1,
        epochs=2,
        verbose=0,
        callbacks=[RegularizationSchedule()],
    )
    # The schedule resumes from the restored step counter, not from 0.
    assert history.history["sparsity_strength"] == pytest.approx([2 * 39 / 100, 0.98])
    by_strength = {r.strength: r for r in found}
    assert float(to_numpy(by_strength[1.0].current_strength)) == pytest.approx(0.5)
    assert float(to_numpy(by_strength[2.0].current_strength)) == pytest.approx(1.0)


def test_warns_when_there_is_nothing_to_schedule():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    with pytest.warns(UserWarning, match="found no scheduled regularizer") as caught:
        model.fit(
            np.ones((2, 2)),
            np.ones((2, 1)),
            verbose=0,
            callbacks=[RegularizationSchedule(1.0)],
        )
    # It names every penalty it would schedule.
    (message,) = [str(w.message) for w in caught if "scheduled" in str(w.message)]
    assert message == (
        "RegularizationSchedule found no scheduled regularizer in the model (a "
        "keras_nalu.regularizers.ScheduledPenalty: L1, NegativeL2, OutOfBounds, "
        "Saturation, Sparsity, UnitMagnitude or ZRegularizer); it does nothing."
    )


def test_get_config():
    config = RegularizationSchedule(0.5, 10, 20, "exp").get_config()
    assert config == {"strength": 0.5, "start": 10, "end": 20, "mode": "exp"}
    assert RegularizationSchedule(**config).get_config() == config


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"strength": -1.0}, r"strength.*Received: strength=-1.0"),
        ({"strength": float("nan")}, r"strength.*Received: strength=nan"),
        ({"start": 0, "end": 10}, r"only with strength.*start=0, end=10"),
        ({"strength": 1.0, "start": 10, "end": 10}, r"start < end.*start=10, end=10"),
        ({"strength": 1.0, "start": 20, "end": 10}, r"start < end.*start=20, end=10"),
        ({"strength": 1.0, "start": 5}, r"both start and end.*start=5, end=None"),
        ({"strength": 1.0, "mode": "step"}, r"mode.*Received: mode='step'"),
    ],
)
def test_invalid_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RegularizationSchedule(**kwargs)


def test_warns_on_jax_about_a_regularizer_outside_the_units(recwarn):
    # A Dense layer does not list its regularizer's strength among its
    # variables: Keras' JAX trainer compiles it as a constant.
    model = keras.Sequential(
        [
            keras.Input((2,)),
            keras.layers.Dense(1, kernel_regularizer=Sparsity(1.0, start=0, end=4)),
        ]
    )
    model.compile("sgd", "mse")
    x = np.ones((4, 2), "float32")
    model.fit(x, x[:, :1], verbose=0, callbacks=[RegularizationSchedule()])
    warned = [w for w in recwarn if "cannot change 1 scheduled" in str(w.message)]
    assert len(warned) == (1 if BACKEND == "jax" else 0)
