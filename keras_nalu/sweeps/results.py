"""The results file of a sweep: its columns, its rows, and safe writes."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import fcntl
import hashlib
import io
import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from keras_nalu._files import atomic_write
from keras_nalu.errors import ArgumentError, literal
from keras_nalu.experiments import (
    LATER_FIELDS,
    ExperimentConfig,
    without_later_defaults,
)
from keras_nalu.presets import get_preset

CONFIG_FIELDS = tuple(field.name for field in dataclasses.fields(ExperimentConfig))
"""The `ExperimentConfig` fields; each is a column of a results file."""

CONFIG_COLUMNS = tuple(
    "max_iterations" if name == "iterations" else name for name in CONFIG_FIELDS
)
"""The config columns: the fields, with `iterations` (the budget) renamed
`max_iterations`, since `iterations` holds the steps each run took."""

RECORD_FIELDS = (
    "success",
    "solved_at",
    "best_step",
    "interpolation_mse",
    "extrapolation_mse",
    "sparsity_error",
    "diverged",
    "threshold",
    "evaluations",
    "iterations",
    "wall_time",
    "iterations_per_second",
    "replicas",
    "subsets",
    "engine",
    "device",
    "last_solved_at",
    "final_success",
)
"""The result columns, from the `run_experiment`-style record of each seed."""

LATER_RECORD_FIELDS = {
    "engine": "tensorflow",
    "device": "",
    "last_solved_at": None,
    "final_success": None,
}
"""Result columns added after results files existed, with the value their
older rows stand for (TensorFlow on an unrecorded device; empty cells)."""

RESULT_COLUMNS = (*CONFIG_COLUMNS, *RECORD_FIELDS, "config_id")
"""Every column of a results file, in order."""


def config_id(config: ExperimentConfig) -> str:
    """A short stable id of a configuration without its seed: `c` + 12 hex.

    It hashes the fields (`LATER_FIELDS` only when set) and the preset's
    `revision` when above 0, not its recipe: a changed recipe must raise the
    revision (a test pins every recipe).
    """
    fields = without_later_defaults(config.to_config())
    fields.pop("seed")
    revision = get_preset(config.model).revision
    if revision:  # a changed recipe: rows of the older one must not match
        fields["preset_revision"] = revision
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()
    return "c" + digest[:12]


def config_of_row(row: Mapping) -> ExperimentConfig | None:
    """The configuration of a results row (a dict of its columns), or None
    where its fields make none: empty cells are None, floats read for
    integers (3.0) integers, and the budget is `max_iterations`.

    Example:

    >>> row = record_row({"config": ExperimentConfig(seed=3).to_config()})
    >>> config_of_row({**row, "input_size": 100.0}) == ExperimentConfig(seed=3)
    True
    """
    values = {
        key: None if _is_empty(value) else value
        for key, value in row.items()
        if key in CONFIG_FIELDS
    }
    values["iterations"] = int(row.get("max_iterations") or 1)
    for field in dataclasses.fields(ExperimentConfig):
        value = values.get(field.name)
        if isinstance(value, float) and value.is_integer() and "int" in str(field.type):
            values[field.name] = int(value)
    try:
        return ExperimentConfig(**values)
    except (TypeError, ValueError):
        return None


def _is_empty(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def record_row(record: Mapping) -> dict:
    """The flat results row of one `run_experiment`/`train_replicas` record."""
    config = ExperimentConfig(**record["config"])
    row = {
        column: record["config"][field]
        for column, field in zip(CONFIG_COLUMNS, CONFIG_FIELDS)
    }
    for key in RECORD_FIELDS:
        value = record.get(key)
        row[key] = json.dumps(value) if key == "subsets" else value
    row["config_id"] = config_id(config)
    return row


def _foreign(path: Path, reason: str) -> ValueError:
    return ValueError(
        f"{path} is not a keras-nalu sweep results file ({reason}); it is left "
        "untouched. Pass another results path."
    )


def done_pairs(table: pd.DataFrame) -> set[tuple[str, int]]:
    """The `(config id, seed)` pairs of a results table's rows."""
    return set(zip(table["config_id"].astype(str), table["seed"].astype(int)))


def check_results_path(path: str | os.PathLike) -> Path:
    """`path` as a `Path`; a folder is refused (and left untouched)."""
    path = Path(path)
    if path.is_dir():
        raise ArgumentError(
            "",
            "results_path",
            str(path),
            problem="{results_path} " + literal(repr(str(path))) + " is a folder; "
            "pass a CSV path.",
            received={},
        )
    return path


CONFIG_ID = re.compile(r"^c[0-9a-f]{12}$")
"""A sweep's configuration id: `c` and 12 hexadecimal digits."""


def row_lines(path: str | os.PathLike) -> list[int]:
    """The line on which each data row of the CSV at `path` starts (blank
    lines skipped, as pandas skips them), so that a malformed row is named by
    its line before pandas fills a row cut short with empty cells and counts it.

    Raises:
        ValueError: the file is not UTF-8 text, is empty, breaks the CSV
            quoting rules, has a row of another field count than the header,
            or a last row without its line break (it may be cut short); the
            message names the line and says what to do.
    """
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
    except UnicodeDecodeError:
        raise ValueError("it is not UTF-8 text") from None
    lines: list[int] = []
    header = None
    line = 0
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        for row in reader:
            start, line = line + 1, reader.line_num
            if not row:
                continue
            if header is None:
                header = row
                continue
            if len(row) != len(header):
                raise ValueError(
                    f"line {start} has {len(row)} fields where the header has "
                    f"{len(header)} (a row cut short?); complete or delete that line"
                )
            lines.append(start)
    except csv.Error as error:
        if str(error) == "unexpected end of data":
            raise ValueError(
                f"line {line + 1} ends inside a quoted field (a row cut short?); "
                "complete or delete that line"
            ) from None
        raise ValueError(f"line {line + 1}: {error}") from None
    if header is None:
        raise ValueError("it is empty (no header line)")
    if lines and lines[-1] == start and not text.endswith(("\n", "\r")):
        raise ValueError(
            f"line {lines[-1]}, the last, has no line break at its end, so it may "
            "be cut short; check it and end it with a line break"
        )
    return lines


def first_bad_line(bad: pd.Series, lines: list[int]) -> int:
    """The line of the first row where the boolean Series `bad` is true."""
    return lines[int(bad.to_numpy().nonzero()[0][0])]


def check_identity(table: pd.DataFrame, lines: list[int]) -> str | None:
    """Why a row cannot be counted as a run, or None if every row can.

    A run needs its `model`, `operation`, `seed` (a whole number >= 0) and,
    in a sweep's file, a well-formed `config_id`.
    """
    for column in ("model", "operation", "seed"):
        if column in table and table[column].isna().any():
            line = first_bad_line(table[column].isna(), lines)
            return f"line {line} has no {column}; complete or delete that line"
    if "seed" in table:
        seeds = pd.to_numeric(table["seed"], errors="coerce")
        bad = seeds.isna() | (seeds < 0) | (seeds % 1 != 0)
        if bad.any():
            index = int(bad.to_numpy().nonzero()[0][0])
            return (
                f"line {lines[index]}: seed must be a whole number >= 0. "
                f"Received: seed={table['seed'].iloc[index]!r}"
            )
    if "config_id" in table:
        ids = table["config_id"].astype(str)
        bad = ~ids.map(lambda value: bool(CONFIG_ID.match(value)))
        if bad.any():
            index = int(bad.to_numpy().nonzero()[0][0])
            return (
                f"line {lines[index]}: malformed config_id {ids.iloc[index]!r} "
                "(expected c and 12 hex digits)"
            )
    return None


def read_results(path: str | os.PathLike) -> pd.DataFrame:
    """Reads and checks a sweep results file (empty table if there is none).

    Raises:
        ValueError: the file is unreadable, lacks sweep columns, has a
            malformed row (named by its line), or a (config, seed) pair twice.
    """
    path = Path(path)
    if not path.exists():
        return pd.DataFrame(columns=list(RESULT_COLUMNS))
    if not path.is_file():
        raise _foreign(path, "not a file")
    try:
        lines = row_lines(path)
    except ValueError as error:
        raise _foreign(path, str(error)) from None
    try:
        table = pd.read_csv(path, dtype={"config_id": str})
    except ValueError as error:  # pandas' parser errors are ValueErrors too
        reason = " ".join(str(error).split())
        raise _foreign(path, f"unreadable as CSV: {reason}") from None
    if len(table) != len(lines):
        raise _foreign(path, f"{len(lines)} CSV rows but {len(table)} read")
    for column, default in {**LATER_FIELDS, **LATER_RECORD_FIELDS}.items():
        if column in table:
            continue
        position = len(table.columns)
        if column in LATER_FIELDS:
            position = min(CONFIG_COLUMNS.index(column), position)
        elif "config_id" in table:
            position = table.columns.get_loc("config_id")
        table.insert(position, column, default)
    missing = [column for column in RESULT_COLUMNS if column not in table]
    if missing:
        raise _foreign(path, f"missing columns {missing}")
    problem = check_identity(table, lines)
    if problem:
        raise _foreign(path, problem)
    if table.duplicated(["config_id", "seed"]).any():
        raise _foreign(path, "a (config, seed) pair appears twice")
    return table


def append_results(rows: list[dict], path: Path) -> None:
    """Adds `rows` to the results file at `path`, never half-written
    (`atomic_write`); the rows in it stay byte for byte, a file of an older
    layout gaining the newer columns once (`LATER_FIELDS`,
    `LATER_RECORD_FIELDS`)."""
    text, columns = _current_layout(path)
    new = io.StringIO()
    writer = csv.writer(new, lineterminator="\n")
    for row in rows:
        writer.writerow([results_cell(row.get(column)) for column in columns])
    with atomic_write(path, encoding="utf-8", newline="") as handle:
        handle.write(text + new.getvalue())


def results_cell(value) -> str:
    """A value's text in a results file, whatever the other rows hold.

    An integer stays one (`11000`) beside empty cells (None or NaN), where
    pandas would write the whole column as floats (`11000.0`); older files
    hold such floats, read as the same numbers.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if _is_empty(value):
        return ""
    return str(value)


def _current_layout(path: Path) -> tuple[str, list[str]]:
    """The file's text in the current layout, and its columns."""
    header = list(RESULT_COLUMNS)
    if not path.exists():
        return ",".join(header) + "\n", header
    with open(path, encoding="utf-8", newline="") as handle:
        text = handle.read()
    if not text.endswith(("\n", "\r")):  # a header alone, without its line break
        text += "\n"
    rows = [row for row in csv.reader(io.StringIO(text, newline="")) if row]
    if not set(header) - set(rows[0]):
        return text, rows[0]
    older = {**LATER_FIELDS, **LATER_RECORD_FIELDS}
    columns = header + [name for name in rows[0] if name not in header]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows[1:]:
        cells = dict(zip(rows[0], row, strict=True))
        writer.writerow(
            [cells.get(name, results_cell(older.get(name))) for name in columns]
        )
    return out.getvalue(), columns


@contextlib.contextmanager
def results_lock(path: Path):
    """Holds `<path>.lock` so that two sweeps never write one file; the lock
    and the folders made for it (if still empty) go on release."""
    lock_path = path.with_name(path.name + ".lock")
    made = [folder for folder in path.parents if not folder.exists()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = _locked(lock_path, path)
    except (OSError, ValueError) as error:
        _remove_empty(made)
        if isinstance(error, ValueError):
            raise
        raise ValueError(
            f"cannot create the lock file {lock_path} "
            f"({error.strerror or type(error).__name__}); pass a results path "
            "in a folder you can write to"
        ) from None
    try:
        yield
    finally:
        # removed while held: a sweep that opens it now retries (`_locked`)
        with contextlib.suppress(OSError):
            lock_path.unlink()
        lock.close()
        _remove_empty(made)


def _locked(lock_path: Path, path: Path):
    """The lock file, locked; a ValueError if another sweep holds it."""
    while True:
        lock = open(lock_path, "a")  # noqa: SIM115
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            raise ValueError(
                f"another sweep is writing {path}; wait for it or pass another "
                "results path"
            ) from None
        try:
            same = os.stat(lock_path).st_ino == os.fstat(lock.fileno()).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return lock
        lock.close()  # removed by the sweep that held it: lock the new one


def _remove_empty(folders: list[Path]) -> None:
    """Removes `folders` (deepest first) where they are empty."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


__all__ = [
    "CONFIG_COLUMNS",
    "append_results",
    "CONFIG_FIELDS",
    "LATER_RECORD_FIELDS",
    "RECORD_FIELDS",
    "RESULT_COLUMNS",
    "check_results_path",
    "config_id",
    "config_of_row",
    "done_pairs",
    "read_results",
    "record_row",
    "results_cell",
    "results_lock",
]
