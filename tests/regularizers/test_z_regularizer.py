"""R_z is a penalty on a unit's input and kernel, not a Keras weight regularizer."""

import keras
import numpy as np
import pytest

from keras_nalu import layers, regularizers
from keras_nalu.callbacks import RegularizationSchedule
from keras_nalu.regularizers import ZRegularizer
from tests.backend import to_numpy


def test_it_is_not_a_keras_regularizer():
    assert not isinstance(ZRegularizer(), keras.regularizers.Regularizer)
    assert isinstance(ZRegularizer(), regularizers.ScheduledPenalty)


def test_as_a_kernel_regularizer_it_says_what_it_is():
    # Keras takes any callable as a regularizer and calls it with the weight
    # alone when it collects the losses (before: "missing 1 required
    # positional argument: 'kernel'").
    layer = keras.layers.Dense(2, kernel_regularizer=ZRegularizer())
    layer(np.ones((1, 3), "float32"))
    with pytest.raises(TypeError, match="ZRegularizer is not a weight regularizer"):
        layer.losses  # noqa: B018 - the property computes the penalties


@pytest.mark.parametrize(
    "build",
    [
        lambda: layers.NMU(2, kernel_regularizer=ZRegularizer()),
        lambda: regularizers.Sum([regularizers.L1(), ZRegularizer()]),
        lambda: regularizers.get(ZRegularizer()),
    ],
    ids=["unit", "sum", "get"],
)
def test_a_unit_or_a_sum_refuses_it_at_once(build):
    with pytest.raises(ValueError, match="ZRegularizer is not a weight regularizer"):
        build()


def test_it_reads_the_input_and_the_kernel():
    reg = ZRegularizer(2.0, identity="multiplicative")
    x = np.array([[3.0], [1.0]], "float32")  # x̄ = 2: (1 - x̄)² = 1
    kernel = np.array([[0.5, 1.0]], "float32")
    assert float(to_numpy(reg(x, kernel))) == pytest.approx(2.0 * 0.25)


def test_it_serializes_under_its_registered_name():
    reg = ZRegularizer(0.5, identity="additive", start=3, end=9)
    config = keras.saving.serialize_keras_object(reg)
    assert config["registered_name"] == "keras_nalu>ZRegularizer"
    revived = keras.saving.deserialize_keras_object(config)
    assert type(revived) is ZRegularizer
    assert revived.get_config() == reg.get_config()


# Under JAX the callback warns that a layer other than a unit holds it: the
# compiled step would read the strength it was traced with. The variable is
# assigned all the same.
@pytest.mark.filterwarnings("ignore:RegularizationSchedule cannot change")
def test_the_schedule_ramps_it_on_the_layer_that_calls_it():
    class Penalized(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.unit = layers.NAU(1, kernel_regularizer=None)
            self.z = ZRegularizer(1.0, identity="additive", start=0, end=4)

        def call(self, x):
            y = self.unit(x)
            self.add_loss(self.z(x, self.unit.kernel))
            return y

    model = keras.Sequential([keras.Input((2,)), Penalized()])
    model.compile("sgd", "mse")
    model.fit(
        np.ones((8, 2)),
        np.ones((8, 1)),
        batch_size=4,
        epochs=1,
        verbose=0,
        callbacks=[RegularizationSchedule()],
    )
    z = model.layers[0].z
    assert float(to_numpy(z.current_strength)) == z.strength_at(2) == 0.5
