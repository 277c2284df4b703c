"""The package's file rules: atomic writes, output folders, records, backups.

Every command and the sweeps write through these: a file is written whole or
not at all (`atomic_write`), an output folder is checked before any work
(`check_output_folder`), a run's record is JSON (`write_record`), and a
sweep's results file keeps its backups in one folder beside it
(`backup_folder`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from keras_nalu.errors import ArgumentError, literal

if TYPE_CHECKING:
    import keras

MIN_FREE_BYTES = 16 * 2**20
"""Free space an output folder needs: a run's files take well under 1 MiB."""


def temporary_path(path: str | os.PathLike) -> Path:
    """The file `atomic_write` writes before renaming it over `path`.

    A hidden file beside `path` (the rename stays on one file system), named
    after this process so that two processes never share one.
    """
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike,
    mode: str = "w",
    temporary: str | os.PathLike | None = None,
    **open_kwargs,
):
    """Opens a temporary file that replaces `path` once the block succeeds.

    The block writes to the yielded file; on success it is flushed, synced to
    disk and renamed over `path` (and the folder synced), so `path` always
    holds either the old content or the whole new one, even after a kill or
    a power cut. If the block raises, the temporary file is removed and
    `path` is untouched.

    Args:
        path: the file to write; its folder is created if missing.
        mode: `"w"` (text) or `"wb"` (bytes).
        temporary: the file to write first; default `temporary_path(path)`.
        **open_kwargs: for `open`, e.g. `encoding="utf-8", newline=""`.

    Example:

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "table.csv"
    >>> with atomic_write(path, encoding="utf-8") as handle:
    ...     _ = handle.write("a,b\\n1,2\\n")
    >>> path.read_text(encoding="utf-8")
    'a,b\\n1,2\\n'
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write expects mode 'w' or 'wb'. Received: {mode!r}")
    path = Path(path)
    temporary = temporary_path(path) if temporary is None else Path(temporary)
    with _moved_into_place(temporary, path):
        with open(temporary, mode, **open_kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())


@contextlib.contextmanager
def _moved_into_place(temporary: Path, path: Path):
    """Renames `temporary`, written by the block, over `path` (its folder
    created first, synced after); removes `temporary` if the block raises."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    _sync(path.parent)


def _sync(path: Path) -> None:
    """Flushes a file or a folder (a rename in it) to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def check_output_folder(
    path: str | os.PathLike,
    argument: str,
    value: str | os.PathLike | None = None,
    min_free_bytes: int = MIN_FREE_BYTES,
) -> Path:
    """Makes sure files can be written in the folder `path`, before any work.

    Writes and deletes a probe file in `path`, or in its nearest existing
    parent if `path` does not exist yet (whoever writes there creates the
    missing folders), so a file in the way, a read-only folder or a full
    disk is found now, in one line, not after hours of training; and a run
    that fails leaves no empty folder behind. Creates nothing.

    Args:
        path: the output folder.
        argument: the argument or flag it was given as, e.g. `"--output-dir"`;
            the message names it.
        value: the value given for `argument`, if not `path` itself (e.g. the
            results file whose folder `path` is).
        min_free_bytes: the least free space to accept.

    Returns:
        The folder, as a `Path`.

    Raises:
        ValueError: `path` (or one of its parents) is a file, or the folder
            (or the parent it would be created in) cannot be written, or its
            disk is nearly full.

    Example:

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> folder = check_output_folder(root / "runs", "--output-dir")
    >>> folder.name, folder.exists()
    ('runs', False)
    """
    path = Path(path)
    given = str(path if value is None else value)

    def refused(problem: str) -> ArgumentError:
        return ArgumentError(
            "",
            argument,
            given,
            problem=f"{{{argument}}} {literal(repr(given))}: {literal(problem)}",
            received={},
        )

    for folder in (path, *path.parents):
        if folder.exists() and not folder.is_dir():
            raise refused(f"{folder} is a file, not a folder; pass another path.")
    existing = next(folder for folder in (path, *path.parents) if folder.exists())
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".write-check-"):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise refused(
            f"cannot write in {existing} ({reason}); pass a folder you can write to."
        ) from None
    free = shutil.disk_usage(existing).free
    if free < min_free_bytes:
        raise refused(
            f"only {free / 2**20:.1f} MiB free in {existing}, less than the "
            f"{min_free_bytes / 2**20:.0f} MiB needed; free some space or pass "
            "another folder."
        )
    return path


def write_json(path: str | os.PathLike, payload) -> None:
    """Writes `payload` as indented JSON, atomically (NumPy scalars as numbers)."""
    text = json.dumps(payload, indent=2, sort_keys=True, default=_jsonable)
    with atomic_write(path, encoding="utf-8") as handle:
        handle.write(text)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Writes `text` as UTF-8, atomically (`atomic_write`)."""
    with atomic_write(path, encoding="utf-8") as handle:
        handle.write(text)


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")


def save_keras_model(model: keras.Model, path: str | os.PathLike) -> Path:
    """Saves the `.keras` file (architecture, weights, optimizer state), atomically.

    Keras writes a temporary `.keras` file beside `path`, which is renamed
    over `path` once whole (as `atomic_write`), or removed if saving fails.

    Weights that are NaN or ±inf (a diverged run's) are saved as they are,
    with a warning that names them.
    """
    from keras_nalu.keras_utils import describe_weights, non_finite_weights

    path = Path(path)
    # Keras writes only to a name ending in `.keras`: the temporary keeps it.
    temporary = temporary_path(path).with_suffix(".keras")
    with _moved_into_place(temporary, path):
        model.save(temporary)
        _sync(temporary)
    non_finite = non_finite_weights(model)
    if non_finite:
        count = len(non_finite)
        warnings.warn(
            f"{path} holds {count} weight{'s' if count > 1 else ''} that "
            f"{'are' if count > 1 else 'is'} not finite, saved as "
            f"{'they are' if count > 1 else 'it is'}: "
            f"{describe_weights(non_finite)}",
            stacklevel=2,
        )
    return path


def write_record(record: dict, path: str | os.PathLike) -> Path:
    """Writes a run's result record as JSON (atomically)."""
    path = Path(path)
    write_json(path, record)
    return path


def backup_folder(results_path: str | os.PathLike) -> Path:
    """The folder beside a sweep's results file that holds its chunks' backups.

    `<results>.backup/`: `results.csv` keeps them in `results.csv.backup/`.

    Example:

    >>> backup_folder("results/sweep.csv").as_posix()
    'results/sweep.csv.backup'
    """
    path = Path(results_path)
    return path.with_name(path.name + ".backup")
