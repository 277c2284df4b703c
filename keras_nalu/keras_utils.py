"""Keras helpers: seeding a run, every layer of a model, its optimizer's steps,
its weights that are not finite.

Small functions that the callbacks, the evaluation, the experiments and the
replica engines all share, kept below all of them.
"""

import sys

import keras
import numpy as np


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


def non_finite_weights(model) -> list[tuple[str, tuple[int, ...], float]]:
    """`(variable path, index, value)` of every NaN or ±inf weight in `model`.

    A model or a layer: its floating-point variables, trainable or not, in
    the order Keras lists them.

    Example:

    >>> import keras, keras_nalu
    >>> layer = keras_nalu.layers.NAU(1, name="sum")
    >>> model = keras.Sequential([keras.Input((2,)), layer], name="adder")
    >>> _ = layer.kernel.assign([[float("nan")], [1.0]])
    >>> non_finite_weights(model)
    [('adder/sum/kernel', (0, 0), nan)]
    """
    found = []
    for variable in model.weights:
        if "float" not in str(variable.dtype):
            continue
        values = np.asarray(keras.ops.convert_to_numpy(variable), dtype=np.float64)
        for index in zip(*np.nonzero(~np.isfinite(values))):
            index = tuple(int(i) for i in index)
            found.append((variable.path, index, float(values[index])))
    return found


def describe_weights(weights: list, shown: int = 3) -> str:
    """`non_finite_weights`' list in words: `"nau/kernel[0,0] = nan, …"`.

    Example:

    >>> describe_weights([("nau/kernel", (0, 0), float("nan"))])
    'nau/kernel[0,0] = nan'
    """
    words = [
        f"{path}[{','.join(map(str, index))}] = {value:g}"
        for path, index, value in weights[:shown]
    ]
    if len(weights) > shown:
        words.append(f"and {len(weights) - shown} more")
    return ", ".join(words)
