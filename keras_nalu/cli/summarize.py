"""`keras-nalu summarize`: the paper-style table of a results CSV."""

import sys
from pathlib import Path

from keras_nalu.cli.messages import one_line

HELP = "paper-style table of results"
DESCRIPTION = (
    "Print and write (Markdown, LaTeX, CSV) the success rate, solved-at "
    "step and sparsity error of a results CSV, one row per configuration "
    "and engine; a run listed twice is refused."
)


def add_flags(summarize) -> None:
    summarize.add_argument("results", help="a results CSV")
    summarize.add_argument(
        "--by",
        default=None,
        metavar="COLUMNS",
        help="comma list of columns to group by, e.g. operation,model: runs "
        "that differ in other columns are pooled, and a note says which "
        "(default: one row per configuration and engine)",
    )
    summarize.add_argument(
        "--out",
        default=None,
        help="folder for RESULTS_STEM.summary.md/.tex/.csv (default: beside RESULTS)",
    )


def run(args) -> int:
    from keras_nalu.reports.summary import load_results, summarize
    from keras_nalu.reports.tables import to_markdown

    results = load_results(args.results)
    if results.empty:
        print(
            f"keras-nalu summarize: {args.results} holds 0 runs (a header and no "
            "rows): there is nothing to summarize, and no table is written",
            file=sys.stderr,
        )
        return 0
    by = None
    if args.by is not None:  # a column named twice is one group key
        by = list(dict.fromkeys(column.strip() for column in args.by.split(",")))
    summary = summarize(results, by=by)
    print(to_markdown(summary))
    _note_pooled(args, results, by)
    return _write(args, summary)


def _note_pooled(args, results, by) -> None:
    """A note where --by puts runs of different configurations in one row."""
    from keras_nalu.reports.summary import pooled_columns

    pooled = {} if by is None else pooled_columns(results, by)
    if pooled:
        what = " and ".join(
            f"{column} ({', '.join(map(str, values))})"
            for column, values in pooled.items()
        )
        print(
            f"keras-nalu summarize: note: --by {args.by} pools runs of different "
            f"{what} in one row; leave --by out for one row per configuration "
            "and engine",
            file=sys.stderr,
        )


def _write(args, summary) -> int:
    """The tables' files, or an error that the table printed is not saved."""
    from keras_nalu._files import check_output_folder
    from keras_nalu.reports.tables import write_summary

    folder = Path(args.results).parent if args.out is None else Path(args.out)
    try:
        check_output_folder(folder, "--out")
        paths = write_summary(args.results, args.out, summary=summary)
    except (ValueError, OSError) as error:
        print(
            "keras-nalu summarize: error: the table above is not saved: "
            f"{one_line(error)}"
            + ("" if args.out else " (--out defaults to the results file's folder)"),
            file=sys.stderr,
        )
        return 1
    for kind, path in paths.items():
        print(f"wrote {kind}: {path}", file=sys.stderr)
    return 0
