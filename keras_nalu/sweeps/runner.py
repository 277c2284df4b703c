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

This module also re-exports the names of `grid` and `results`, its former
contents, so that imports from `keras_nalu.sweeps.runner` keep working.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from keras_nalu._validation import check_positive_int
from keras_nalu.experiments import ExperimentConfig
from keras_nalu.export import check_output_folder
from keras_nalu.sweeps.engines.base import recipe, total_steps, vectorizable
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


@dataclasses.dataclass(frozen=True)
class Chunk:
    """Runs trained together as one vectorized run of replicas.

    A chunk is one configuration and some of its seeds; on an engine that
    trains runs of different tasks together (the JAX engine), it may hold
    more configurations of the same recipe (`more`), each with its seeds.
    """

    config: ExperimentConfig
    seeds: tuple[int, ...]
    more: tuple[tuple[ExperimentConfig, tuple[int, ...]], ...] = ()

    @property
    def parts(self) -> tuple[tuple[ExperimentConfig, tuple[int, ...]], ...]:
        """Every `(config, seeds)` of the chunk, the first one first."""
        return ((self.config, self.seeds), *self.more)

    @property
    def runs(self) -> list[ExperimentConfig]:
        """One config per replica, its seed set."""
        return [
            dataclasses.replace(config, seed=seed)
            for config, seeds in self.parts
            for seed in seeds
        ]

    @property
    def replicas(self) -> int:
        return sum(len(seeds) for _, seeds in self.parts)

    @property
    def steps(self) -> int:
        """Seed-steps of the chunk: replicas × optimizer steps."""
        return self.replicas * total_steps(self.config)


def plan_chunks(
    configs: Sequence[ExperimentConfig],
    seeds: Sequence[int],
    chunk_size: int,
    done: set[tuple[str, int]] = frozenset(),
    batch: bool = False,
) -> list[Chunk]:
    """Chunks of at most `chunk_size` seeds per configuration, minus `done`.

    The chunks are cut from the full seed list before finished pairs are
    removed, so a resumed sweep trains the same replica groups. With
    `batch`, chunks of configurations that share their recipe (model and
    training, `keras_nalu.sweeps.engines.RECIPE_FIELDS`) and differ only in
    the task are then packed together, up to `chunk_size` replicas a chunk,
    so that one vectorized run fills a GPU.

    Example:

    >>> chunks = plan_chunks([ExperimentConfig()], range(5), chunk_size=2)
    >>> [chunk.seeds for chunk in chunks]
    [(0, 1), (2, 3), (4,)]
    >>> grid = [ExperimentConfig(operation=op) for op in ("add", "sub")]
    >>> [chunk.replicas for chunk in plan_chunks(grid, range(3), 10, batch=True)]
    [6]
    """
    check_positive_int("sweep", "chunk_size", chunk_size)
    seeds = list(seeds)
    chunks = []
    for config in configs:
        key = config_id(config)
        for start in range(0, len(seeds), chunk_size):
            todo = tuple(
                seed
                for seed in seeds[start : start + chunk_size]
                if (key, seed) not in done
            )
            if todo:
                chunks.append(Chunk(config, todo))
    return _packed(chunks, chunk_size) if batch else chunks


def _packed(chunks: list[Chunk], chunk_size: int) -> list[Chunk]:
    """Chunks of one recipe packed together, first fit, in their order."""
    bins: dict[tuple, list[list]] = {}
    packed: list[list] = []
    for chunk in chunks:
        part = (chunk.config, chunk.seeds)
        if not vectorizable(chunk.config):
            packed.append([part])
            continue
        same_recipe = bins.setdefault(recipe(chunk.config), [])
        for parts in same_recipe:
            if sum(len(seeds) for _, seeds in parts) + len(chunk.seeds) <= chunk_size:
                parts.append(part)
                break
        else:
            same_recipe.append([part])
            packed.append(same_recipe[-1])
    return [Chunk(*parts[0], tuple(parts[1:])) for parts in packed]


def chunk_backup(results_path: str | os.PathLike, chunk: Chunk) -> Path:
    """Where a sweep backs up a chunk in training: beside its results file.

    `<results>.backup/<config id>-<first seed>-<digest>.npz`, one file per
    chunk (the digest covers every config and seed of the chunk), deleted
    once the chunk has finished training.

    Example:

    >>> chunk = Chunk(ExperimentConfig(), (0, 1, 2))
    >>> chunk_backup("results/sweep.csv", chunk).parent.name
    'sweep.csv.backup'
    """
    path = Path(results_path)
    text = ",".join(map(str, chunk.seeds))
    for config, seeds in chunk.more:
        text += f";{config_id(config)}:" + ",".join(map(str, seeds))
    digest = hashlib.sha256(text.encode()).hexdigest()
    name = f"{config_id(chunk.config)}-{chunk.seeds[0]}-{digest[:8]}.npz"
    return path.with_name(path.name + ".backup") / name


def train_chunk(
    chunk: Chunk | ExperimentConfig,
    seeds: Sequence[int] | None = None,
    progress=False,
    backup: str | os.PathLike | None = None,
    backup_every: float = 600.0,
):
    """The result rows of one chunk (runs in a Ray worker too).

    A chunk is trained as vectorized replicas on the Keras backend's engine,
    backed up to `backup` (if given) every `backup_every` seconds and
    resumed from it; a preset that cannot be vectorized (see `vectorizable`)
    trains its seeds one after the other with `run_experiment`, which gives
    the same rows with `replicas` = 1 (and is not backed up).

    Args:
        chunk: a `Chunk`, or a config whose `seeds` follow.
        seeds: with a config, the seeds.
        progress: as for `train_replicas`.
        backup, backup_every: as for `train_replicas`.
    """
    from keras_nalu.sweeps.engines import (
        NotVectorizableError,
        train_batched,
        train_replicas,
    )

    if isinstance(chunk, ExperimentConfig):
        chunk = Chunk(chunk, tuple(seeds))
    config = chunk.config
    try:
        if not vectorizable(config):
            raise NotVectorizableError(config.model)
        if chunk.more:
            records = train_batched(
                chunk.runs, progress=progress, backup=backup, backup_every=backup_every
            )
        else:
            records = train_replicas(
                config,
                list(chunk.seeds),
                progress=progress,
                backup=backup,
                backup_every=backup_every,
            )
    except NotVectorizableError:  # this engine cannot: one seed at a time
        records = []
        for part, part_seeds in chunk.parts:
            records += _train_one_by_one(part, part_seeds, progress)
    return [record_row(record) for record in records]


def _train_one_by_one(config, seeds, progress) -> list[dict]:
    import keras

    from keras_nalu.experiments import run_experiment

    records = []
    for seed in seeds:
        keras.backend.clear_session()
        _, record = run_experiment(
            dataclasses.replace(config, seed=seed), verbose=progress is True
        )
        records.append(
            {
                **record,
                "replicas": 1,
                "engine": keras.backend.backend(),
                "device": _keras_device(),
            }
        )
        if callable(progress):
            # the callback counts steps of the whole chunk (all its replicas
            # at once), so one finished seed is 1/len(seeds) of a chunk step
            progress(total_steps(config) // len(seeds))
    return records


def _keras_device() -> str:
    """The device `model.fit` trains on, in words ("cpu" or the GPU's name)."""
    import keras

    if keras.backend.backend() == "jax":
        import jax

        device = jax.devices()[0]
        return "cpu" if device.platform == "cpu" else device.device_kind
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        gpus = tf.config.list_logical_devices("GPU")
        if gpus:
            details = tf.config.experimental.get_device_details(
                tf.config.list_physical_devices("GPU")[0]
            )
            return details.get("device_name", "gpu")
    return "cpu"


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
