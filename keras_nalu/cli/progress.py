"""`keras-nalu progress`: how far the chunks of a sweep have got, from its backups."""

from pathlib import Path

HELP = "how far the chunks of a running (or killed) sweep have got"
DESCRIPTION = (
    "Read the backups a sweep writes beside RESULTS (in RESULTS.backup/) "
    "and print each chunk's step and each seed's verdict so far, without "
    "disturbing the sweep."
)


def add_flags(progress) -> None:
    progress.add_argument("results", help="a sweep's results CSV, or one backup .npz")
    progress.add_argument(
        "--brief", action="store_true", help="one line per configuration of a chunk"
    )


def run(args) -> int:
    from keras_nalu.reports.progress import progress_by_configuration

    for path in _backups(args.results):
        for part in progress_by_configuration(_read_backup(path)):
            _print_part(path, part, brief=args.brief)
    return 0


def _backups(results: str) -> list[Path]:
    """The backup files to read: one `.npz`, or those of a results file."""
    from keras_nalu._files import backup_folder
    from keras_nalu.sweeps.chunks import backup_files

    target = Path(results)
    if target.suffix == ".npz":
        if not target.is_file():
            raise FileNotFoundError(f"no such backup file: {target}")
        return [target]
    if target.is_dir():  # "." included, which is no results file's folder
        if not target.name or backup_folder(target.with_suffix("")) != target:
            raise ValueError(
                f"{results} is a folder; pass a sweep's results CSV or one backup .npz."
            )
        files, folder = backup_files(target, target), target
    else:
        files = backup_files(target)
        folder = backup_folder(target)
    if not files and not target.exists():
        raise FileNotFoundError(
            f"no such results file: {target}, and no backups in {folder}/; "
            "pass the --results path of a sweep."
        )
    if not files:
        raise FileNotFoundError(
            f"no chunk of {target} is in training: {folder}/ holds no backup "
            "(a sweep writes one every --backup-every seconds)."
        )
    return files


def _print_part(path: Path, part: list[dict], brief: bool) -> None:
    """One configuration of a chunk: its step and verdicts, and a seed table."""
    import pandas as pd

    from keras_nalu.sweeps.results import RECORD_FIELDS

    first = part[0]
    solved = sum(bool(r["success"]) for r in part)
    print(
        f"{path.name}: {first['model']} {first['operation']}, step "
        f"{first['step']:,} of {first['iterations']:,}: {solved} of {len(part)} "
        f"seeds solved so far (threshold {first['threshold']:.3g}; "
        f"{first['engine']} engine)"
    )
    if not brief:
        # each seed's verdict so far: the results columns up to "diverged"
        verdicts = RECORD_FIELDS[: RECORD_FIELDS.index("diverged") + 1]
        table = pd.DataFrame(part, columns=["seed", *verdicts])
        for column in ("solved_at", "best_step"):
            table[column] = table[column].astype("Int64")
        print(table.to_string(index=False, float_format="{:.3g}".format))


def _read_backup(path: Path) -> list[dict]:
    """`read_backup`, with every damaged file reported in one line."""
    from keras_nalu.sweeps.engines import read_backup

    try:
        records = read_backup(path)
    except ValueError:
        raise
    # read_backup lets some damage through as other errors (an empty file:
    # EOFError; a damaged state: TypeError, KeyError); still one line here.
    except Exception:  # noqa: BLE001
        raise ValueError(
            f"{path} is a damaged sweep backup: its state cannot be read; wait "
            "for the sweep's next backup (one every --backup-every seconds)."
        ) from None
    if not records:
        raise ValueError(f"{path} is a sweep backup of no seeds.")
    return records
