"""The device a Keras backend trains on, in words, as the result rows record it."""

from __future__ import annotations

import keras


def device_name() -> str:
    """The device `model.fit` and the engines train on: "cpu" or the GPU's name.

    The backend's first device: the one a model or a replica run trains on
    unless told otherwise.
    """
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        return "cpu" if device.platform == "cpu" else device.device_kind
    if backend == "tensorflow":
        import tensorflow as tf

        if tf.config.list_logical_devices("GPU"):
            details = tf.config.experimental.get_device_details(
                tf.config.list_physical_devices("GPU")[0]
            )
            return details.get("device_name", "gpu")
    return "cpu"
