"""Refusals several `keras-nalu` commands share, each before any work."""

import contextlib
import warnings


def refuse_backend_without_fit(
    command: str, backends=("tensorflow", "jax", "torch")
) -> None:
    """One line, before anything is made, where `command` cannot train.

    Keras' numpy and openvino backends cannot train; a sweep trains on the
    backends that have a replica engine, mnist on TensorFlow.
    """
    import keras

    backend = keras.backend.backend()
    if backend in backends:
        return
    what = (
        "runs models but cannot train them"
        if backend in ("numpy", "openvino")
        else f"cannot run `keras-nalu {command}`"
    )
    *first, last = [f"KERAS_BACKEND={name}" for name in backends]
    names = f"{', '.join(first)} or {last}" if first else last
    raise ValueError(
        f"Keras' {backend} backend (KERAS_BACKEND={backend}) {what}; run "
        f"`keras-nalu {command}` with {names}."
    )


@contextlib.contextmanager
def overlap_warnings_silenced():
    """The CLI refuses overlapping ranges itself, or was told to allow them."""
    from keras_nalu.tasks.ranges import OverlappingRangesWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OverlappingRangesWarning)
        yield


def refuse_overlap(task, interpolation: str, extrapolation: str) -> None:
    """One line where the task's two ranges overlap (without --allow-overlap).

    Args:
        task: an `ArithmeticTask`.
        interpolation: what the user gave the interpolation range as (a flag
            or a grid field); `extrapolation` likewise.
    """
    from keras_nalu.tasks.ranges import Range

    shared = task.interpolation_range.overlap(task.extrapolation_range)
    if shared:
        raise ValueError(
            f"{interpolation} {task.interpolation_range} and {extrapolation} "
            f"{task.extrapolation_range} overlap on {Range(shared)}, so the "
            "extrapolation verdict would test inputs of the training range; pick "
            "disjoint ranges, or pass --allow-overlap."
        )
