"""Keras helpers: seeding a run, every layer of a model, its optimizer's steps.

Small functions that the callbacks, the evaluation, the experiments and the
replica engines all share, kept below all of them.
"""

import sys

import keras


def set_random_seed(seed: int) -> None:
    """`keras.utils.set_random_seed`, without loading TensorFlow to seed it.

    Keras seeds Python, NumPy, its own `SeedGenerator` and, wherever
    TensorFlow is installed, TensorFlow, which it imports for that. On
    another backend, where nothing here uses TensorFlow, importing it costs
    seconds and prints its C++ start-up lines; TensorFlow is seeded only
    where Keras runs on it or it is already imported.

    Example:

    >>> import numpy as np
    >>> set_random_seed(7); first = np.random.rand()
    >>> set_random_seed(7); bool(np.random.rand() == first)
    True
    """
    if keras.backend.backend() == "tensorflow" or "tensorflow" in sys.modules:
        keras.utils.set_random_seed(seed)
        return
    from keras.src.utils import rng_utils

    tensorflow = getattr(rng_utils, "tf", None)
    if getattr(tensorflow, "_available", True) is not None:
        keras.utils.set_random_seed(seed)  # Keras decided already, or another layout
        return
    tensorflow._available = False  # seen as not installed, for this call only
    try:
        keras.utils.set_random_seed(seed)
    finally:
        tensorflow._available = None


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
