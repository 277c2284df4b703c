"""Resumable sweeps: a grid of configurations × seeds into one results CSV.

Each configuration of the grid (`keras_nalu.sweeps.grid`) has its seeds split
into chunks of at most `chunk_size`, and each chunk is trained as vectorized
replicas (`train_replicas`). When a chunk finishes, its rows are added to the
results file (`keras_nalu.sweeps.results`), which is always a complete table.
Running the same sweep again skips the (config, seed) pairs already in the
file. The chunk in training is backed up every 10 minutes (`backup_every`)
to `<results>.backup/`, and the rerun continues it from there, so a kill
loses at most those minutes, even of a chunk that takes hours.

Chunks run one after the other in this process, side by side on the local
JAX devices, or as Ray tasks (`ray_address`); in every case only this
process writes the file.

The chunks themselves (`Chunk`, `plan_chunks`, `train_chunk`) live in
`keras_nalu.sweeps.chunks`. This module also re-exports the names of
`chunks`, `grid` and `results`, its former contents, so that imports from
`keras_nalu.sweeps.runner` keep working.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import pandas as pd

from keras_nalu.export import check_output_folder
from keras_nalu.sweeps.chunks import (
    Chunk,
    chunk_backup,
    plan_chunks,
    train_chunk,
)
from keras_nalu.sweeps.grid import (
    MAX_SEEDS,
    grid_configs,
    load_grid_file,
    normalize_grid,
    parse_grid,
    parse_seeds,
)
from keras_nalu.sweeps.results import (
    CONFIG_COLUMNS,
    CONFIG_FIELDS,
    LATER_FIELDS,
    LATER_RECORD_FIELDS,
    RECORD_FIELDS,
    RESULT_COLUMNS,
    check_results_path,
    config_id,
    read_results,
    record_row,
    results_lock,
    write_results,
)


def _engine_batches() -> bool:
    """Whether the Keras backend's engine trains runs of different tasks together."""
    from keras_nalu.sweeps.engines import engine_class

    return engine_class().supports_batched


def _local_devices() -> list:
    """The accelerators chunks can train on side by side (JAX engine), or []."""
    import keras

    if keras.backend.backend() != "jax":
        return []
    import jax

    devices = jax.devices()
    return devices if len(devices) > 1 else []


def _local_backend(chunks, on_rows, on_steps, backup_of=None, backup_every=600.0):
    import keras

    with contextlib.ExitStack() as stack:
        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            # Every chunk traces its own training function; TF's retracing
            # warning about that says nothing useful here.
            logger = tf.get_logger()
            stack.callback(logger.setLevel, logger.level)
            logger.setLevel("ERROR")
        devices = _local_devices()
        if devices and len(chunks) > 1:
            _train_on_devices(
                chunks, devices, on_rows, on_steps, backup_of, backup_every
            )
        else:
            _train_chunks(chunks, on_rows, on_steps, backup_of, backup_every)


def _train_one_chunk(chunk, on_steps, backup_of, backup_every):
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
    )
    on_steps(max(chunk.steps - reported, 0))
    return rows


def _train_chunks(chunks, on_rows, on_steps, backup_of=None, backup_every=600.0):
    for chunk in chunks:
        on_rows(_train_one_chunk(chunk, on_steps, backup_of, backup_every))


def _train_on_devices(chunks, devices, on_rows, on_steps, backup_of, backup_every):
    """One chunk per device at a time, each in a thread pinned to its device.

    JAX runs the threads' computations side by side; only this thread writes
    the results (`on_rows`).
    """
    import queue
    import threading

    import jax

    todo = queue.SimpleQueue()
    for chunk in chunks:
        todo.put(chunk)
    done = queue.SimpleQueue()
    lock = threading.Lock()

    def locked_steps(steps):
        with lock:
            on_steps(steps)

    def worker(device):
        with jax.default_device(device):
            while True:
                try:
                    chunk = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    done.put(
                        _train_one_chunk(chunk, locked_steps, backup_of, backup_every)
                    )
                except BaseException as error:  # handed to the main thread
                    done.put(error)
                    return

    threads = [
        threading.Thread(target=worker, args=(device,), daemon=True)
        for device in devices[: len(chunks)]
    ]
    for thread in threads:
        thread.start()
    for _ in chunks:
        outcome = done.get()
        if isinstance(outcome, BaseException):
            raise outcome
        on_rows(outcome)
    for thread in threads:
        thread.join()


def ray_options(engine: str, cluster_gpus: float) -> dict:
    """The Ray resources of one chunk: a GPU each where the cluster has them.

    With the JAX engine on a cluster that has GPUs, every chunk asks for one
    GPU (Ray makes it the only one the task sees), so the chunks of a sweep
    spread over the cluster's GPUs; otherwise one CPU. The workers run the
    driver's Keras backend.

    Example:

    >>> ray_options("jax", cluster_gpus=8)["num_gpus"]
    1
    >>> ray_options("tensorflow", cluster_gpus=8)["num_gpus"]
    0
    """
    gpus = 1 if engine == "jax" and cluster_gpus >= 1 else 0
    return {
        "num_cpus": 1,
        "num_gpus": gpus,
        "runtime_env": {"env_vars": {"KERAS_BACKEND": engine}},
    }


def _ray_backend(chunks, on_rows, on_steps, address: str):
    import keras

    try:
        import ray
    except ImportError:
        raise ValueError(
            "the Ray backend needs ray: pip install 'keras-arithmetic-units[ray]'"
        ) from None
    started = False
    if not ray.is_initialized():
        if address == "local":
            ray.init(include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
        started = True
    options = ray_options(
        keras.backend.backend(), ray.cluster_resources().get("GPU", 0)
    )
    remote = ray.remote(**options)(train_chunk)
    pending = {}
    try:
        pending = {remote.remote(chunk): chunk for chunk in chunks}
        while pending:
            (ready,), _ = ray.wait(list(pending), num_returns=1)
            chunk = pending.pop(ready)
            on_rows(ray.get(ready))
            on_steps(chunk.steps)
    finally:
        for reference in pending:
            ray.cancel(reference, force=True)
        if started:
            ray.shutdown()


@dataclasses.dataclass
class SweepOutcome:
    """What a sweep did: the results file, its rows of this sweep, the counts."""

    path: Path
    results: pd.DataFrame
    new_rows: int
    skipped: int
    group_by: tuple[str, ...]


def run_sweep(
    grid: Mapping,
    seeds: str | Iterable[int],
    results_path: str | os.PathLike,
    chunk_size: int = 100,
    ray_address: str | None = None,
    progress: bool = True,
    on_chunk: Callable[[list[dict]], None] | None = None,
    backup_every: float | None = 600.0,
) -> SweepOutcome:
    """Trains every (configuration, seed) of a grid that the results file lacks.

    Args:
        grid: `{field or "f1:f2": values}` (see `normalize_grid`), or the
            output of `parse_grid` / `load_grid_file`.
        seeds: `"0-99"`, `"0,3,7-9"` or a list of integers.
        results_path: the results CSV; created if missing, else resumed.
        chunk_size: at most this many runs train together as replicas. On
            the JAX engine, chunks of configurations that differ only in
            their task (operation, ranges) are packed together up to this
            size, so a large `chunk_size` fills a GPU.
        ray_address: None trains the chunks here, one after the other;
            `"local"` starts a Ray runtime on this machine, `"auto"` or an
            address joins a cluster (an already initialized Ray is used as
            is). Chunks become Ray tasks, each with a GPU of its own where
            the JAX engine runs on a cluster with GPUs (`ray_options`); this
            process writes the file. On one machine with several JAX
            devices, chunks train side by side, one per device.
        progress: one tqdm bar over all seed-steps of the sweep, with an ETA.
        on_chunk: called with the rows of each chunk once they are on disk.
        backup_every: seconds between two backups of the chunk in training
            (see `chunk_backup`); a rerun of a killed sweep continues that
            chunk from its backup, with the rows an uninterrupted run gives.
            None for no backups; Ray chunks are never backed up.

    Returns:
        A `SweepOutcome`; its `results` are this sweep's rows of the file.

    Raises:
        ValueError: a bad grid or seeds, or a results file that is not one
            (left untouched).

    Example:

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.csv"
    >>> outcome = run_sweep(
    ...     {"model": ["nau"], "input_size": [10], "iterations": [100],
    ...      "eval_every": [100]}, seeds="0-1", results_path=path,
    ...     progress=False)
    >>> outcome.new_rows, list(outcome.results["seed"])
    (2, [0, 1])
    >>> run_sweep({"model": ["nau"], "input_size": [10], "iterations": [100],
    ...            "eval_every": [100]}, "0-1", path, progress=False).skipped
    2
    """
    configs = grid_configs(grid)
    seeds = parse_seeds(seeds)
    if backup_every is not None and not backup_every >= 0:
        raise ValueError(
            "run_sweep expects backup_every to be None or >= 0 seconds. "
            f"Received: backup_every={backup_every!r}"
        )
    path = check_results_path(results_path)
    check_output_folder(path.parent, "results_path", results_path)
    group_by = _group_keys(normalize_grid(grid))
    with results_lock(path):
        table = read_results(path)
        done = set(zip(table["config_id"].astype(str), table["seed"].astype(int)))
        chunks = plan_chunks(configs, seeds, chunk_size, done, batch=_engine_batches())
        planned_pairs = {(config_id(c), s) for c in configs for s in seeds}
        skipped = len(planned_pairs & done)
        state = {"table": table, "new": 0}

        def on_rows(rows):
            new = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
            frames = [state["table"], new] if len(state["table"]) else [new]
            state["table"] = pd.concat(frames, ignore_index=True)
            write_results(state["table"], path)
            state["new"] += len(rows)
            if on_chunk is not None:
                on_chunk(rows)

        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(
                total=sum(chunk.steps for chunk in chunks),
                desc=f"sweep {len(chunks)} chunks",
                unit="seed-step",
                unit_scale=True,
                dynamic_ncols=True,
            )

        def on_steps(steps):
            if bar is not None:
                bar.update(steps)

        try:
            if chunks and ray_address is None:
                backup_of = None
                if backup_every is not None:
                    backup_of = functools.partial(chunk_backup, path)
                _local_backend(
                    chunks, on_rows, on_steps, backup_of, backup_every or 0.0
                )
            elif chunks:
                _ray_backend(chunks, on_rows, on_steps, ray_address)
        finally:
            if bar is not None:
                bar.close()
        with contextlib.suppress(OSError):  # only if no backup is left in it
            path.with_name(path.name + ".backup").rmdir()
        table = state["table"]
    ids = {config_id(c) for c in configs}
    mine = table[
        table["config_id"].astype(str).isin(ids) & table["seed"].isin(seeds)
    ].reset_index(drop=True)
    return SweepOutcome(path, mine, state["new"], skipped, group_by)


def _group_keys(grid) -> tuple[str, ...]:
    """operation, model, then every other field the grid varies."""
    varied = [key for keys, values in grid.items() if len(values) > 1 for key in keys]
    return tuple(dict.fromkeys(["operation", "model", *varied]))


def summary_markdown(outcome: SweepOutcome) -> str:
    """The paper-style Markdown table of a sweep's rows (`summary.summarize`)."""
    from keras_nalu.sweeps.summary import load_results, summarize, to_markdown

    results = load_results(outcome.path)
    keep = results["config_id"].astype(str).isin(set(outcome.results["config_id"]))
    results = results[keep]
    if results.empty:
        return "(no rows)\n"
    for key in outcome.group_by:  # None values are empty cells: show "None"
        results[key] = results[key].astype(object).where(results[key].notna(), "None")
    return to_markdown(summarize(results, by=list(outcome.group_by)))


__all__ = [
    "CONFIG_COLUMNS",
    "CONFIG_FIELDS",
    "LATER_FIELDS",
    "LATER_RECORD_FIELDS",
    "MAX_SEEDS",
    "RECORD_FIELDS",
    "RESULT_COLUMNS",
    "Chunk",
    "SweepOutcome",
    "config_id",
    "grid_configs",
    "load_grid_file",
    "normalize_grid",
    "parse_grid",
    "parse_seeds",
    "plan_chunks",
    "ray_options",
    "read_results",
    "record_row",
    "run_sweep",
    "summary_markdown",
    "train_chunk",
]
