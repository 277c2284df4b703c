"""`keras-nalu sweep`: a grid of configs × seeds into a resumable results CSV."""

import argparse
import contextlib
import math
import sys

from keras_nalu.cli.checks import (
    overlap_warnings_silenced,
    refuse_backend_without_fit,
    refuse_overlap,
)

HELP = "train a grid of configs × seeds into a resumable results CSV"
DESCRIPTION = (
    "Train every (config, seed) of a grid as vectorized replicas, chunk by "
    "chunk, appending to a results CSV that a rerun resumes; print the "
    "paper-style summary. Grid: --grid KEY=V1,V2 per ExperimentConfig "
    "field (a single value fixes it), --grid K1:K2=A1:B1,A2:B2 for fields "
    "that change together, or --grid-file with the same as JSON. Ctrl-C "
    "backs up the chunks in training at their next evaluation (on Ray: to "
    "--backup-dir; without it they stop at once) and exits with status 130; "
    "a second Ctrl-C stops at once."
)


def add_flags(sweep) -> None:
    sweep.add_argument(
        "--grid",
        action="append",
        metavar="KEY=V1,V2",
        help="the values of one ExperimentConfig field, or K1:K2=A1:B1,A2:B2; "
        "repeat it for each field",
    )
    sweep.add_argument("--grid-file", default=None, help="JSON {field: [values]}")
    sweep.add_argument(
        "--seeds", default="0-9", help="e.g. 0-99 or 0,3,7-9 (default: 0-9)"
    )
    sweep.add_argument(
        "--chunk-size", type=int, default=100, help="seeds per run (default: 100)"
    )
    sweep.add_argument(
        "--results",
        default="results/sweep.csv",
        help="results CSV (default: results/sweep.csv)",
    )
    sweep.flag_names["results_path"] = "--results"  # run_sweep's name for it
    sweep.add_argument(
        "--ray-address",
        default=None,
        help="local (a Ray runtime of its own), auto, HOST:PORT or ray://HOST:PORT",
    )
    sweep.add_argument("--quiet", action="store_true", help="no progress bar")
    _backup_flags(sweep)
    sweep.add_argument(
        "--gpus-per-chunk",
        type=float,
        default=0.0,
        metavar="GPUS",
        help="with --ray-address: GPUs each chunk asks Ray for (1: a GPU each; "
        "0.25: four chunks share a GPU; default 0)",
    )
    sweep.add_argument(
        "--time-limit",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="stop after this many seconds: no chunk starts after it, and the "
        "chunk in training stops at its next evaluation after a backup; the same "
        "command again continues (a local sweep with backups; default: none)",
    )
    from keras_nalu.sweeps.local import add_filling_flags

    add_filling_flags(sweep)
    sweep.add_argument(
        "--allow-overlap",
        action="store_true",
        help="accept extrapolation and interpolation ranges that overlap",
    )


def _backup_flags(sweep) -> None:
    """--backup-every, --no-backup and --backup-dir."""
    from keras_nalu.sweeps.engines.loop import BACKUP_EVERY

    sweep.add_argument(
        "--backup-every",
        type=_seconds,
        default=BACKUP_EVERY,
        metavar="SECONDS",
        help="back up the chunk in training this often to RESULTS.backup/ (on "
        "Ray: to --backup-dir), and at its next evaluation after Ctrl-C; a rerun "
        f"continues it (default: {BACKUP_EVERY:g})",
    )
    sweep.add_argument("--no-backup", action="store_true", help="never back up a chunk")
    sweep.add_argument(
        "--backup-dir",
        default=None,
        metavar="FOLDER_OR_URL",
        help="with --ray-address: back up the chunks in training to this folder, "
        "which every node must reach (a shared mount, or an fsspec URL such as "
        "s3://bucket/sweep); without it, chunks on Ray are not backed up",
    )


def _seconds(text: str) -> float:
    """A flag's number of seconds: finite and >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(
            f"expects a number of seconds >= 0. Received: {text!r}"
        )
    return value


def run(args) -> int:
    from keras_nalu.sweeps.engines import ENGINES
    from keras_nalu.sweeps.local import filling_options
    from keras_nalu.sweeps.ray_connection import ClusterError
    from keras_nalu.sweeps.runner import run_sweep

    filling = filling_options(args)  # XLA's flags, before JAX starts
    refuse_backend_without_fit("sweep", ENGINES)
    grid = _grid(args)
    try:
        with overlap_warnings_silenced(), _sweep_messages(), _ctrl_c(args):
            outcome = run_sweep(
                grid,
                args.seeds,
                args.results,
                chunk_size=args.chunk_size,
                ray_address=args.ray_address,
                progress=not args.quiet,
                backup_every=None if args.no_backup else args.backup_every,
                backup_dir=args.backup_dir,
                gpus_per_chunk=args.gpus_per_chunk,
                time_limit=args.time_limit,
                **filling,
            )
    except ClusterError as error:  # not the user's input: exit 1, one line
        print(f"keras-nalu sweep: error: {error}", file=sys.stderr)
        return 1
    _print_outcome(outcome)
    return 0


def _grid(args) -> dict:
    """The grid of --grid-file and --grid, its ranges checked."""
    from keras_nalu.sweeps.grid import grid_configs, load_grid_file, parse_grid

    grid = load_grid_file(args.grid_file) if args.grid_file else {}
    flags = parse_grid(args.grid or [])
    in_file = {key for keys in grid for key in keys}
    both = sorted(in_file & {key for keys in flags for key in keys})
    if both:
        raise ValueError(
            f"--grid-file {args.grid_file!r} and --grid both give {', '.join(both)}; "
            "give each field in one of them."
        )
    grid.update(flags)
    with overlap_warnings_silenced():
        configs = grid_configs(grid)
        tasks = [config.task() for config in configs]
    if not args.allow_overlap:
        for task in tasks:
            refuse_overlap(task, "interpolation_range", "extrapolation_range")
    return grid


def _print_outcome(outcome) -> None:
    """The summary table on stdout; how far the sweep got on stderr."""
    from keras_nalu.reports.tables import summary_markdown

    if not outcome.complete:
        backups = ", ".join(map(str, outcome.backups))
        where = "between two runs, none cut short (no backup was needed)"
        if len(outcome.backups) == 1:
            where = f"the chunk in training backed up to {backups}"
        elif outcome.backups:
            count = len(outcome.backups)
            where = f"the {count} chunks in training backed up to {backups}"
        print(
            f"keras-nalu sweep: stopped at --time-limit with runs left, {where}; "
            "run the same command again to continue",
            file=sys.stderr,
        )
    if not outcome.path.exists():
        print(
            f"keras-nalu sweep: no run has finished yet, so there is no {outcome.path} "
            "and no table",
            file=sys.stderr,
        )
        return
    print(summary_markdown(outcome))
    print(
        f"results: {outcome.path} ({len(outcome.results)} rows of this sweep: "
        f"{outcome.new_rows} new, {outcome.skipped} already there)",
        file=sys.stderr,
    )


def _ctrl_c(args):
    """A sweep trained here: a second Ctrl-C ends the command at once, in one line.

    The first backs up the chunks in training at their next evaluation
    (`stop_at_interrupt`); a second ends the process whatever it does
    (compiling, training in threads), which no exception could. On Ray,
    the driver stops its tasks itself (`run_on_ray`).
    """
    from keras_nalu.sweeps.engines import stop_at_interrupt

    if args.ray_address is not None:
        return contextlib.nullcontext()
    return stop_at_interrupt(
        end_process="keras-nalu sweep: interrupted at once by a second Ctrl-C: the "
        "chunks in training lose what they trained since their last backup; run "
        "it again to continue from there"
    )


@contextlib.contextmanager
def _sweep_messages():
    """The sweep's notes (a chunk continued, no backup folder) as one line each.

    What else is printed while the sweep runs (Ray prints the cluster's
    errors, "(raylet) A worker died ...", to stdout) goes to stderr too:
    stdout holds the summary table alone.
    """
    import logging

    class OneLine(logging.Formatter):
        def format(self, record):
            kind = "warning: " if record.levelno >= logging.WARNING else ""
            return f"keras-nalu sweep: {kind}{record.getMessage()}"

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLine())
    sweeps = logging.getLogger("keras_nalu.sweeps")
    level, propagate = sweeps.level, sweeps.propagate
    sweeps.addHandler(handler)
    sweeps.setLevel(logging.INFO)
    sweeps.propagate = False
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sweeps.removeHandler(handler)
        sweeps.setLevel(level)
        sweeps.propagate = propagate
