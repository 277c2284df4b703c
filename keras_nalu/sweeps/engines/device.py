"""The device a Keras backend trains on, in words, the local devices chunks
train on side by side, a worker process's environment, and XLA's flags for
a GPU."""

from __future__ import annotations

import os

import keras

COMMAND_BUFFER_FLAGS = (
    "--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL",
    "--xla_gpu_graph_min_graph_size=1",
)
"""XLA's flags that add whole loops and conditionals (`WHILE`, `CONDITIONAL`)
to the commands XLA records into GPU command buffers (CUDA graphs), so a
compiled loop over steps, its condition included, runs as one, however few
kernels it holds; XLA's CPU backend reads and ignores them."""


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


def local_devices() -> list:
    """The accelerators chunks can train on side by side (JAX engine), or []."""
    if keras.backend.backend() != "jax":
        return []
    import jax

    devices = jax.devices()
    return devices if len(devices) > 1 else []


def worker_environment() -> dict[str, str]:
    """What a process of `processes_per_device` adds to its environment.

    JAX takes GPU memory as it needs it (`XLA_PYTHON_CLIENT_PREALLOCATE=
    false`), not 75 % of it in the first process, unless
    `XLA_PYTHON_CLIENT_MEM_FRACTION` is set, which then gives each process
    that share. The Keras backend is the sweep's.
    """
    environment = {"KERAS_BACKEND": keras.backend.backend()}
    if "XLA_PYTHON_CLIENT_MEM_FRACTION" not in os.environ:
        environment["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    return environment


def jax_started() -> bool:
    """Whether JAX has created its backends (XLA's flags are read then)."""
    import sys

    if "jax" not in sys.modules:
        return False
    try:
        from jax._src.xla_bridge import backends_are_initialized
    except ImportError:  # a JAX without it: assume it has started
        return True
    return backends_are_initialized()


def use_command_buffers() -> None:
    """Adds `COMMAND_BUFFER_FLAGS` to `XLA_FLAGS`, for JAX here and the
    processes started from here.

    On a GPU, each iteration of a compiled loop otherwise launches its
    kernels one by one and reads its condition back to the host; as one
    command buffer, the loop runs on the device alone. Flags already set
    are kept (a flag given twice: the last one counts).

    Raises:
        ValueError: JAX has already started here without these flags; set
            `XLA_FLAGS` before Python starts.
    """
    flags = os.environ.get("XLA_FLAGS", "").split()
    if all(flag in flags for flag in COMMAND_BUFFER_FLAGS):
        return
    if jax_started():
        raise ValueError(
            "XLA reads its command-buffer flags when JAX starts, and JAX has "
            "started in this process; set them before Python starts: "
            f"XLA_FLAGS='{' '.join(COMMAND_BUFFER_FLAGS)}'"
        )
    os.environ["XLA_FLAGS"] = " ".join([*flags, *COMMAND_BUFFER_FLAGS])
