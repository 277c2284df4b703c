"""The training loop of a replica run: blocks, evaluations, backups, stops."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

BACKUP_EVERY = 600.0
"""Seconds between two backups of a run in training, unless told: a killed
run or sweep loses at most 10 minutes of training."""


@dataclasses.dataclass(frozen=True)
class TrainingLimits:
    """Where a run is backed up, how often, and when it stops.

    Attributes:
        backup: the run's backup file (`ReplicaRun.save_backup`), or None
            for no backups.
        backup_every: seconds between two backups; 0 after every evaluation.
        deadline: a `time.monotonic()` time: at the first evaluation at or
            after it, a run writes its backup (if it has one) and raises
            `TimeLimitReached`, unless it has finished. None for no limit.

    Example:

    >>> TrainingLimits(backup="chunk.npz").backup_every
    600.0
    """

    backup: str | os.PathLike | None = None
    backup_every: float = BACKUP_EVERY
    deadline: float | None = None

    def out_of_time(self) -> bool:
        """Whether the `deadline` has passed."""
        return self.deadline is not None and time.monotonic() >= self.deadline


class TimeLimitReached(RuntimeError):
    """A run reached its `deadline` and stopped after saving its backup.

    The same call with the same backup file continues it. A sweep chunk
    whose seeds train one at a time stops between two seeds instead, without
    a backup; its `rows` attribute holds the rows of the seeds it finished.
    """


# Set by the first Ctrl-C inside `stop_at_interrupt`; read by every run's loop.
_stop_requested = threading.Event()

SAME_CTRL_C = 1.0
"""Seconds within which SIGINTs count as one Ctrl-C: a terminal sends one to
every process of its group, and `timeout -s INT` one to its command and one
to the command's group, so one Ctrl-C may arrive twice, microseconds apart."""

RUN_AGAIN = "run it again to continue"
"""What a stop's message ends with when running the same again continues."""


def stop_requested() -> bool:
    """Whether a Ctrl-C inside `stop_at_interrupt` asked the runs to stop."""
    return _stop_requested.is_set()


def request_stop() -> None:
    """Asks every run to stop at its next evaluation, as a Ctrl-C does."""
    _stop_requested.set()


class _CtrlC:
    """The SIGINT handler of one `stop_at_interrupt`: counts its Ctrl-Cs.

    Python runs a handler in the main thread between two bytecodes; with
    `end_process`, a thread of its own reads each signal as it comes (the
    wakeup file descriptor), so a second Ctrl-C ends the process even while
    the main thread waits on XLA or on the threads that train.
    """

    def __init__(self, second_stops_now: bool, end_process: str | None):
        self.second_stops_now = second_stops_now
        self.end_process = end_process
        self.first: float | None = None  # time.monotonic() of the first

    def __call__(self, signum, frame) -> None:
        if self.end_process is not None:  # the watcher counts; this thread
            _stop_requested.set()  # sees the stop from its next bytecode on
        elif self.second_ctrl_c():
            raise KeyboardInterrupt

    def second_ctrl_c(self) -> bool:
        """Counts a SIGINT: True if it is a second Ctrl-C that stops now."""
        now = time.monotonic()
        if self.first is None:
            self.first = now
            _stop_requested.set()
            return False
        return self.second_stops_now and now - self.first >= SAME_CTRL_C

    def settle(self) -> None:
        """Waits out `SAME_CTRL_C` after a first Ctrl-C: a late signal of it
        is then not taken for a Ctrl-C after the block."""
        if self.first is not None:
            time.sleep(max(0.0, self.first + SAME_CTRL_C - time.monotonic()))

    @contextlib.contextmanager
    def watched(self):
        """With `end_process`, the thread that reads the signals as they come."""
        if self.end_process is None:
            yield
            return
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        watcher = threading.Thread(
            target=self._watch, args=(read_end,), name="Ctrl-C", daemon=True
        )
        watcher.start()
        try:
            yield
        finally:
            signal.set_wakeup_fd(previous)
            os.close(write_end)  # the watcher reads the end of the pipe
            watcher.join()
            os.close(read_end)

    def _watch(self, read_end: int) -> None:
        while signals := os.read(read_end, 64):
            for signum in signals:
                if signum == signal.SIGINT and self.second_ctrl_c():
                    # stderr's Python buffer may be held by another thread
                    os.write(2, f"{self.end_process}\n".encode())
                    os._exit(130)


@contextlib.contextmanager
def stop_at_interrupt(second_stops_now: bool = True, end_process: str | None = None):
    """Within it, Ctrl-C stops every run at its next evaluation, after a backup.

    The first SIGINT (those of `SAME_CTRL_C` seconds count as one) asks each
    `ReplicaRun.train`, in any thread, to back up at its next evaluation and
    raise `KeyboardInterrupt`. A second Ctrl-C raises `KeyboardInterrupt` in
    the main thread at once, or, with `end_process`, prints that line on
    stderr and ends the process with status 130 whatever it is doing. Outside
    the main thread, or within another `stop_at_interrupt`, the block runs
    as it is.

    Args:
        second_stops_now: whether a second Ctrl-C stops at once; False for a
            Ray worker, to which Ray's cancellation comes as SIGINT, maybe
            more than once, and which Ray ends itself.
        end_process: None, or the line to print before a second Ctrl-C
            ends the process.
    """
    if threading.current_thread() is not threading.main_thread() or isinstance(
        signal.getsignal(signal.SIGINT), _CtrlC
    ):
        yield
        return
    ctrl_c = _CtrlC(second_stops_now, end_process)
    previous = signal.signal(signal.SIGINT, ctrl_c)
    try:
        with ctrl_c.watched():
            try:
                yield
            finally:
                ctrl_c.settle()
    finally:
        signal.signal(signal.SIGINT, previous or signal.default_int_handler)
        _stop_requested.clear()


def stop_with(kind: type[BaseException], where: str, again: bool):
    """A stop (`KeyboardInterrupt`, `TimeLimitReached`) saying where a run stopped.

    Its message is `where`, then `RUN_AGAIN` if `again`; both are attributes.
    """
    stop = kind(f"{where}: {RUN_AGAIN}" if again else where)
    stop.where, stop.again = where, again
    return stop


def stopped_together(stops: list[BaseException]) -> BaseException:
    """One stop for runs that stopped together: a `KeyboardInterrupt` if any
    did, else a `TimeLimitReached`, naming where each stopped."""
    if len(stops) == 1:
        return stops[0]
    interrupted = any(isinstance(stop, KeyboardInterrupt) for stop in stops)
    kind = KeyboardInterrupt if interrupted else TimeLimitReached
    wheres = [getattr(stop, "where", str(stop)) for stop in stops]
    again = any(getattr(stop, "again", False) for stop in stops)
    return stop_with(kind, "; ".join(wheres), again)


class RunLoop:
    """One run's side of a training loop: evaluations, backups, progress, stops
    (the engine trains the steps). `progress`, `limits`: as for `ReplicaRun.train`.
    """

    def __init__(
        self,
        run,
        progress: bool | Callable[[int], None] = True,
        limits: TrainingLimits | None = None,
    ):
        limits = TrainingLimits() if limits is None else limits
        if limits.backup_every < 0:
            raise ValueError(
                f"train expects backup_every >= 0 seconds. "
                f"Received: backup_every={limits.backup_every!r}"
            )
        self.run = run
        self.progress = progress
        self.limits = limits
        self.backup = limits.backup
        self.bar = None
        if progress is True:
            from tqdm.auto import tqdm

            self.bar = tqdm(
                total=run.total_steps,
                initial=run.step,
                desc=run.description(),
                unit="step",
                dynamic_ncols=True,
            )
        elif callable(progress) and run.step:
            # the steps a restored run starts from: trained before, not now
            getattr(progress, "resumed", progress)(run.step)
        self.started = self.last_backup = time.perf_counter()
        self.closed = False

    def begin(self) -> None:
        """Evaluates step 0 of a new run; inside `stop_at_interrupt`."""
        run = self.run
        if _stop_requested.is_set():  # asked before this run started
            raise _interrupted(run, self.backup if run.step else None)
        if run.step == 0 and not run.verdicts.evaluated:
            run.evaluate(0)

    def next_stop(self) -> int | None:
        """The step of the next evaluation, or None once the run has ended."""
        run = self.run
        if run.step >= run.total_steps or not run.verdicts.active.any():
            return None
        every = run.config.eval_every
        return min((run.step // every + 1) * every, run.total_steps)

    def trained(self, steps: int) -> None:
        """The engine trained `steps` more steps, not past `next_stop()`."""
        run = self.run
        stop = self.next_stop()
        run.step += steps
        if run.step < stop:  # a part of a block (runs trained together)
            self._report(steps)
            return
        run.evaluate(run.step)
        now = time.perf_counter()
        out_of_time = self.limits.out_of_time()
        interrupted = _stop_requested.is_set()
        due = now - self.last_backup >= self.limits.backup_every
        if self.backup is not None and (out_of_time or interrupted or due):
            run.wall_time += now - self.started
            self.started = self.last_backup = now
            run.save_backup(self.backup)
        self._report(steps)
        if self.next_stop() is not None:
            if out_of_time:
                raise stop_with(
                    TimeLimitReached,
                    f"{run.description()} stopped at its time limit at "
                    f"step {run.step} of {run.total_steps}"
                    + ("" if self.backup is None else f"; backup: {self.backup}"),
                    again=False,
                )
            if interrupted:
                raise _interrupted(run, self.backup)

    def _report(self, steps: int) -> None:
        if self.bar is not None:
            self.bar.update(steps)
            self.bar.set_postfix(
                running=int(self.run.verdicts.active.sum()), refresh=False
            )
        elif callable(self.progress):
            self.progress(steps)

    def close(self) -> None:
        """Adds the time since the last backup to the run's wall time."""
        if self.closed:
            return
        self.closed = True
        self.run.wall_time += time.perf_counter() - self.started
        if self.bar is not None:
            self.bar.close()


def train_loop(
    runs: Sequence,
    progress: Sequence[bool | Callable[[int], None]] | None = None,
    limits: Sequence[TrainingLimits | None] | None = None,
    on_finished: Callable[[int], None] | None = None,
) -> None:
    """Trains runs from their steps to their last steps, each as if alone.

    Several runs advance together to the nearest evaluation of any of them,
    in one program of their engine (`ReplicaRun.train_together`, JAX); each
    keeps its own `RunLoop`, and one that has ended drops out.

    `runs` are of one engine; `progress`, `limits`: per run, as for
    `ReplicaRun.train` (None for none); `on_finished(index)` is called once a
    run has ended, before the others go on. Raises `TimeLimitReached` or
    `KeyboardInterrupt` as one `stopped_together`.
    """
    runs = list(runs)
    if len(runs) > 1 and not all(run.supports_packing for run in runs):
        raise ValueError(
            f"The {runs[0].engine} engine trains one run at a time; runs trained "
            "together need the JAX engine (KERAS_BACKEND=jax)."
        )
    progress = [False] * len(runs) if progress is None else progress
    limits = [None] * len(runs) if limits is None else limits
    loops = [RunLoop(*arguments) for arguments in zip(runs, progress, limits)]
    stopped, programs = [], {}
    try:
        with stop_at_interrupt():
            for loop in loops:
                loop.begin()
            training = list(enumerate(loops))
            while training := _training(training, on_finished):
                steps = min(loop.next_stop() - loop.run.step for _, loop in training)
                running = [loop.run for _, loop in training]
                type(running[0]).train_together(running, steps, programs)
                for _, loop in training:
                    try:
                        loop.trained(steps)
                    except (TimeLimitReached, KeyboardInterrupt) as stop:
                        stopped.append(stop)  # the others go on to theirs
                        loop.close()
    finally:
        for loop in loops:
            loop.close()
    if stopped:
        raise stopped_together(stopped)


def _training(loops, on_finished) -> list:
    """The `(index, loop)`s still training; those that have ended, finished."""
    going = []
    for index, loop in loops:
        if loop.closed:  # stopped early
            continue
        if loop.next_stop() is not None:
            going.append((index, loop))
            continue
        loop.close()
        loop.run.verdicts.finish(loop.run.step)
        if on_finished is not None:
            on_finished(index)
    return going


def _interrupted(run, backup) -> KeyboardInterrupt:
    """What Ctrl-C raises: where the run stopped, and its backup there."""
    where = f"{run.description()} stopped at step {run.step:,} of "
    where += f"{run.total_steps:,}"
    backed_up = backup is not None and Path(backup).exists()
    if backed_up:
        where += f", backed up to {backup}"
    return stop_with(KeyboardInterrupt, where, again=backed_up)
