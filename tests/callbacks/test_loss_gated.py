"""LossGatedRegularization: the loss gate of `Saturation`, wherever it is held."""

import keras
import numpy as np

from keras_nalu.callbacks import LossGatedRegularization
from keras_nalu.layers import NAU
from keras_nalu.regularizers import Saturation, Sparsity, Sum


def test_switches_a_saturation_inside_a_sum():
    gated = Saturation(0.1, threshold=2.0, loss_threshold=10.0)
    nau = NAU(1, kernel_regularizer=Sum([Sparsity(1.0), gated]))
    model = keras.Sequential([keras.Input((2,)), nau])
    model.compile(keras.optimizers.SGD(0.0), "mse", metrics=["mse"])
    x, y = np.ones((4, 2), "float32"), np.zeros((4, 1), "float32")
    history = model.fit(
        x,
        y,
        batch_size=4,
        epochs=2,
        callbacks=[LossGatedRegularization(monitor="mse")],
        verbose=0,
    )
    assert gated.enabled
    assert history.history["saturation_strength"] == [0.1, 0.1]
    # Epoch 2 trains with the gate's penalty on: frozen weights, higher loss.
    first, second = history.history["loss"]
    assert second > first
