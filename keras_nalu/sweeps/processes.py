"""Chunks trained side by side in spawned processes of their own
(`processes_per_device`), while the sweep's process writes their rows."""

from __future__ import annotations

import contextlib
import os
import queue
import traceback
from unittest import mock

from keras_nalu._startup import SPAWNED
from keras_nalu.sweeps.engines import TimeLimitReached, stop_requested
from keras_nalu.sweeps.engines.device import local_devices, worker_environment
from keras_nalu.sweeps.engines.loop import request_stop, stop_with
from keras_nalu.sweeps.training import fits, raise_stopped, train_unit


def train_in_processes(
    units, processes, on_rows, on_steps, limits, chunk_seconds, unroll
):
    """`processes` spawned processes per device, each training its own unit.

    A free process asks for a unit (a chunk or a pack); this one hands out
    the next (`_next_unit`), writes the rows they send, reports their
    progress, and records their JAX compile times (`jax.monitoring`) here
    too. Ctrl-C stops every process at its next evaluation, after its backup.
    """
    import multiprocessing

    os.environ.update(worker_environment())  # this process: no memory up front
    context = multiprocessing.get_context("spawn")
    messages = context.Queue()
    stop = context.Event()
    workers = _started_workers(
        context,
        processes,
        len(units),
        {"messages": messages, "stop": stop, "limits": limits, "unroll": unroll},
    )
    todo = list(units)
    trained = [0] * len(workers)
    running = set(range(len(workers)))
    started, stopped = set(), []
    try:
        while running:
            if stop_requested():
                stop.set()
            try:
                kind, index, *rest = messages.get(timeout=1.0)
            except queue.Empty:
                _check_alive(workers, running, started, stopped)
                continue
            if kind == "ready":
                started.add(index)
                # none after the deadline once it trained one, none that won't fit
                late = stop.is_set() or (trained[index] and limits.out_of_time())
                fit = todo and not late and fits(todo[0], limits, chunk_seconds)
                unit = todo.pop(0) if fit else None
                trained[index] += unit is not None
                workers[index][1].put(unit)
            elif kind == "rows":
                on_rows(rest[0])
            elif kind == "steps":
                on_steps(*rest)
            elif kind == "event":
                import jax

                jax.monitoring.record_event_duration_secs(*rest)
            elif kind == "stopped":
                name, where, again = rest
                error = TimeLimitReached if name == "TimeLimitReached" else None
                stopped.append(stop_with(error or KeyboardInterrupt, where, again))
            elif kind == "error":
                raise _rebuilt(*rest)
            elif kind == "exit":
                running.discard(index)
    finally:
        for index, (worker, _) in enumerate(workers):
            if index in running:  # this process failed: the others stop now
                worker.terminate()
            worker.join()
    raise_stopped(stopped, len(todo))


def _started_workers(context, processes: int, units: int, options: dict) -> list:
    """`(process, its task queue)` of each worker started: `processes` per
    device, no more than `units`."""
    device_count = len(local_devices()) or 1
    workers = []
    for index in range(min(processes * device_count, units)):
        tasks = context.Queue()
        worker = context.Process(
            target=_process_worker,
            args=(index, index % device_count, worker_environment(), tasks),
            kwargs=options,
            daemon=True,
        )
        # a process that knows a sweep spawned it does not repeat TensorFlow's
        # start-up lines
        with mock.patch.dict(os.environ, {SPAWNED: "1"}):
            worker.start()
        workers.append((worker, tasks))
    return workers


def _check_alive(workers, running, started, stopped) -> None:
    """Drops the processes that ended without a word (killed), adding a stop;
    a RuntimeError if one ended before it was ready, or without a Ctrl-C."""
    for index in sorted(running):
        worker = workers[index][0]
        if worker.is_alive():
            continue
        running.discard(index)
        if index not in started:
            raise RuntimeError(
                f"a sweep process ended with exit code {worker.exitcode} as it "
                "started, before training (its error is above; a script must run "
                'its sweep under `if __name__ == "__main__":`, since each process '
                "imports the script again)"
            )
        if not stop_requested():
            raise RuntimeError(
                f"a sweep process ended with exit code {worker.exitcode} before "
                "its chunks did; run the sweep again to continue from the backups"
            )
        stopped.append(KeyboardInterrupt("the sweep's processes stopped"))


def _rebuilt(name: str, text: str, details: str) -> Exception:
    """A process's error here: its built-in class and message, or a RuntimeError."""
    import builtins

    error_class = getattr(builtins, name, None)
    if isinstance(error_class, type) and issubclass(error_class, Exception):
        return error_class(text)
    return RuntimeError(f"a sweep process failed: {name}: {text}\n{details}")


def _process_worker(index, device_index, environment, tasks, **options):
    """A spawned process of `train_in_processes`: trains the units it is given."""
    import threading

    os.environ.update(environment)  # before JAX starts its backend
    messages, stop = options.pop("messages"), options.pop("stop")

    parent = os.getppid()

    def stop_when_asked():  # Ctrl-C in the sweep's process, or its end: as here
        while not stop.wait(timeout=2.0) and os.getppid() == parent:
            pass
        request_stop()

    threading.Thread(target=stop_when_asked, daemon=True).start()
    try:
        import keras

        pinned = contextlib.nullcontext()
        if keras.backend.backend() == "jax":
            import jax

            def forward(event, seconds, **details):
                if event.startswith("/jax/core/compile/"):
                    messages.put(("event", index, event, seconds))

            jax.monitoring.register_event_duration_secs_listener(forward)
            devices = jax.local_devices()
            pinned = jax.default_device(devices[device_index % len(devices)])
        with pinned:
            messages.put(("ready", index))
            while (unit := tasks.get()) is not None:
                train_unit(
                    unit,
                    lambda rows: messages.put(("rows", index, rows)),
                    lambda steps, trained=True: messages.put(
                        ("steps", index, steps, trained)
                    ),
                    **options,
                )
                messages.put(("ready", index))
    except (TimeLimitReached, KeyboardInterrupt) as error:
        where = getattr(error, "where", str(error))
        again = getattr(error, "again", False)
        messages.put(("stopped", index, type(error).__name__, where, again))
    except BaseException as error:  # handed to the sweep's process
        messages.put(
            ("error", index, type(error).__name__, str(error), traceback.format_exc())
        )
    finally:
        messages.put(("exit", index))
