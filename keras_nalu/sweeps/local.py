"""Chunks trained in this process: one after the other, or side by side.

`train_locally` trains a sweep's chunks here: one after the other, or, on
the JAX engine with several local devices (or `chunks_per_device` > 1), one
chunk per device at a time in threads pinned to their devices. Only the
calling thread writes rows (`on_rows`); past a `deadline`, no chunk starts
and the chunks in training stop after their backups (`TimeLimitReached`).
"""

from __future__ import annotations

import contextlib
import time

from keras_nalu.sweeps.chunks import train_chunk
from keras_nalu.sweeps.engines import TimeLimitReached, stop_at_interrupt


def _local_devices() -> list:
    """The accelerators chunks can train on side by side (JAX engine), or []."""
    import keras

    if keras.backend.backend() != "jax":
        return []
    import jax

    devices = jax.devices()
    return devices if len(devices) > 1 else []


def train_locally(
    chunks,
    on_rows,
    on_steps,
    backup_of=None,
    backup_every=600.0,
    deadline=None,
    chunks_per_device=1,
    chunk_seconds=None,
):
    """Trains `chunks` here; `on_rows` gets each chunk's rows, `on_steps` progress.

    Args:
        chunks: the chunks, in order.
        on_rows, on_steps: the sweep's callbacks (rows to write, seed-steps
            done), called in this thread.
        backup_of: a chunk's backup file, or None for no backups.
        backup_every: seconds between two backups of a chunk.
        deadline: a `time.monotonic()` time past which the sweep stops.
        chunks_per_device: chunks sharing each JAX device.
        chunk_seconds: a chunk's predicted wall time, or None.

    Raises:
        TimeLimitReached: the sweep stopped at `deadline` with chunks left.
    """
    import keras

    with contextlib.ExitStack() as stack:
        # Ctrl-C: every chunk in training backs up at its next evaluation,
        # then KeyboardInterrupt.
        stack.enter_context(stop_at_interrupt())
        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            # Every chunk traces its own training function; TF's retracing
            # warning about that says nothing useful here.
            logger = tf.get_logger()
            stack.callback(logger.setLevel, logger.level)
            logger.setLevel("ERROR")
        devices = _local_devices()
        if chunks_per_device > 1 and keras.backend.backend() == "jax":
            import jax

            devices = (devices or jax.devices()[:1]) * chunks_per_device
        if devices and len(chunks) > 1:
            _train_on_devices(
                chunks,
                devices,
                on_rows,
                on_steps,
                backup_of,
                backup_every,
                deadline,
                chunk_seconds,
            )
        else:
            _train_chunks(
                chunks,
                on_rows,
                on_steps,
                backup_of,
                backup_every,
                deadline,
                chunk_seconds,
            )


def _out_of_time(deadline) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _train_one_chunk(chunk, on_steps, backup_of, backup_every, deadline=None):
    reported = 0

    def progress(steps):
        nonlocal reported
        done = steps * chunk.replicas
        reported += done
        on_steps(done)

    rows = train_chunk(
        chunk,
        progress=progress,
        backup=None if backup_of is None else backup_of(chunk),
        backup_every=backup_every,
        deadline=deadline,
    )
    on_steps(max(chunk.steps - reported, 0))
    return rows


def _keep_finished_runs(stop: BaseException, on_rows) -> None:
    """Writes the rows of the runs a stopped chunk finished (seed by seed)."""
    rows = getattr(stop, "rows", None)
    if rows:
        on_rows(rows)


def _fits(chunk, deadline, chunk_seconds) -> bool:
    """Whether `chunk` is predicted to finish by `deadline` (True if unknown)."""
    if deadline is None or chunk_seconds is None:
        return True
    return time.monotonic() + chunk_seconds(chunk) <= deadline


def _train_chunks(
    chunks,
    on_rows,
    on_steps,
    backup_of=None,
    backup_every=600.0,
    deadline=None,
    chunk_seconds=None,
):
    for index, chunk in enumerate(chunks):
        if not _fits(chunk, deadline, chunk_seconds):
            raise TimeLimitReached(
                f"the sweep stopped before a chunk that would not finish by its "
                f"time limit, with {len(chunks) - index} chunks left"
            )
        try:
            rows = _train_one_chunk(chunk, on_steps, backup_of, backup_every, deadline)
        except (KeyboardInterrupt, TimeLimitReached) as stop:
            _keep_finished_runs(stop, on_rows)
            raise
        on_rows(rows)
        if index + 1 < len(chunks) and _out_of_time(deadline):
            raise TimeLimitReached(
                f"the sweep stopped at its time limit with {len(chunks) - index - 1} "
                "chunks left"
            )


def _train_on_devices(
    chunks,
    devices,
    on_rows,
    on_steps,
    backup_of,
    backup_every,
    deadline=None,
    chunk_seconds=None,
):
    """One chunk per device at a time, each in a thread pinned to its device.

    JAX runs the threads' computations side by side; only this thread writes
    the results (`on_rows`). A device listed twice trains two chunks at a
    time. Past `deadline`, no thread starts another chunk, and the chunks in
    training stop after their backups; the finished chunks' rows are written
    first, then `TimeLimitReached` is raised.
    """
    import queue
    import threading

    import jax

    todo = queue.SimpleQueue()
    for chunk in chunks:
        todo.put(chunk)
    done = queue.SimpleQueue()
    lock = threading.Lock()
    finished = object()  # a worker's last message

    def locked_steps(steps):
        with lock:
            on_steps(steps)

    def worker(device):
        trained = 0
        try:
            with jax.default_device(device):
                while not (trained and _out_of_time(deadline)):
                    try:
                        chunk = todo.get_nowait()
                    except queue.Empty:
                        return
                    if not _fits(chunk, deadline, chunk_seconds):
                        todo.put(chunk)  # left for the next sweep
                        return
                    done.put(
                        _train_one_chunk(
                            chunk, locked_steps, backup_of, backup_every, deadline
                        )
                    )
                    trained += 1
        except BaseException as error:  # handed to the main thread
            done.put(error)
        finally:
            done.put(finished)

    threads = [
        threading.Thread(target=worker, args=(device,), daemon=True)
        for device in devices[: len(chunks)]
    ]
    for thread in threads:
        thread.start()
    running, stopped = len(threads), None
    while running:
        outcome = done.get()
        if outcome is finished:
            running -= 1
        elif isinstance(outcome, TimeLimitReached | KeyboardInterrupt):
            _keep_finished_runs(outcome, on_rows)
            stopped = stopped or outcome  # the others stop at their next backup
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            on_rows(outcome)
    for thread in threads:
        thread.join()
    if stopped is None and not todo.empty():
        stopped = TimeLimitReached("the sweep stopped at its time limit")
    if stopped is not None:
        raise stopped
