"""The summary's tables: Markdown and LaTeX as in the paper, and their files.

`to_markdown` and `to_latex` lay out the output of `summarize` like Madsen &
Johansen's (2020) Table 2; `write_summary` writes Markdown, LaTeX and CSV
beside a results file (`summary_paths`), never over a file that is not a
summary.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from keras_nalu._files import atomic_write, write_text
from keras_nalu.reports.summary import SUMMARY_STATISTICS, load_results, summarize

_MISSING = "—"


def to_markdown(summary: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table in the layout of Madsen & Johansen's (2020)
    Table 2.

    One row per group: its runs, those of them that diverged, then the
    paper's statistics; the success rate reads `98% [93%, 99%]`, the solved-at
    median `1.4e+06`, the solved-at and sparsity means `1.5e+06 [1.3e+06,
    1.7e+06]`; `—` marks a statistic without data (no seed solved the task).

    Args:
        summary: the output of `summarize`.

    Returns:
        The table as a string ending in a newline.

    Example:

    >>> import pandas as pd
    >>> runs = pd.DataFrame({
    ...     "operation": ["mul"] * 2, "model": ["nmu"] * 2,
    ...     "success": [True, False], "solved_at": [1000, None],
    ...     "sparsity_error": [1e-3, 0.3]})
    >>> print(to_markdown(summarize(runs)).splitlines()[2])
    | mul | nmu | 2 | — | 50% [9%, 91%] | 1.0e+03 | 1.0e+03 | 1.0e-03 |
    """
    keys, header = _layout(summary)
    lines = [
        "| " + " | ".join(header) + " |",
        "|"
        + "|".join("---" if i < len(keys) else "--:" for i in range(len(header)))
        + "|",
    ]
    for row in summary.to_dict("records"):
        cells = [str(row[key]) for key in keys]
        cells += _formatted_statistics(row, _markdown_number, percent="%")
        lines.append(
            "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
        )
    return "\n".join(lines) + "\n"


def to_latex(summary: pd.DataFrame) -> str:
    r"""A LaTeX `tabular` in the layout of Madsen & Johansen's (2020) Table 2 (needs
    booktabs).

    With two or more group keys, the first (the operation) is printed once per
    block of rows, with a `\midrule` between blocks. Numbers read
    `$1.4 \cdot 10^{6}$`, intervals `[lower, upper]`. Built without pandas'
    Styler, so jinja2 is not needed.

    Args:
        summary: the output of `summarize`.

    Returns:
        The `tabular` environment as a string ending in a newline.

    Example:

    >>> import pandas as pd
    >>> runs = pd.DataFrame({
    ...     "operation": ["mul"] * 2, "model": ["nac_mul"] * 2,
    ...     "success": [True, False], "solved_at": [1000, None],
    ...     "sparsity_error": [1e-3, 0.3]})
    >>> to_latex(summarize(runs)).splitlines()[4].split(" & ")[:6]
    ['mul', 'nac\\_mul', '2', '---', '50\\% [9\\%, 91\\%]', '$1.0 \\cdot 10^{3}$']
    """
    keys, header = _layout(summary)
    alignment = "l" * len(keys) + "rr" + "l" * (len(header) - len(keys) - 2)
    lines = [
        f"\\begin{{tabular}}{{{alignment}}}",
        "\\toprule",
        " & ".join(_latex_escape(cell) for cell in header) + " \\\\",
        "\\midrule",
    ]
    previous = None
    for row in summary.to_dict("records"):
        cells = [_latex_escape(str(row[key])) for key in keys]
        # With two or more keys the first one opens blocks, as Op does in Table 2.
        if len(keys) > 1:
            if previous is not None and row[keys[0]] != previous:
                lines.append("\\midrule")
            if row[keys[0]] == previous:
                cells[0] = ""
            previous = row[keys[0]]
        cells += _formatted_statistics(row, _latex_number, percent="\\%")
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def summary_markdown(outcome) -> str:
    """The paper-style Markdown table of a sweep's rows (`summarize`).

    What `keras-nalu sweep` prints at its end: the summary of the file's
    rows of the sweep's configurations, grouped by what the grid varies
    (and by engine, where rows of an earlier sweep on another engine are
    there too).

    Args:
        outcome: the `keras_nalu.sweeps.runner.SweepOutcome` of `run_sweep`.
    """
    if not outcome.path.exists():  # no chunk has finished yet
        return "(no rows)\n"
    results = load_results(outcome.path)
    keep = results["config_id"].astype(str).isin(set(outcome.results["config_id"]))
    results = results[keep]
    if results.empty:
        return "(no rows)\n"
    by = list(outcome.group_by)
    if "engine" in results and results["engine"].nunique(dropna=False) > 1:
        by.append("engine")  # rows of an earlier sweep on another engine
    for key in by:  # None values are empty cells: show "None"
        results[key] = results[key].astype(object).where(results[key].notna(), "None")
    return to_markdown(summarize(results, by=by))


SUMMARY_SUFFIXES = {"markdown": ".md", "latex": ".tex", "csv": ".csv"}
"""The files `write_summary` writes, as `<results stem>.summary<suffix>`."""

# How each kind of summary file begins: an existing file that does not is
# someone else's and is never written over.
_SUMMARY_OPENINGS = {"markdown": "|", "latex": "\\begin{tabular}", "csv": None}


def summary_paths(
    results_path: str | os.PathLike, out_dir: str | os.PathLike | None = None
) -> dict[str, Path]:
    """Where `write_summary` puts the summaries of `results_path`.

    Beside the results file (or in `out_dir`), named after it:
    `hidden.csv` → `hidden.summary.md`, `hidden.summary.tex`,
    `hidden.summary.csv`. So the input is never written over, and two results
    files in one folder get two summaries.

    Example:

    >>> summary_paths("results/hidden.csv")["markdown"].as_posix()
    'results/hidden.summary.md'
    """
    results_path = Path(results_path)
    folder = results_path.parent if out_dir is None else Path(out_dir)
    return {
        kind: folder / f"{results_path.stem}.summary{suffix}"
        for kind, suffix in SUMMARY_SUFFIXES.items()
    }


def write_summary(
    results_path: str | os.PathLike,
    out_dir: str | os.PathLike | None = None,
    by: Sequence[str] | None = None,
    summary: pd.DataFrame | None = None,
) -> dict[str, Path]:
    """Summarizes a results file into Markdown, LaTeX and CSV files.

    The files are named after the results file (see `summary_paths`):
    `<stem>.summary.md`, `<stem>.summary.tex` and `<stem>.summary.csv`,
    beside it or in `out_dir`. The CSV holds the numbers of `summarize`
    (machine-readable, full precision); the Markdown and LaTeX files hold the
    formatted tables. An earlier summary is replaced; any other file in the
    way is refused, and the results file is never written to.

    Args:
        results_path: a results CSV (see `load_results`).
        out_dir: directory for the three files, created if needed; default
            the results file's own.
        by: the columns that define a group (see `summarize`).
        summary: the `summarize` output of the results file, if already
            computed; `by` is then not used.

    Returns:
        `{"markdown": ..., "latex": ..., "csv": ...}`, the paths written.

    Raises:
        ValueError: the results file is not one (see `load_results`), or an
            output path is the results file or a file that is not a summary.

    Example:

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "results.csv").write_text(
    ...     "model,operation,seed,success,solved_at,sparsity_error,"
    ...     "interpolation_mse,extrapolation_mse,iterations\\n"
    ...     "nau,add,0,True,5000,1e-4,1e-9,1e-8,50000\\n")
    >>> sorted(p.name for p in write_summary(folder / "results.csv").values())
    ['results.summary.csv', 'results.summary.md', 'results.summary.tex']
    """
    results_path = Path(results_path)
    if summary is None:
        summary = summarize(load_results(results_path), by=by)
    paths = summary_paths(results_path, out_dir)
    for kind, path in paths.items():
        _check_summary_target(path, kind, results_path)
    write_text(paths["markdown"], to_markdown(summary))
    write_text(paths["latex"], to_latex(summary))
    with atomic_write(paths["csv"], encoding="utf-8", newline="") as handle:
        summary.to_csv(handle, index=False)
    return paths


def _check_summary_target(path: Path, kind: str, results_path: Path) -> None:
    """Refuses to write a summary over the input or over a foreign file."""
    if not path.exists():
        return
    if path.is_dir() or path.resolve() == results_path.resolve():
        raise ValueError(
            f"the {kind} summary would replace {path}, which is "
            f"{'a folder' if path.is_dir() else 'the results file'}; pass "
            "another output folder."
        )
    try:
        with open(path, encoding="utf-8") as handle:
            first = handle.readline()
    except (OSError, UnicodeDecodeError):
        first = ""
    opening = _SUMMARY_OPENINGS[kind]
    if opening is None:
        looks_like_summary = all(
            column in first.split(",") for column in SUMMARY_STATISTICS[:4]
        )
    else:
        looks_like_summary = first.startswith(opening)
    if not looks_like_summary:
        raise ValueError(
            f"{path} exists and is not a summary; it is left untouched. Move it "
            "or pass another output folder."
        )


def _layout(summary: pd.DataFrame) -> tuple[list[str], list[str]]:
    missing = [column for column in SUMMARY_STATISTICS if column not in summary]
    if missing:
        raise ValueError(
            f"Expected the output of summarize(); missing columns {missing}"
        )
    keys = [column for column in summary.columns if column not in SUMMARY_STATISTICS]
    header = [
        *keys,
        "n",
        "diverged",
        "success rate",
        "solved at: median",
        "solved at: mean",
        "sparsity error: mean",
    ]
    return keys, header


def _formatted_statistics(row: Mapping, number, percent: str) -> list[str]:
    diverged = row["diverged"]
    return [
        str(int(row["n"])),
        number(math.nan) if pd.isna(diverged) else str(int(diverged)),
        _success_cell(row, number, percent),
        number(row["solved_at_median"]),
        _interval_cell(
            row["solved_at_mean"],
            row["solved_at_lower"],
            row["solved_at_upper"],
            number,
        ),
        _interval_cell(
            row["sparsity_error_mean"],
            row["sparsity_error_lower"],
            row["sparsity_error_upper"],
            number,
        ),
    ]


def _success_cell(row: Mapping, number, percent: str) -> str:
    rate, lower, upper = row["success_rate"], row["success_lower"], row["success_upper"]
    if not np.isfinite(rate):
        return number(math.nan)

    def pct(value: float) -> str:
        return f"{100 * value:.0f}{percent}"

    return f"{pct(rate)} [{pct(lower)}, {pct(upper)}]"


def _interval_cell(value: float, lower: float, upper: float, number) -> str:
    if math.isnan(value) or math.isnan(lower) or math.isnan(upper):
        return number(value)
    return f"{number(value)} [{number(lower)}, {number(upper)}]"


def _markdown_number(value: float) -> str:
    if math.isnan(value):
        return _MISSING
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.1e}"


def _latex_number(value: float) -> str:
    if math.isnan(value):
        return "---"
    if math.isinf(value):
        return "$\\infty$" if value > 0 else "$-\\infty$"
    if value == 0:
        return "$0$"
    mantissa, exponent = f"{value:.1e}".split("e")
    exponent = int(exponent)
    if exponent == 0:
        return f"${mantissa}$"
    return f"${mantissa} \\cdot 10^{{{exponent}}}$"


_LATEX_SPECIALS = {
    "\\": "\\textbackslash{}",
    "&": "\\&",
    "%": "\\%",
    "$": "\\$",
    "#": "\\#",
    "_": "\\_",
    "{": "\\{",
    "}": "\\}",
    "~": "\\textasciitilde{}",
    "^": "\\textasciicircum{}",
}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(char, char) for char in text)
