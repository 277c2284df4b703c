"""The device a backend trains on, local devices, a worker's environment, XLA flags."""

from __future__ import annotations

import os
import sys

import keras

COMMAND_BUFFER_FLAGS = (
    "--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL",
    "--xla_gpu_graph_min_graph_size=1",
)
"""XLA's flags that record whole loops and conditionals into GPU command
buffers (CUDA graphs), however few kernels they hold; the CPU ignores them."""


def device_name() -> str:
    """The backend's first device, which `model.fit` and the engines train on
    unless told otherwise: "cpu" or the GPU's name."""
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
    """What a process of `processes_per_device` adds to its environment: the
    sweep's backend, and JAX taking GPU memory as it needs it, not 75 % in
    the first process, unless `XLA_PYTHON_CLIENT_MEM_FRACTION` is set."""
    environment = {"KERAS_BACKEND": keras.backend.backend()}
    if "XLA_PYTHON_CLIENT_MEM_FRACTION" not in os.environ:
        environment["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    return environment


def jax_started() -> bool:
    """Whether JAX has created its backends (XLA's flags are read then)."""
    if "jax" not in sys.modules:
        return False
    try:
        from jax._src.xla_bridge import backends_are_initialized
    except ImportError:  # a JAX without it: assume it has started
        return True
    return backends_are_initialized()


def use_command_buffers() -> None:
    """Adds `COMMAND_BUFFER_FLAGS` to `XLA_FLAGS`, here and in processes
    started from here, keeping flags already set: a compiled loop then runs
    on the GPU alone, not launching kernels and reading its condition back.

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
