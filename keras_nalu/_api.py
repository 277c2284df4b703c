"""The one decorator that makes an object part of the public, serializable API."""

import keras

PACKAGE = "keras_nalu"


def export(obj):
    """Registers `obj` with Keras serialization under the `keras_nalu` package.

    Every public layer, initializer, constraint, regularizer and callback carries
    this decorator, so a `.keras` file that names it loads without
    `custom_objects`.
    """
    return keras.saving.register_keras_serializable(package=PACKAGE)(obj)
