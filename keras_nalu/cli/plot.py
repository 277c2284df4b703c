"""`keras-nalu plot`: the panels of Madsen & Johansen's (2020) Fig. 3."""

import os
from pathlib import Path

HELP = "the panels of Madsen & Johansen's (2020) Fig. 3 against --x"
DESCRIPTION = None


def add_flags(plot) -> None:
    from keras_nalu.sweeps.results import CONFIG_COLUMNS

    swept = [c for c in CONFIG_COLUMNS if c not in ("model", "operation", "seed")]
    plot.add_argument("results", help="a results CSV")
    plot.add_argument(
        "--x",
        required=True,
        metavar="COLUMN",
        help="the swept column on the x-axis, one the runs differ in: "
        f"{', '.join(swept)}, engine, or an extra column of RESULTS (not "
        "model or operation, which make the lines, nor an outcome)",
    )
    plot.add_argument("--operation", default=None, help="plot only this operation")
    plot.add_argument(
        "--out",
        default=None,
        help="PNG path, or a folder for RESULTS_STEM.X.png (default: beside RESULTS)",
    )
    plot.add_argument(
        "--overwrite",
        action="store_true",
        help="write over a file at --out that is not a plot keras-nalu made",
    )


def run(args) -> int:
    from keras_nalu.reports.plots import plot_results
    from keras_nalu.reports.summary import load_results

    results = Path(args.results)
    out = _out_path(args, results)
    table = load_results(results)
    _check_out(args, results, out)
    path = plot_results(table, x=args.x, out_path=out, operation=args.operation)
    print(path)
    return 0


def _out_path(args, results: Path) -> Path:
    """Where the plot goes: --out, or RESULTS_STEM.X.png in a folder."""
    out = results.with_suffix(f".{args.x}.png")
    if args.out is not None:
        # A folder (one that exists, or a path ending in "/") gets the plot
        # under its default name; Path() would drop the "/" and make a file.
        folder = args.out.endswith(("/", os.sep)) or Path(args.out).is_dir()
        out = Path(args.out) / out.name if folder else Path(args.out)
    return out


def _check_out(args, results: Path, out: Path) -> None:
    """One line where `out` is no PNG path to write, or not ours to replace."""
    from keras_nalu._files import check_output_folder
    from keras_nalu.reports.plots import made_by_plot

    if out.exists() and out.resolve() == results.resolve():
        raise ValueError(f"--out {args.out!r} is the results file; pass a PNG path.")
    if out.suffix.lower() != ".png":
        raise ValueError(
            f"--out {args.out!r}: plot writes PNG files; pass a path ending in "
            ".png, or a folder for RESULTS_STEM.X.png."
        )
    if out.exists():
        if out.is_dir():
            raise ValueError(f"--out {str(out)!r} is a folder; pass a PNG path.")
        if not args.overwrite and not made_by_plot(out):
            raise ValueError(
                f"--out {str(out)!r} exists and is not a plot keras-nalu made; it "
                "is left untouched. Pass another --out, or --overwrite to replace it."
            )
    check_output_folder(out.parent, "--out", out)
