"""A Ray sweep's backup folder: a path every node mounts, or an fsspec URL."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from keras_nalu.errors import ArgumentError, literal
from keras_nalu.sweeps.ray_connection import first_line


class BackupFolder:
    """A folder of chunk backups: a path every node mounts, or an fsspec URL."""

    def __init__(self, location: str):
        self.location = location
        self.fs = None
        if "://" in location:
            import fsspec

            self.fs, self.root = fsspec.core.url_to_fs(location)
            self.root = self.root.rstrip("/")

    @classmethod
    def checked(cls, backup_dir) -> BackupFolder:
        """The folder as the driver checks it: created, and an absolute path."""
        is_path = isinstance(backup_dir, str | os.PathLike)
        text = os.fspath(backup_dir) if is_path else None
        if not text:
            raise ArgumentError(
                "run_sweep",
                "backup_dir",
                backup_dir,
                requirement="be a folder or a URL",
            )
        told = literal(repr(text))

        def refused(problem: str) -> ArgumentError:
            return ArgumentError("", "backup_dir", text, problem=problem, received={})

        if "://" not in text:
            path = Path(text).expanduser().absolute()
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                why = literal(error.strerror or type(error).__name__)
                raise refused(
                    f"cannot create {{backup_dir}} {told} ({why}); pass a folder "
                    "every node of the cluster can write to"
                ) from None
            return cls(str(path))
        try:
            import fsspec  # noqa: F401
        except ImportError:
            raise refused(
                f"{{backup_dir}} {told} is a URL, which needs fsspec: pip install "
                "fsspec and the file system's package (s3fs, gcsfs, ...)"
            ) from None
        try:
            folder = cls(text)
            folder.fs.makedirs(folder.root, exist_ok=True)
        except Exception as error:  # noqa: BLE001 - any file system's refusal
            why = literal(first_line(error))
            raise refused(f"cannot open {{backup_dir}} {told} ({why})") from None
        return folder

    def names(self) -> list[str]:
        if self.fs is None:
            return sorted(p.name for p in Path(self.location).glob("c*.npz"))
        return sorted(Path(path).name for path in self.fs.glob(f"{self.root}/c*.npz"))

    def fetch(self, name: str, local: Path) -> bool:
        remote = f"{self.root}/{name}"
        if not self.fs.exists(remote):
            return False
        self.fs.get_file(remote, str(local))
        return True

    @contextlib.contextmanager
    def local_copy(self, name: str):
        """`(path, sync)`: the backup as a local file, and a progress callback.

        A path folder is used in place (`sync` does nothing). For a URL, the
        backup is fetched into a temporary folder, `sync` uploads it after
        every backup `train_chunk` writes (it is called after each
        evaluation block), and a chunk that finished deletes it.
        """
        if self.fs is None:
            yield Path(self.location) / name, False
            return
        remote = f"{self.root}/{name}"
        with tempfile.TemporaryDirectory() as copies:
            local = Path(copies) / name
            self.fetch(name, local)
            uploaded = [_mtime(local)]

            def sync(_steps):
                stamp = _mtime(local)
                if stamp is not None and stamp != uploaded[0]:
                    # whole or not at all: a kill mid-upload leaves the last one
                    self.fs.put_file(str(local), remote + ".partial")
                    self.fs.mv(remote + ".partial", remote)
                    uploaded[0] = stamp

            yield local, sync
        if self.fs.exists(remote):
            self.fs.rm_file(remote)


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return None
