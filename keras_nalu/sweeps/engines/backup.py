"""Backups of a replica run: its whole `RunState` in one `.npz` file, and back
(the layout and format 1: docs/architecture.md, "What each engine does")."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from pathlib import Path

import numpy as np

from keras_nalu._files import atomic_write
from keras_nalu._validation import is_integer, is_real
from keras_nalu.evaluation import Evaluation, EvaluationSummary
from keras_nalu.experiments import ExperimentConfig, total_steps, without_later_defaults
from keras_nalu.sweeps.engines.state import RunState
from keras_nalu.sweeps.engines.verdicts import Verdicts

BACKUP_FORMAT = 2
"""The version of the backup file's layout that `save_backup` writes."""

READABLE_FORMATS = (1, 2)
"""The layouts that are read and restored; another version is refused."""


def _state_text(stored: np.ndarray) -> str:
    """The JSON text of a backup's `state` array, in either layout."""
    if stored.dtype == np.uint8 and stored.ndim == 1:  # format 2: UTF-8 bytes
        return stored.tobytes().decode("utf-8")
    if stored.dtype.kind == "U" and stored.ndim == 0:  # format 1: a NumPy str
        return str(stored)
    raise TypeError(f"a state of dtype {stored.dtype} and shape {stored.shape}")


def _load_backup(path: Path, count: int = 0) -> tuple[dict, list]:
    """The state and the first `count` arrays of a backup, or one ValueError."""
    unreadable = f"{path} is not a readable sweep backup"
    try:
        data = np.load(path, allow_pickle=False)
    except Exception:  # noqa: BLE001 - any damage: zip, .npy header, pickles
        raise ValueError(
            f"{unreadable}: it is not a NumPy .npz archive (damaged, or a file of "
            "another kind)."
        ) from None
    if not isinstance(data, np.lib.npyio.NpzFile):  # a .npy file: one array
        raise ValueError(f"{unreadable}: it is a single NumPy array, not a .npz.")
    with data:
        if "state" not in data.files:
            raise ValueError(
                f"{unreadable}: it holds no sweep state, only the arrays "
                f"{', '.join(data.files[:4]) or '(none)'}."
            )
        missing = [f"variable_{i}" for i in range(count)]
        missing = [name for name in missing if name not in data.files]
        if missing:
            raise ValueError(f"{unreadable}: its {missing[0]} is missing.")
        try:
            state = json.loads(_state_text(data["state"]))
            arrays = [data[f"variable_{i}"] for i in range(count)]
        except Exception:  # noqa: BLE001 - a damaged member: zip, header, JSON
            raise ValueError(f"{unreadable}: its contents are damaged.") from None
    if not isinstance(state, dict):
        raise ValueError(f"{unreadable}: its state is not a sweep's.")
    return state, arrays


def _summary_ok(config) -> bool:
    try:
        EvaluationSummary.from_config(config)
    except (ValueError, OverflowError):  # OverflowError: an int past float's range
        return False
    return True


def _check_state(path: Path, state: dict, replicas: int) -> None:
    """Raises one ValueError unless the backup's bookkeeping is whole."""

    def rows_ok(rows) -> bool:
        return isinstance(rows, list) and all(
            isinstance(row, list)
            and len(row) == 4
            and is_integer(row[0])
            and all(is_real(v) for v in row[1:])
            for row in rows
        )

    def per_replica(key, ok) -> bool:
        values = state.get(key)
        return (
            isinstance(values, list)
            and len(values) == replicas
            and all(ok(v) for v in values)
        )

    checks = {
        "format": state.get("format") in READABLE_FORMATS,
        "step": is_integer(state.get("step")) and state["step"] >= 0,
        "wall_time": is_real(state.get("wall_time"))
        and math.isfinite(state["wall_time"])
        and state["wall_time"] >= 0,
        "iterations": per_replica(
            "iterations", lambda v: v is None or (is_integer(v) and v >= 0)
        ),
        "loss_diverged": per_replica("loss_diverged", lambda v: isinstance(v, bool)),
        "active": per_replica("active", lambda v: isinstance(v, bool)),
    }
    if state.get("format") == 1:  # every evaluation
        checks["evaluations"] = per_replica("evaluations", rows_ok)
    else:
        checks["summaries"] = per_replica("summaries", _summary_ok)
    bad = [key for key, ok in checks.items() if not ok]
    if bad:
        raise ValueError(f"{path} is a damaged sweep backup (bad {', '.join(bad)}).")


def _folded(state: dict, thresholds) -> tuple[list, list | None]:
    """A checked state's summaries (format 1: its evaluations folded with
    `thresholds`), and its evaluations if it has them (format 1 only)."""
    if state["format"] == 1:
        rows = state["evaluations"]
        histories = [[Evaluation(*row) for row in replica] for replica in rows]
        summaries = []
        for evaluations, threshold in zip(histories, thresholds):
            summary = EvaluationSummary(threshold)
            for evaluation in evaluations:
                summary.update(evaluation)
            summaries.append(summary)
        return summaries, histories
    return [EvaluationSummary.from_config(c) for c in state["summaries"]], None


def partial_path(backup: Path) -> Path:
    """The file a backup is written to before it is renamed over `backup`."""
    return backup.with_name(f".{backup.name}.partial")


def remove_backup(backup: str | os.PathLike) -> None:
    """Deletes a finished run's backup, and one a kill left half-written."""
    backup = Path(backup)
    backup.unlink(missing_ok=True)
    partial_path(backup).unlink(missing_ok=True)


def _identity(run) -> dict:
    """What a backup must match: the configuration(s), seeds and engine."""
    if run.single:
        config = {k: v for k, v in run.config.to_config().items() if k != "seed"}
        identity = {"config": config, "seeds": run.seeds}
    else:
        identity = {"configs": [c.to_config() for c in run.configs]}
    if run.engine != "tensorflow":  # TF backups predate this key
        identity["engine"] = run.engine
    return json.loads(json.dumps(identity))


def _comparable(identity: dict) -> dict:
    """An identity without the config fields added later at their defaults:
    a backup that predates a field matches a run at its default."""
    identity = dict(identity)
    if isinstance(identity.get("config"), dict):
        identity["config"] = without_later_defaults(identity["config"])
    if isinstance(identity.get("configs"), list):
        identity["configs"] = [
            without_later_defaults(c) if isinstance(c, dict) else c
            for c in identity["configs"]
        ]
    return identity


def save_backup(run, path: str | os.PathLike) -> None:
    """`ReplicaRun.save_backup`: the run's `RunState` into one `.npz` file."""
    path = Path(path)
    run_state = run.get_state()
    verdicts = run_state.verdicts
    state = {
        "format": BACKUP_FORMAT,
        **_identity(run),
        "step": run_state.step,
        "wall_time": run_state.wall_time,
        "summaries": [summary.get_config() for summary in verdicts.summaries],
        "iterations": verdicts.iterations,
        "loss_diverged": verdicts.loss_diverged,
        "active": verdicts.active.tolist(),
    }
    arrays = {
        f"variable_{i}": np.asarray(values)
        for i, values in enumerate(run_state.variables.flat())
    }
    with atomic_write(path, "wb", temporary=partial_path(path)) as file:
        text = json.dumps(state, separators=(",", ":"))
        # Compressed: a backup committed beside its rows stays small.
        np.savez_compressed(
            file, state=np.frombuffer(text.encode(), np.uint8), **arrays
        )


# What a refusal to restore says to do: the file may hold hours of training.
_ASIDE = "move it aside (it is left untouched) to train this run afresh"


def restore_backup(run, path: str | os.PathLike) -> bool:
    """`ReplicaRun.restore_backup`: the run continues from a backup, if any."""
    path = Path(path)
    if not path.exists():
        return False
    current = run.get_state()
    shapes = [tuple(values.shape) for values in current.variables.flat()]
    try:
        state, arrays = _load_backup(path, len(shapes))
    except ValueError as error:
        raise ValueError(f"{str(error).rstrip('.')}; {_ASIDE}.") from None
    engine = state.get("engine", "tensorflow")  # TF backups predate the key
    if engine != run.engine and engine in ("tensorflow", "jax"):
        raise ValueError(
            f"{path} is a backup of the {engine} engine, and this run trains on "
            f"the {run.engine} engine; continue it with KERAS_BACKEND={engine}, "
            f"or {_ASIDE}."
        )
    identity = _comparable(_identity(run))
    stored = _comparable(state)
    if state.get("format") not in READABLE_FORMATS or any(
        stored.get(key) != value for key, value in identity.items()
    ):
        raise ValueError(
            f"{path} is not a backup of this run ({run.description()}, "
            f"{run.engine} engine); {_ASIDE}."
        )
    try:
        _check_state(path, state, run.num_replicas)
    except ValueError as error:
        raise ValueError(f"{str(error).rstrip('.')}; {_ASIDE}.") from None
    for values, shape in zip(arrays, shapes):
        if tuple(values.shape) != shape:
            raise ValueError(f"{path} does not hold this run's variables; {_ASIDE}.")
    thresholds = [float(t) for t in run.thresholds]
    summaries, histories = _folded(state, thresholds)
    for summary, threshold in zip(summaries, thresholds):
        # The same config gives the same threshold; another one means the
        # rule changed, and the summary's solved steps would be stale.
        if not math.isclose(summary.threshold, threshold, rel_tol=1e-9):
            raise ValueError(
                f"{path} judged its evaluations against threshold "
                f"{summary.threshold!r}, this run against {threshold!r}; {_ASIDE}."
            )
        summary.threshold = threshold
    history = None
    if current.verdicts.history is not None:
        history = histories or [[] for _ in summaries]
    verdicts = Verdicts(
        summaries=summaries,
        iterations=list(state["iterations"]),
        loss_diverged=list(state["loss_diverged"]),
        active=np.array(state["active"], dtype=bool),
        history=history,
    )
    variables = current.variables.unflatten(arrays)
    run.set_state(
        RunState(int(state["step"]), float(state["wall_time"]), verdicts, variables)
    )
    return True


def _backup_runs(path: Path) -> tuple[dict, list[ExperimentConfig]]:
    """A backup's state and its runs (one config per replica, seed set)."""
    state, _ = _load_backup(path)
    if state.get("format") not in READABLE_FORMATS:
        raise ValueError(
            f"{path} has backup format {state.get('format')!r}; this version "
            f"reads formats {', '.join(map(str, READABLE_FORMATS))}."
        )
    try:
        if "configs" in state:
            configs = [ExperimentConfig(**c) for c in state["configs"]]
        else:
            configs = [
                ExperimentConfig(**state["config"], seed=int(seed))
                for seed in state["seeds"]
            ]
    except Exception:  # noqa: BLE001 - a damaged config: any field, any type
        raise ValueError(
            f"{path} is not a readable sweep backup: the configuration it holds "
            "is damaged."
        ) from None
    return state, configs


def backup_runs(path: str | os.PathLike) -> tuple[list[ExperimentConfig], str]:
    """`(runs, engine)`: a `save_backup` file's configs (one per replica, its
    seed set, in order) and "tensorflow" or "jax".

    Raises:
        ValueError: the file is not a readable backup.
    """
    state, configs = _backup_runs(Path(path))
    return configs, str(state.get("engine", "tensorflow"))


def read_backup(path: str | os.PathLike) -> list[dict]:
    """Each seed's verdict so far, read from a chunk's backup file.

    It builds no model and leaves the run alone, so it can read a chunk
    still training (`keras-nalu progress RESULTS`). The verdict is the one
    the run would give if it stopped at the backup's step
    (`summarize_evaluations`); a later step can still change it.

    Args:
        path: a `.npz` file written by `ReplicaRun.save_backup`, either
            format.

    Returns:
        One dict per replica: `model`, `operation`, `seed`, `step` (where the
        backup stands), `iterations` (the run's total), the verdict fields
        of `summarize_evaluations`, `threshold` and `engine` (the backend
        that continues the backup).

    Raises:
        ValueError: the file is not a readable backup.

    Example:

    >>> from keras_nalu.experiments import ExperimentConfig
    >>> from keras_nalu.sweeps.engines import read_backup, replica_run
    >>> config = ExperimentConfig(model="nau", input_size=10, iterations=200,
    ...                           eval_every=100)
    >>> run = replica_run(config, seeds=[0, 1])
    >>> run.train(progress=False)
    >>> run.save_backup("chunk.npz")  # a sweep writes these as it trains
    >>> [(r["seed"], r["step"], r["iterations"]) for r in read_backup("chunk.npz")]
    [(0, 200, 200), (1, 200, 200)]
    """
    path = Path(path)
    state, configs = _backup_runs(path)
    _check_state(path, state, len(configs))
    if state["format"] == 1:  # judged here, once per config (not per seed)
        threshold = functools.cache(ExperimentConfig.success_threshold)
        thresholds = [threshold(dataclasses.replace(c, seed=0)) for c in configs]
    else:  # judged as the run went, against the threshold stored with it
        thresholds = [c["threshold"] for c in state["summaries"]]
    summaries, _ = _folded(state, thresholds)
    engine = str(state.get("engine", "tensorflow"))
    diverged = state["loss_diverged"]
    return [
        {
            "model": config.model,
            "operation": config.operation,
            "seed": config.seed,
            "step": state["step"],
            "iterations": total_steps(config),
            **summary.result(loss_diverged=loss_diverged),
            "threshold": summary.threshold,
            "engine": engine,
        }
        for config, summary, loss_diverged in zip(configs, summaries, diverged)
    ]
