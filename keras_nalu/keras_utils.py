"""Reading a Keras model: every layer in it, and the steps its optimizer took.

Two small functions that the callbacks, the evaluation, the experiments and
the replica engines all read a model with, kept below all of them.
"""

import keras


def iter_layers(model):
    """Every layer in `model`, nested ones included, each once.

    Example:

    >>> import keras, keras_nalu
    >>> model = keras.Sequential([keras.Input((2,)), keras_nalu.layers.NAU(1)])
    >>> [type(layer).__name__ for layer in iter_layers(model)
    ...  if isinstance(layer, keras_nalu.layers.NAU)]
    ['NAU']
    """
    seen = set()
    stack = [model]
    while stack:
        layer = stack.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        yield layer
        stack.extend(getattr(layer, "_layers", []) or [])
        stack.extend(
            value
            for value in vars(layer).values()
            if isinstance(value, keras.layers.Layer)
        )


def optimizer_step(model) -> int:
    """The optimizer steps `model` has taken: `model.optimizer.iterations`.

    The value a resumed or reloaded model continues from, read the same way
    on every backend.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> model = keras.Sequential([keras.Input((2,)), keras_nalu.layers.NAU(1)])
    >>> model.compile("adam", "mse")
    >>> _ = model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=2, verbose=0)
    >>> optimizer_step(model)
    4
    """
    return int(keras.ops.convert_to_numpy(model.optimizer.iterations))
