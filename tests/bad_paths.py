"""Paths that refuse to be written, for the tests of the output checks."""

import contextlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest


def _writable(folder: Path) -> bool:
    probe = folder / ".probe"
    try:
        probe.mkdir()
    except OSError:
        return False
    probe.rmdir()
    return True


@contextlib.contextmanager
def unwritable_folder(tmp_path: Path):
    """An existing folder in which nothing can be created (a context manager).

    A folder without write permission, or, where this process ignores
    permissions (root), a folder of a read-only system tree such as /sys;
    fails where there is neither (the refusal would go untested).
    """
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if not _writable(folder):
            yield folder
            return
        for candidate in (Path("/sys/kernel"), Path("/sys"), Path("/proc/1")):
            if candidate.is_dir() and not _writable(candidate):
                yield candidate
                return
        pytest.fail("no folder here refuses writes to this user: nothing to test")
    finally:
        folder.chmod(stat.S_IRWXU)


def listing(folder: Path) -> set[str]:
    """Every path under `folder`, relative to it."""
    return {
        os.path.relpath(os.path.join(root, name), folder)
        for root, folders, files in os.walk(folder)
        for name in folders + files
    }


@contextlib.contextmanager
def read_only_folder_with(tmp_path: Path, name: str, content: str):
    """A folder holding the file `name` (with `content`), then made read-only.

    Without write permission, or, where this process ignores permissions
    (root), marked immutable (`chattr +i`); fails where neither holds (the
    refusal would go untested).
    """
    folder = tmp_path / "read-only-with-file"
    folder.mkdir()
    (folder / name).write_text(content)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    immutable = False
    try:
        if _writable(folder) and shutil.which("chattr"):
            immutable = subprocess.run(["chattr", "+i", folder]).returncode == 0
        if _writable(folder):
            pytest.fail("no way here to make a folder refuse this user's writes")
        yield folder
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", folder])
        folder.chmod(stat.S_IRWXU)
