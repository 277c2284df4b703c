"""Writing a file whole or not at all: the one atomic write of the package."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


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
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(temporary, mode, **open_kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
