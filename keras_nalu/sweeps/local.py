"""Chunks trained on this machine: one after the other, or side by side in
threads or spawned processes (`FillingOptions`; docs/backends.md, "Filling a GPU").
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import logging
import os
import queue
import traceback
from unittest import mock

from keras_nalu._startup import SPAWNED
from keras_nalu._validation import check_non_negative_int, check_positive_int
from keras_nalu.errors import ArgumentError
from keras_nalu.sweeps.chunks import ChunkLimits, pack_chunks
from keras_nalu.sweeps.engines import (
    TimeLimitReached,
    stop_at_interrupt,
    stop_requested,
)
from keras_nalu.sweeps.engines.device import local_devices, worker_environment
from keras_nalu.sweeps.engines.loop import request_stop, stop_with
from keras_nalu.sweeps.engines.run import MAX_UNROLL
from keras_nalu.sweeps.training import fits, raise_stopped, train_unit

JAX_ONLY = ("chunks_per_device", "pack_replicas", "unroll")
"""The ways to fill a device (`FillingOptions`) only the JAX engine has."""

# What each way takes to ask for nothing (None: the default, decided later).
_ASKS_NOTHING = {
    "chunks_per_device": 1,
    "pack_replicas": 0,
    "processes_per_device": 1,
    "unroll": 1,
}

SECOND_CTRL_C = (
    "run_sweep: stopped at once by a second Ctrl-C; the chunks in training lose "
    "what they trained since their last backup"
)
"""A sweep's last words as a second Ctrl-C ends its process
(`stop_at_interrupt`): nothing else stops its threads, nor XLA compiling."""

MEASURED_PACK_REPLICAS: dict[str, int] = {}
"""The replicas a pack holds by default on each device kind (`device_name`).

Only what a committed probe table measured may be here: packed chunks
faster than one at a time, and every bit as alone (`benchmarks/probe_table.py`'s
`measured_packing` of `benchmarks/results/**/probe.json`; a test checks it).
A device not listed packs nothing unless told."""


def default_pack_replicas() -> int:
    """The replicas `run_sweep` packs chunks up to, unless told: this device
    kind's `MEASURED_PACK_REPLICAS` on the JAX engine, else 0 (none)."""
    import keras

    if keras.backend.backend() != "jax":
        return 0
    from keras_nalu.sweeps.engines import device_name

    return MEASURED_PACK_REPLICAS.get(device_name(), 0)


@dataclasses.dataclass(frozen=True)
class FillingOptions:
    """How a sweep trained here fills a device; each way gives every chunk
    the rows it gives trained alone (docs: Backends, "Filling a GPU").

    Attributes:
        chunks_per_device: on the JAX engine, how many chunks train side by
            side on each device (threads sharing it), for chunks too small
            to fill an accelerator alone. On Ray, use `gpus_per_chunk`.
        pack_replicas: on the JAX engine, consecutive chunks of different
            recipes train side by side in one compiled program, up to this
            many replicas together (`pack_chunks`). None:
            `default_pack_replicas()`; 0: no packing.
        processes_per_device: processes training chunks (or packs) side by
            side on each device, each its own; they take GPU memory as they
            need it, or `XLA_PYTHON_CLIENT_MEM_FRACTION` each if that is
            set. They are spawned: a script that asks for them runs its
            sweep under `if __name__ == "__main__":`.
        unroll: steps per iteration of the compiled loop over a block of
            steps (JAX engine, `ReplicaRun`), 1 to `MAX_UNROLL`.
        command_buffers: run the whole loop over steps as one GPU command
            buffer (CUDA graph), through XLA's flags (`XLA_FLAGS`, see
            `keras_nalu.sweeps.engines.device.use_command_buffers`); they
            change nothing on a CPU. XLA reads them when JAX starts, which
            building an `ExperimentConfig` does: pass `run_sweep` a grid
            mapping, or set the flags before (a `ValueError` says so).

    Example:

    >>> FillingOptions(pack_replicas=0).prepared().unroll
    1
    """

    chunks_per_device: int = 1
    pack_replicas: int | None = None
    processes_per_device: int = 1
    unroll: int = 1
    command_buffers: bool = False

    def prepared(self, ray_address: str | None = None) -> FillingOptions:
        """The options checked, this process prepared (`prepare_process`), and
        `pack_replicas` None the device's default (none on Ray).

        Raises:
            ValueError: a count out of range, threads and processes
                together, a way of a sweep trained here asked of Ray, a way
                of the JAX engine (`JAX_ONLY`) asked of another, or a script
                that asks for processes and runs again in each of them.
        """
        if self.command_buffers:  # first: XLA reads them when JAX starts
            self.prepare_process()
        processes = self.processes_per_device
        for name in ("processes_per_device", "chunks_per_device", "unroll"):
            check_positive_int("run_sweep", name, getattr(self, name))
        if self.pack_replicas is not None:
            check_non_negative_int("run_sweep", "pack_replicas", self.pack_replicas)
        if ray_address is not None:  # the ways of a sweep trained here refused
            self._refuse(
                ("pack_replicas", "processes_per_device", "unroll"),
                "On Ray, each chunk is a task of its own, trained alone: packs, "
                "processes and unrolled loops are ways of a sweep trained here",
            )
            if self.chunks_per_device != 1:
                raise ArgumentError(
                    "run_sweep",
                    "chunks_per_device",
                    self.chunks_per_device,
                    problem="On Ray, chunks share a GPU by {gpus_per_chunk} (e.g. "
                    "0.25 for four chunks a GPU), not {chunks_per_device}",
                )
        if processes != 1 and self.chunks_per_device != 1:
            raise ArgumentError(
                "run_sweep",
                "processes_per_device",
                processes,
                problem="a device is filled with threads ({chunks_per_device}) or "
                "with processes ({processes_per_device}), not both",
                received={
                    "chunks_per_device": self.chunks_per_device,
                    "processes_per_device": processes,
                },
            )
        from keras_nalu.sweeps.engines import engine_class

        engine = engine_class()
        if not engine.supports_packing:  # the ways of `JAX_ONLY` refused
            self._refuse(
                JAX_ONLY,
                f"The {engine.engine} engine trains one chunk at a time, alone: "
                "chunks side by side in threads, packs and unrolled loops need "
                "the JAX engine (KERAS_BACKEND=jax)",
            )
        engine.check_unroll(self.unroll)
        if processes != 1:
            _refuse_a_script_run_again()
        self.prepare_process()
        pack_replicas = self.pack_replicas
        if pack_replicas is None:
            pack_replicas = default_pack_replicas() if ray_address is None else 0
        return dataclasses.replace(self, pack_replicas=pack_replicas)

    def prepare_process(self) -> None:
        """Sets what JAX reads when it starts here: XLA's command-buffer flags,
        and with `processes_per_device`, no GPU memory taken up front."""
        if self.command_buffers:
            from keras_nalu.sweeps.engines.device import use_command_buffers

            use_command_buffers()
        if self.processes_per_device > 1:
            _no_memory_up_front()

    def _refuse(self, names, problem: str) -> None:
        """Refuses the options of `names` that ask for something."""
        asked = {
            name: getattr(self, name)
            for name in names
            if getattr(self, name) not in (None, _ASKS_NOTHING[name])
        }
        if asked:
            name, value = next(iter(asked.items()))
            raise ArgumentError("", name, value, problem=problem, received=asked)


def _refuse_a_script_run_again() -> None:
    """Refuses a sweep run again by a spawned process (its script: `__mp_main__`)."""
    frame = inspect.currentframe()
    while frame is not None:
        module = frame.f_globals.get("__name__")
        if frame.f_code.co_name == "<module>" and module == "__mp_main__":
            script = frame.f_globals.get("__file__", "the script")
            raise RuntimeError(
                f"{script} runs a sweep with processes_per_device outside "
                '`if __name__ == "__main__":`: each of the processes it spawns '
                "imports the script again and would start the sweep again. Put "
                'the sweep under `if __name__ == "__main__":`.'
            )
        frame = frame.f_back


def _no_memory_up_front() -> None:
    """This process, before JAX starts here, takes no GPU memory up front."""
    from keras_nalu.sweeps.engines.device import jax_started

    environment = worker_environment()
    told = {"XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION"}
    if jax_started() and not told & set(os.environ):
        import jax
        import keras

        if keras.backend.backend() == "jax" and jax.devices()[0].platform != "cpu":
            logging.getLogger(__name__).warning(
                "JAX started in this process before processes_per_device could "
                "keep it from taking GPU memory up front; on a GPU, set "
                "XLA_PYTHON_CLIENT_PREALLOCATE=false before Python starts"
            )
    os.environ.update(environment)


def add_filling_flags(parser) -> None:
    """The flags of the ways to fill a device (`keras-nalu sweep`,
    `benchmarks/paper.py`); `filling_options(args)` reads them back."""
    helps = {
        "chunks_per_device": "chunks trained side by side on each device, for "
        "chunks too small to fill an accelerator (on Ray: --gpus-per-chunk; "
        "default 1)",
        "pack_replicas": "train consecutive chunks of different models side by "
        "side in one compiled program, up to N replicas together; each chunk "
        "gives the rows it gives alone (default: the pack size the probe's "
        "committed table measured faster on this device kind, else 0 = none)",
        "processes_per_device": "train N chunks side by side in processes of "
        "their own, taking GPU memory as they need it (or "
        "XLA_PYTHON_CLIENT_MEM_FRACTION each, if set; default 1)",
        "unroll": "training steps per iteration of the compiled loop, 1 to "
        f"{MAX_UNROLL} (the compile time grows with them); the rows are the same "
        "(default 1)",
    }
    for name, text in helps.items():
        parser.add_argument(
            "--" + name.replace("_", "-"),
            type=int,
            default=None if name == "pack_replicas" else 1,
            metavar="STEPS" if name == "unroll" else "N",
            help=f"JAX engine: {text}" if name in JAX_ONLY else text,
        )
    parser.add_argument(
        "--xla-command-buffers",
        action="store_true",
        help="run each compiled loop over steps as one GPU command buffer (CUDA "
        "graph) through XLA_FLAGS; no effect on a CPU",
    )


def filling_options(args) -> dict:
    """`run_sweep`'s arguments from the flags of `add_filling_flags`, with
    this process prepared for them before JAX starts (`prepare_process`)."""
    options = FillingOptions(
        **{name: getattr(args, name) for name in _ASKS_NOTHING},
        command_buffers=args.xla_command_buffers,
    )
    options.prepare_process()
    return dataclasses.asdict(options)


def train_locally(
    chunks,
    on_rows,
    on_steps,
    limits: ChunkLimits | None = None,
    filling: FillingOptions | None = None,
    chunk_seconds=None,
):
    """Trains `chunks` here, in order; `on_rows` gets each chunk's rows and
    `on_steps` the progress, in this thread.

    `filling` (prepared) None trains one chunk at a time, alone; with
    `chunk_seconds` (`SweepOptions`) no chunks are packed.

    Raises:
        TimeLimitReached: the sweep stopped at the deadline with chunks left.
    """
    limits = ChunkLimits() if limits is None else limits
    filling = FillingOptions(pack_replicas=0) if filling is None else filling
    if filling.pack_replicas and chunk_seconds is None:
        chunks = pack_chunks(chunks, filling.pack_replicas)
    common = (on_rows, on_steps, limits, chunk_seconds, filling.unroll)
    # Ctrl-C: every chunk in training backs up at its next evaluation, then
    # KeyboardInterrupt; a second one ends the process, whatever it does.
    with stop_at_interrupt(end_process=SECOND_CTRL_C):
        if filling.processes_per_device > 1 and len(chunks) > 1:
            train_in_processes(chunks, filling.processes_per_device, *common)
            return
        devices = local_devices()
        if filling.chunks_per_device > 1:  # JAX_ONLY: the JAX engine
            import jax

            devices = (devices or jax.devices()[:1]) * filling.chunks_per_device
        if devices and len(chunks) > 1:
            _train_on_devices(chunks, devices, *common)
            return
        for index, chunk in enumerate(chunks):  # one after the other
            if not fits(chunk, limits, chunk_seconds):
                raise TimeLimitReached(
                    f"the sweep stopped before a chunk that would not finish by "
                    f"its time limit, with {len(chunks) - index} chunks left"
                )
            train_unit(chunk, on_rows, on_steps, limits, filling.unroll)
            if index + 1 < len(chunks) and limits.out_of_time():
                left = len(chunks) - index - 1
                raise TimeLimitReached(
                    f"the sweep stopped at its time limit with {left} chunks left"
                )


def _train_on_devices(
    chunks, devices, on_rows, on_steps, limits, chunk_seconds=None, unroll=1
):
    """A thread per device (listed twice: two) trains one chunk at a time there;
    this one writes the rows; past the deadline none starts (`raise_stopped`)."""
    import queue
    import threading

    import jax

    todo = queue.SimpleQueue()
    for chunk in chunks:
        todo.put(chunk)
    done = queue.SimpleQueue()
    lock = threading.Lock()
    finished = object()  # a worker's last message

    def locked_steps(steps, trained=True):
        with lock:
            on_steps(steps, trained)

    def worker(device):
        trained = 0
        try:
            with jax.default_device(device):
                while not (trained and limits.out_of_time()):
                    try:
                        chunk = todo.get_nowait()
                    except queue.Empty:
                        return
                    if not fits(chunk, limits, chunk_seconds):
                        todo.put(chunk)  # left for the next sweep
                        return
                    train_unit(chunk, done.put, locked_steps, limits, unroll)
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
    running, stopped = len(threads), []
    while running:
        outcome = done.get()
        if outcome is finished:
            running -= 1
        elif isinstance(outcome, TimeLimitReached | KeyboardInterrupt):
            stopped.append(outcome)  # the others stop at their next backup
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            on_rows(outcome)
    for thread in threads:
        thread.join()
    raise_stopped(stopped, todo.qsize())


def train_in_processes(
    units, processes, on_rows, on_steps, limits, chunk_seconds, unroll
):
    """`processes` spawned processes per device, each asking for its next unit
    (a chunk or a pack) when free; this one writes the rows they send, reports
    their progress and records their JAX compile times (`jax.monitoring`).
    Ctrl-C stops every process at its next evaluation, after its backup."""
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
    """`(process, task queue)` of `processes` workers a device, at most `units`."""
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
