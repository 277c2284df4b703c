"""Madsen & Johansen's (2020) tables and Fig. 3 at the paper's budget: one command.

    python benchmarks/paper.py --dry-run                  # the plan, nothing trained
    python benchmarks/paper.py --full                     # train what is missing
    python benchmarks/paper.py --full --time-limit 480    # chunks that finish in 8 min
    python benchmarks/paper.py --summarize                # only the tables
    python benchmarks/paper.py --full --only fig3_hidden --models nmu \\
        --hidden-sizes 4,10 --chunk-size 50          # a part of a part, on a CPU

`--full` trains the parts in the order of `PRIORITY` (Table 2, Fig. 3's
hidden-size panel, Mistry et al.'s NALM benchmark, Table 6, Table 5, Fig.
3's input ranges, Table 1) at the paper's protocol: each preset as in Table
4, 100 seeds per row (Fig. 3: 50 per point; NALM: 25 per range), 5·10⁶ steps
(Table 1: 2·10⁵, as the reference code), evaluation every 1,000 steps,
through `run_sweep` into one results file (`--out`/results.csv; NALM:
`--nalm-out`), so a rerun resumes it: finished runs are skipped and a chunk
in training continues from its backup (`--backup-every`). Under
`KERAS_BACKEND=jax` the configurations of one recipe train together, up to
`--chunk-size` replicas a chunk (1,000 fills a GPU); `--chunks-per-device`
trains that many chunks side by side.

`--time-limit` fits the work to calls of a fixed length (a GPU lent for ten
minutes at a time): each recipe's chunk size comes from its measured step
time (read from the rows the results file holds for this device, else
measured on the spot), so that a chunk finishes inside the time left; no
chunk starts that would not, a line is printed for each finished chunk, and
its rows are in the file at once. The results file is all that needs to be
carried back; the same command run again continues. Where not even one run
fits in the time left, that recipe's chunks train with backups and stop at
the limit. `--fixed-chunks` keeps `--chunk-size` and stops at the first
evaluation past the limit, after a backup.

Every table prints our success rate with its Wilson 95 % interval beside the
paper's (the Wilson interval of its count), the solved-at median and the
sparsity error, and a verdict: our rate inside, above or below the paper's
interval; a row below it at a smaller budget than the paper's says so. The
Fig. 3 hidden-size panel also reads success three ways: at the best
validation step (the paper's rule), at any evaluation, at the final step.
Results rows of the `--reuse` files (the committed ones at smaller budgets)
join the tables, each budget a row of its own. Rows still to run at the
paper's budget are listed.

Writes `<out>/summary.md` and `<out>/fig3_hidden_seeds.csv` (each seed's
first and last solved step), and the NALM benchmark's `summary.md`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's start-up lines
sys.path.insert(0, str(Path(__file__).resolve().parent))

import nalm  # noqa: E402
from paper_plan import (  # noqa: E402
    NALM,
    NO_SETTINGS,
    OUT,
    OUT_REFERENCE,
    PARTS,
    PRIORITY,
    RESULTS,
    REUSE,
    plan_text,
    sweep_groups,
)
from paper_tables import hidden_size_seeds, load_tables, summary_text  # noqa: E402

from keras_nalu.experiments import REFERENCE_SETTINGS  # noqa: E402
from keras_nalu.sweeps.engines import BACKUP_EVERY  # noqa: E402
from keras_nalu.sweeps.local import add_filling_flags, filling_options  # noqa: E402

# --- the command ---------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = options.add_mutually_exclusive_group(required=True)
    action.add_argument("--full", action="store_true", help="train, then summarize")
    action.add_argument("--dry-run", action="store_true", help="print the plan")
    action.add_argument("--summarize", action="store_true", help="only the tables")
    options.add_argument(
        "--only",
        default=",".join(PRIORITY),
        help=f"parts, comma-separated, trained in this order: {list(PRIORITY)}",
    )
    options.add_argument("--models", help="only these presets, comma-separated")
    options.add_argument(
        "--hidden-sizes", help="only these Fig. 3 hidden sizes, e.g. 4,10"
    )
    options.add_argument(
        "--seeds", help="every part's seeds (default 0-99, Fig. 3 0-49, NALM 0-24)"
    )
    options.add_argument(
        "--iterations",
        type=int,
        help="every part's steps (default: the paper's, 5·10⁶; Table 1 2·10⁵)",
    )
    options.add_argument(
        "--chunk-size",
        type=int,
        default=1000,
        help="replicas a chunk (with --time-limit: the most; chunks are sized to "
        "finish inside it)",
    )
    add_filling_flags(options)
    options.add_argument(
        "--time-limit",
        type=float,
        help="seconds: chunks sized from measured step times so that each "
        "finishes inside it; rerun the same command to continue",
    )
    options.add_argument(
        "--fixed-chunks",
        action="store_true",
        help="with --time-limit: chunks of --chunk-size, stopped at the limit "
        "after a backup, instead of chunks sized to finish",
    )
    options.add_argument(
        "--backup-every", type=float, default=BACKUP_EVERY, help="seconds"
    )
    options.add_argument(
        "--reference-settings",
        action="store_true",
        help="train with the reference code's step: Adam's epsilon 1e-8 and the "
        "sparsity strength recomputed every step (its own config ids; default "
        f"--out {OUT_REFERENCE.relative_to(RESULTS.parent)})",
    )
    options.add_argument(
        "--out",
        help=f"folder of results.csv (default {OUT.relative_to(RESULTS.parent)})",
    )
    options.add_argument(
        "--nalm-out", default=str(nalm.OUT), help="folder of the NALM results.csv"
    )
    options.add_argument(
        "--reuse",
        default=",".join(str(path) for path in REUSE),
        help="other results files whose rows join the tables, comma-separated",
    )
    options.add_argument(
        "--rate", type=float, default=4e4, help="seed-steps/s for --dry-run's estimate"
    )
    options.add_argument(
        "--step-rate", type=float, help="steps/s of one chunk, for --dry-run"
    )
    return options


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    filling_options(args)  # XLA's flags, before anything starts JAX
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in names if name not in PRIORITY]
    if unknown:
        raise SystemExit(
            f"paper.py: unknown parts {unknown}; expected {list(PRIORITY)}"
        )
    models = None if args.models is None else args.models.split(",")
    settings = REFERENCE_SETTINGS if args.reference_settings else NO_SETTINGS
    out = Path(args.out or (OUT_REFERENCE if args.reference_settings else OUT))
    results_path = out / "results.csv"
    hidden_sizes = None
    if args.hidden_sizes is not None:
        hidden_sizes = [int(size) for size in args.hidden_sizes.split(",")]
    groups = sweep_groups(
        names, args.seeds, args.iterations, models, hidden_sizes, settings
    )
    nalm_cells = _nalm_cells(args) if NALM in names else []
    if args.dry_run:
        print(
            plan_text(
                groups,
                results_path,
                args.chunk_size,
                args.rate,
                args.step_rate,
                args.chunks_per_device,
                _pack_replicas(args),
            )
        )
        if nalm_cells:
            left = nalm.seed_steps_left(
                nalm_cells, _nalm_seeds(args), Path(args.nalm_out) / "results.csv"
            )
            print(
                f"NALM benchmark (benchmarks/nalm.py): {len(nalm_cells)} cells, "
                f"still to train: {left:.3e} seed-steps"
            )
        return 0
    complete = True
    if args.full:
        complete = train(groups, nalm_cells, names, results_path, args)
    parts = [name for name in names if name != NALM]
    if parts:
        reuse = [Path(path) for path in args.reuse.split(",") if path]
        results = load_tables([results_path, *reuse])
        text = summary_text(results, parts, models, settings)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.md").write_text(text, encoding="utf-8")
        if "fig3_hidden" in parts:
            hidden_size_seeds(results, settings).to_csv(
                out / "fig3_hidden_seeds.csv", index=False
            )
        print(text)
    if nalm_cells:
        nalm_text = nalm.write_summary(Path(args.nalm_out))
        print(nalm_text or "NALM benchmark: no results yet.")
    if not complete:
        print("Stopped at the time limit: run the same command again to continue.")
    return 0


def _pack_replicas(args) -> int:
    """`--pack-replicas`, or the default of this device and engine."""
    if args.pack_replicas is not None:
        return args.pack_replicas
    from keras_nalu.sweeps.local import default_pack_replicas

    return default_pack_replicas()


def _nalm_seeds(args) -> str:
    return args.seeds or nalm.SEEDS


def _nalm_cells(args) -> list:
    """The NALM benchmark's cells (every unit, operation, range, input size)."""
    cells = nalm.plan(
        nalm.NALM_INPUT_SIZES,
        list(nalm.UNITS),
        ("add", "sub", "mul", "div"),
        iterations=args.iterations,
    )
    if args.models is None:
        return cells
    return [cell for cell in cells if cell.preset in args.models.split(",")]


def train(groups, nalm_cells, names, results_path: Path, args) -> bool:
    """Trains the parts in the order of `names`; False if the time limit stopped it.

    With `--time-limit` (and not `--fixed-chunks`), chunks are sized from
    measured step times so that each finishes inside the limit
    (`keras_nalu.sweeps.planning.sweep_within`), and each finished chunk
    prints a line.
    """
    from keras_nalu.sweeps.planning import sweep_within
    from keras_nalu.sweeps.runner import run_sweep

    deadline = None
    if args.time_limit is not None:
        deadline = time.monotonic() + args.time_limit
    planned = deadline is not None and not args.fixed_chunks
    by_name = {name: (seeds, configs) for name, seeds, configs in groups}
    results_path.parent.mkdir(parents=True, exist_ok=True)
    for index, name in enumerate(names):
        if name == NALM:
            if not nalm_cells:
                continue
            started = time.perf_counter()
            complete = nalm.train(
                nalm_cells,
                _nalm_seeds(args),
                Path(args.nalm_out) / "results.csv",
                args.chunk_size,
                deadline if planned else None,
                args.backup_every,
            )
            print(f"NALM benchmark: {time.perf_counter() - started:.0f} s")
            if not complete:
                return False
            continue
        if name not in by_name:
            continue
        seeds, configs = by_name[name]
        time_limit = None
        if deadline is not None:
            time_limit = max(deadline - time.monotonic(), 0.0)
            if index and not time_limit:
                return False
        started = time.perf_counter()
        if planned:
            complete = sweep_within(
                configs,
                seeds,
                results_path,
                deadline,
                chunk_size=args.chunk_size,
                backup_every=args.backup_every,
                **filling_options(args),
            )
            print(
                f"{PARTS[name].title}: {time.perf_counter() - started:.0f} s"
                + ("" if complete else ", stopped at the time limit")
            )
        else:
            outcome = run_sweep(
                configs,
                seeds,
                results_path,
                chunk_size=args.chunk_size,
                backup_every=args.backup_every,
                time_limit=time_limit,
                **filling_options(args),
            )
            complete = outcome.complete
            print(
                f"{PARTS[name].title}: {len(configs)} configurations × "
                f"{len(seeds)} seeds: {outcome.new_rows} new rows, "
                f"{outcome.skipped} already there, "
                f"{time.perf_counter() - started:.0f} s"
            )
        if not complete:
            return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())
