"""A small Dense model, its data and `fit`, shared by the helper tests and
`_multi_worker_fit_script.py` (which imports it as `_dense`)."""

import contextlib

import keras
import numpy as np


def dense_model(steps_per_execution=1, strategy=None):
    scope = strategy.scope() if strategy is not None else contextlib.nullcontext()
    with scope:
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse", steps_per_execution=steps_per_execution)
    model.set_weights([np.full((4, 1), 0.1, "float32"), np.zeros(1, "float32")])
    return model


def data(samples=352):
    x = np.random.default_rng(1).uniform(size=(samples, 4)).astype("float32")
    return x, x.sum(1, keepdims=True)


def fit(model, **kwargs):
    x, y = data()
    history = model.fit(x, y, batch_size=32, shuffle=False, verbose=0, **kwargs)
    iterations = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    return model.get_weights(), iterations, history.history
