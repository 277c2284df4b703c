"""The files of `benchmarks/gpu_probe.py` between calls: backups packed, resumed.

A lent machine gives back only files under 16 MB: `pack_backups` puts the
chunks' backups into tar files under that size, `unpack_backups` puts them
back (`extract`: nothing outside the folder), and `resume` says where a call
starts from: an earlier call's files, else the committed ones.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

from probe_table import TABLE

TAR_LIMIT = 15 * 2**20
"""The most bytes of backups one tar file holds (the files that come back from a
lent machine may be at most 16 MB each)."""


def pack_backups(out: Path, limit: int = TAR_LIMIT) -> list[Path]:
    """OUT/results.csv.backup/ into `backups.tar`, `backups-2.tar`, ..., each
    under `limit` bytes unless one backup alone is larger; the folder goes."""
    import shutil

    from keras_nalu._files import backup_folder

    folder = backup_folder(out / "results.csv")
    files = sorted(folder.glob("*.npz")) if folder.is_dir() else []
    groups, size = [[]], 0
    for file in files:
        if groups[-1] and size + file.stat().st_size > limit:
            groups.append([])
            size = 0
        groups[-1].append(file)
        size += file.stat().st_size
    tars = []
    for index, group in enumerate(g for g in groups if g):
        tar = out / ("backups.tar" if index == 0 else f"backups-{index + 1}.tar")
        with tarfile.open(tar, "w") as archive:
            for file in group:
                archive.add(file, arcname=f"{folder.name}/{file.name}")
        tars.append(tar)
    shutil.rmtree(folder, ignore_errors=True)
    return tars


def extract(archive: tarfile.TarFile, folder: Path) -> None:
    """Every member of `archive` into `folder`, and nothing outside it.

    Python's "data" filter where it has one (3.11.4, 3.10.12 and later).
    Without it, only plain files and folders whose names stay inside
    `folder` are extracted, without their owners and modes: an absolute
    name, a `..`, a link or a device refuses the whole archive
    (`tarfile.TarError`, naming the member) before anything is written.
    """
    if hasattr(tarfile, "data_filter"):
        archive.extractall(folder, filter="data")
        return
    root = Path(folder).resolve()
    members = archive.getmembers()
    for member in members:
        target = (root / member.name).resolve()
        inside = target == root or root in target.parents
        plain = member.isfile() or member.isdir()
        if Path(member.name).is_absolute() or ".." in Path(member.name).parts:
            inside = False
        if not (inside and plain):
            raise tarfile.TarError(
                f"{archive.name}: {member.name!r} is not a plain file or folder "
                f"inside {root}; nothing extracted"
            )
    for member in members:
        archive.extract(member, root, set_attrs=False)


def unpack_backups(out: Path) -> list[Path]:
    """The `pack_backups` files of an earlier call back into OUT (then removed)."""
    tars = sorted(out.glob("backups*.tar"))
    for tar in tars:
        with tarfile.open(tar) as archive:
            extract(archive, out)
        tar.unlink()
    return tars


def resume(out: Path, committed: Path) -> str:
    """OUT's starting point: an earlier call's files in OUT, else `committed`'s.

    An earlier call's backups come back out of their tar files; a new OUT
    gets the committed `results.csv`, its backups and the probe table.
    """
    import shutil

    from keras_nalu._files import backup_folder

    if list(out.glob("backups*.tar")):
        names = [tar.name for tar in unpack_backups(out)]
        return f"continuing {', '.join(names)} in {out}"
    if (out / "results.csv").exists() or backup_folder(out / "results.csv").exists():
        return f"continuing {out}"
    for name in ("results.csv", TABLE):
        if (committed / name).is_file() and not (out / name).exists():
            shutil.copy(committed / name, out)
    if backup_folder(committed / "results.csv").is_dir():
        shutil.copytree(
            backup_folder(committed / "results.csv"), backup_folder(out / "results.csv")
        )
    return f"starting from {committed}"
