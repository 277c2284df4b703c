"""Chunks trained on this machine: one after the other, or side by side.

`train_locally` trains a sweep's chunks here: one after the other, or, on
the JAX engine with several local devices (or `chunks_per_device` > 1), one
chunk per device at a time in threads pinned to their devices. Only the
calling thread writes rows (`on_rows`); past a `deadline`, no chunk starts
and the chunks in training stop after their backups (`TimeLimitReached`).

Small chunks leave a GPU mostly idle (each step costs a roughly fixed time
whatever a chunk holds). Besides the threads, three ways fill it, each
giving every chunk the rows it gives alone:

- `pack_replicas`: consecutive chunks of different recipes, up to that many
  replicas, train side by side in one compiled program (`pack_chunks`,
  `train_pack`; JAX engine); `default_pack_replicas` is the default;
- `processes_per_device`: that many processes per device, each training its
  own chunk (spawned, so each has its own JAX; GPU memory is taken as
  needed, `XLA_PYTHON_CLIENT_PREALLOCATE=false`, unless
  `XLA_PYTHON_CLIENT_MEM_FRACTION` gives each process its share);
- `unroll`: steps per iteration of the compiled loop (`ReplicaRun`);

and XLA's command buffers, which `run_sweep` sets before JAX starts.
"""

from __future__ import annotations

import contextlib
import os
import queue
import time
import traceback

from keras_nalu.sweeps.chunks import Pack, pack_chunks, train_chunk, train_pack
from keras_nalu.sweeps.engines import TimeLimitReached, stop_at_interrupt
from keras_nalu.sweeps.engines.loop import _stop_requested

GPU_PACK_REPLICAS = 1000
"""The replicas a pack holds by default on a GPU (or another accelerator).

On one NVIDIA H200, `benchmarks/speed.py` trained 1,000 replicas of one
chunk at 9.8·10⁶ seed-steps/s and 100 at 1.6·10⁶: up to about 1,000
replicas, more of them cost the device almost nothing
(`benchmarks/results/gpu/summary.md`). A pack's gain on a GPU is still to be
measured (`benchmarks/gpu_probe.sh`)."""


def _local_devices() -> list:
    """The accelerators chunks can train on side by side (JAX engine), or []."""
    import keras

    if keras.backend.backend() != "jax":
        return []
    import jax

    devices = jax.devices()
    return devices if len(devices) > 1 else []


def default_pack_replicas() -> int:
    """The replicas `run_sweep` packs chunks up to, unless told: by device.

    `GPU_PACK_REPLICAS` on an accelerator of the JAX engine; 0 (no packing)
    on a CPU, where a step costs its arithmetic and a pack trained no faster
    than its chunks one after the other (`benchmarks/step_profile.py`,
    `benchmarks/gpu_probe.sh`; docs: Backends, "Filling a GPU"), and on an
    engine that cannot pack.
    """
    return GPU_PACK_REPLICAS if on_accelerator() else 0


def on_accelerator() -> bool:
    """Whether the JAX engine trains on an accelerator here (starts JAX)."""
    import keras

    if keras.backend.backend() != "jax":
        return False
    import jax

    return jax.devices()[0].platform != "cpu"


def add_filling_flags(parser) -> None:
    """The command-line flags of `run_sweep`'s ways to fill a device.

    `keras-nalu sweep` and `benchmarks/paper.py` take them;
    `filling_options(args)` reads them back as `run_sweep` arguments.
    """
    parser.add_argument(
        "--pack-replicas",
        type=int,
        default=None,
        metavar="N",
        help="JAX engine: train consecutive chunks of different models side by "
        "side in one compiled program, up to N replicas together; each chunk "
        f"gives the rows it gives alone (default: {GPU_PACK_REPLICAS} on a GPU, "
        "0 = none on a CPU)",
    )
    parser.add_argument(
        "--processes-per-device",
        type=int,
        default=1,
        metavar="N",
        help="train N chunks side by side in processes of their own, taking GPU "
        "memory as they need it (or XLA_PYTHON_CLIENT_MEM_FRACTION each, if set; "
        "default 1)",
    )
    parser.add_argument(
        "--unroll",
        type=int,
        default=1,
        metavar="STEPS",
        help="JAX engine: training steps per iteration of the compiled loop; "
        "the rows are the same (default 1)",
    )
    parser.add_argument(
        "--xla-command-buffers",
        action="store_true",
        help="run each compiled loop over steps as one GPU command buffer (CUDA "
        "graph) through XLA_FLAGS; no effect on a CPU",
    )


def filling_options(args) -> dict:
    """`run_sweep`'s arguments from the flags of `add_filling_flags`.

    What must be set before JAX starts (building an `ExperimentConfig`
    does) is set here: XLA's flags of `--xla-command-buffers`, and with
    `--processes-per-device`, no GPU memory taken up front by this process
    either (`worker_environment`).
    """
    if args.xla_command_buffers:
        from keras_nalu.sweeps.engines.device import use_command_buffers

        use_command_buffers()
    if args.processes_per_device > 1:
        os.environ.update(worker_environment())
    return {
        "pack_replicas": args.pack_replicas,
        "processes_per_device": args.processes_per_device,
        "unroll": args.unroll,
        "command_buffers": args.xla_command_buffers,
    }


def worker_environment() -> dict[str, str]:
    """What a process of `processes_per_device` adds to its environment.

    JAX takes GPU memory as it needs it (`XLA_PYTHON_CLIENT_PREALLOCATE=
    false`), not 75 % of it in the first process, unless
    `XLA_PYTHON_CLIENT_MEM_FRACTION` is set, which then gives each process
    that share. The Keras backend is the sweep's.
    """
    import keras

    environment = {"KERAS_BACKEND": keras.backend.backend()}
    if "XLA_PYTHON_CLIENT_MEM_FRACTION" not in os.environ:
        environment["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    return environment


def train_locally(
    chunks,
    on_rows,
    on_steps,
    backup_of=None,
    backup_every=600.0,
    deadline=None,
    chunks_per_device=1,
    chunk_seconds=None,
    pack_replicas=0,
    processes_per_device=1,
    unroll=1,
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
        chunk_seconds: a chunk's predicted wall time, or None (then no
            chunks are packed: their time together is not predicted).
        pack_replicas: chunks packed together up to this many replicas
            (`pack_chunks`, JAX engine); 0 for none.
        processes_per_device: processes training chunks side by side on
            each device (the first: one device), each its own chunk or pack.
        unroll: steps per iteration of the compiled loop (JAX engine).

    Raises:
        TimeLimitReached: the sweep stopped at `deadline` with chunks left.
    """
    import keras

    from keras_nalu.sweeps.engines import engine_class

    if pack_replicas and chunk_seconds is None and engine_class().supports_packing:
        chunks = pack_chunks(chunks, pack_replicas)
    common = (on_rows, on_steps, backup_of, backup_every, deadline, chunk_seconds)
    if processes_per_device > 1 and len(chunks) > 1:
        with stop_at_interrupt():
            _train_in_processes(chunks, processes_per_device, *common, unroll)
        return
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
            _train_on_devices(chunks, devices, *common, unroll)
        else:
            _train_chunks(chunks, *common, unroll)


def _out_of_time(deadline) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _train_one_chunk(chunk, on_steps, backup_of, backup_every, deadline=None, unroll=1):
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
        unroll=unroll,
    )
    on_steps(max(chunk.steps - reported, 0))
    return rows


def _keep_finished_runs(stop: BaseException, on_rows) -> None:
    """Writes the rows of the runs a stopped chunk finished (seed by seed)."""
    rows = getattr(stop, "rows", None)
    if rows:
        on_rows(rows)


def _train_unit(
    unit, on_rows, on_steps, backup_of, backup_every, deadline=None, unroll=1
):
    """Trains a chunk or a pack; `on_rows` gets each chunk's rows when done."""
    if not isinstance(unit, Pack):
        on_rows(
            _train_one_chunk(
                unit, on_steps, backup_of, backup_every, deadline, unroll=unroll
            )
        )
        return
    reported = dict.fromkeys(unit.chunks, 0)

    def progress(chunk):
        def report(steps):
            done = steps * chunk.replicas
            reported[chunk] += done
            on_steps(done)

        return report

    train_pack(unit, on_rows, progress, backup_of, backup_every, deadline, unroll)
    on_steps(sum(max(c.steps - reported[c], 0) for c in unit.chunks))


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
    unroll=1,
):
    for index, chunk in enumerate(chunks):
        if not _fits(chunk, deadline, chunk_seconds):
            raise TimeLimitReached(
                f"the sweep stopped before a chunk that would not finish by its "
                f"time limit, with {len(chunks) - index} chunks left"
            )
        try:
            _train_unit(
                chunk, on_rows, on_steps, backup_of, backup_every, deadline, unroll
            )
        except (KeyboardInterrupt, TimeLimitReached) as stop:
            _keep_finished_runs(stop, on_rows)
            raise
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
    unroll=1,
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
                    _train_unit(
                        chunk,
                        done.put,
                        locked_steps,
                        backup_of,
                        backup_every,
                        deadline,
                        unroll,
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


# --- processes ---------------------------------------------------------------


def _train_in_processes(
    units,
    processes,
    on_rows,
    on_steps,
    backup_of,
    backup_every,
    deadline,
    chunk_seconds,
    unroll,
):
    """`processes` spawned processes per device, each training its own unit.

    A process asks for a unit when it is free; this one hands out the next
    (none past `deadline` to a process that has trained one, nor one that
    would not finish by it), writes the rows the processes send and reports
    their progress. Ctrl-C (here, or in the whole process group) stops every
    process at its next evaluation, after its backup. The JAX compile times
    measured in the processes are recorded here too (`jax.monitoring`), so a
    caller that listens sees them.
    """
    import multiprocessing

    os.environ.update(worker_environment())  # this process: no memory up front
    device_count = len(_local_devices()) or 1
    context = multiprocessing.get_context("spawn")
    messages = context.Queue()
    stop = context.Event()
    workers = []
    for index in range(min(processes * device_count, len(units))):
        tasks = context.Queue()
        worker = context.Process(
            target=_process_worker,
            args=(index, index % device_count, worker_environment(), tasks),
            kwargs={
                "messages": messages,
                "stop": stop,
                "backup_of": backup_of,
                "backup_every": backup_every,
                "deadline": deadline,
                "unroll": unroll,
            },
            daemon=True,
        )
        worker.start()
        workers.append((worker, tasks))
    todo = list(units)
    trained = [0] * len(workers)
    running = set(range(len(workers)))
    stopped = None
    try:
        while running:
            if _stop_requested.is_set():
                stop.set()
            try:
                message = messages.get(timeout=1.0)
            except queue.Empty:
                stopped = _check_alive(workers, running, stopped)
                continue
            kind, index, *rest = message
            if kind == "ready":
                unit = None
                if todo and not stop.is_set():
                    late = trained[index] and _out_of_time(deadline)
                    if not late and _fits(todo[0], deadline, chunk_seconds):
                        unit = todo.pop(0)
                        trained[index] += 1
                workers[index][1].put(unit)
            elif kind == "rows":
                on_rows(rest[0])
            elif kind == "steps":
                on_steps(rest[0])
            elif kind == "event":
                import jax

                jax.monitoring.record_event_duration_secs(*rest)
            elif kind == "stopped":
                name, text = rest
                error = TimeLimitReached if name == "TimeLimitReached" else None
                stopped = stopped or (error or KeyboardInterrupt)(text)
            elif kind == "error":
                raise _rebuilt(*rest)
            elif kind == "exit":
                running.discard(index)
    finally:
        for index, (worker, _) in enumerate(workers):
            if index in running:  # this process failed: the others stop now
                worker.terminate()
            worker.join()
    if stopped is None and todo:
        stopped = TimeLimitReached(
            f"the sweep stopped at its time limit with {len(todo)} chunks left"
        )
    if stopped is not None:
        raise stopped


def _check_alive(workers, running, stopped):
    """Drops the processes that ended without a word (killed); the stop, if any."""
    for index in sorted(running):
        worker = workers[index][0]
        if worker.is_alive():
            continue
        running.discard(index)
        if not _stop_requested.is_set():
            raise RuntimeError(
                f"a sweep process ended with exit code {worker.exitcode} before "
                "its chunks did; run the sweep again to continue from the backups"
            )
        stopped = stopped or KeyboardInterrupt("the sweep's processes stopped")
    return stopped


def _rebuilt(name: str, text: str, details: str) -> Exception:
    """A process's error here: its built-in class and message, or a RuntimeError."""
    import builtins

    error_class = getattr(builtins, name, None)
    if isinstance(error_class, type) and issubclass(error_class, Exception):
        return error_class(text)
    return RuntimeError(f"a sweep process failed: {name}: {text}\n{details}")


def _process_worker(index, device_index, environment, tasks, **options):
    """A spawned process of `_train_in_processes`: trains the units it is given."""
    import threading

    os.environ.update(environment)  # before JAX starts its backend
    messages, stop = options.pop("messages"), options.pop("stop")

    parent = os.getppid()

    def stop_when_asked():  # Ctrl-C in the sweep's process, or its end: as here
        while not stop.wait(timeout=2.0) and os.getppid() == parent:
            pass
        _stop_requested.set()

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
                _train_unit(
                    unit,
                    lambda rows: messages.put(("rows", index, rows)),
                    lambda steps: messages.put(("steps", index, steps)),
                    **options,
                )
                messages.put(("ready", index))
    except (TimeLimitReached, KeyboardInterrupt) as error:
        messages.put(("stopped", index, type(error).__name__, str(error)))
    except BaseException as error:  # handed to the sweep's process
        messages.put(
            ("error", index, type(error).__name__, str(error), traceback.format_exc())
        )
    finally:
        messages.put(("exit", index))
