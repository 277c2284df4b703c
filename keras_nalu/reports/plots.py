"""Sweep figures: success rate, solved-at step and sparsity error against a knob.

The layout is Madsen & Johansen's (2020) Figure 3 (and Figures 7-8): three panels side
by side sharing the swept parameter on their x-axis, one line per model, each
point with its 95 % interval from `keras_nalu.reports.summary.summarize`.
Figures are drawn on matplotlib's Agg canvas, so no display is needed and
pyplot's global state is never touched. Runs of different configurations or
engines are never pooled into one point: each gets a line of its own. The PNG
says in its `Software` text that this module drew it (`made_by_plot`), so
`keras-nalu plot` replaces its own plots and no other file.

Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §4.1.3,
Figure 3 and App. C.4.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from keras_nalu._files import atomic_write
from keras_nalu.errors import ArgumentError, literal
from keras_nalu.reports.summary import OUTCOME_COLUMNS, run_keys, summarize

PLOT_SOFTWARE = "keras-nalu plot"
"""The PNG `Software` text of every plot `plot_results` writes."""

DEFAULT_LABEL = "default"
"""The tick and label of an empty cell: a field left at its default (None)."""

_PANELS = (
    ("success_rate", "success_lower", "success_upper", "Success rate"),
    (
        "solved_at_mean",
        "solved_at_lower",
        "solved_at_upper",
        "Solved at iteration step",
    ),
    (
        "sparsity_error_mean",
        "sparsity_error_lower",
        "sparsity_error_upper",
        "Sparsity error",
    ),
)
# Lines of different hue are shifted sideways by this fraction of the spacing
# between x positions, so their error bars do not hide each other.
_DODGE = 0.04
# A numeric sweep with at most this many values gets a tick at each of them.
_MAX_LABELLED_VALUES = 12


def results_figure(
    results: pd.DataFrame,
    x: str,
    hue: str = "model",
    operation: str | None = None,
) -> Figure:
    """The three panels of Madsen & Johansen's (2020) Figure 3 for the runs in
    `results`.

    Panels: success rate (Wilson interval), solved-at step (gamma-MLE mean
    with its profile-likelihood interval) and sparsity error (beta-MLE mean
    with its profile-likelihood interval), the last two over solved seeds
    only. A numeric `x` (e.g. `hidden_size`) is placed at its values; any
    other `x` (e.g. `interpolation_range`) is categorical, in order of first
    appearance. Runs that differ in another column than `x` and `hue` (a
    budget, an engine; see `keras_nalu.reports.summary.run_keys`) get lines
    of their own, labelled with what differs: along a line only `x`
    changes. An interval bound at the edge of the parameter space (infinite)
    is drawn without its bar.

    Args:
        results: one row per run (see `keras_nalu.reports.summary.load_results`).
        x: the swept column on the x-axis: a column of the runs'
            configuration (`plot_columns`), not an outcome, not `hue` and
            not `"operation"`.
        hue: the column with one line per value; default `"model"`.
        operation: keep only runs of this operation. When None and the runs
            hold several operations, each line is one (hue, operation) pair.

    Returns:
        A `matplotlib.figure.Figure` with three axes and a legend.

    Example:

    >>> import pandas as pd
    >>> runs = pd.DataFrame({
    ...     "model": ["nmu"] * 4, "hidden_size": [2, 2, 4, 4],
    ...     "success": [True, True, True, False],
    ...     "solved_at": [1000, 3000, 2000, None],
    ...     "sparsity_error": [1e-3, 2e-3, 1e-3, 0.2]})
    >>> len(results_figure(runs, x="hidden_size").axes)
    3
    """
    results = _select(results, x, hue, operation)
    within = [hue]
    if operation is None and "operation" in results:
        if results["operation"].nunique(dropna=False) > 1:
            within = ["operation", hue]
    # A line holds everything but x constant, so it never mixes budgets, say.
    keys = run_keys(results, within=within)
    if "engine" in keys and results["engine"].nunique(dropna=False) == 1:
        keys.remove("engine")  # one engine: no need to say which on every line
    lines = [key for key in keys if key != x]
    numeric = pd.api.types.is_numeric_dtype(
        results[x]
    ) and not pd.api.types.is_bool_dtype(results[x])
    categories = None
    if numeric and results[x].isna().any():
        # An empty cell is a field left at its default (epsilon, sparsity:
        # None), which has no place on a number axis: every value becomes a
        # category, "default" first, then the numbers in order.
        numbers = sorted(results[x].dropna().unique())
        categories = [DEFAULT_LABEL, *(f"{value:g}" for value in numbers)]
        results = results.assign(**{x: results[x].map(_category)})
        numeric = False
    elif not numeric:
        results = results.assign(**{x: results[x].astype(str)})
    summary = summarize(results, by=(*lines, x))
    if categories is None:
        categories = list(pd.unique(results[x]))
    if numeric:
        spacing = np.min(np.diff(np.sort(categories))) if len(categories) > 1 else 1.0
    else:
        spacing = 1.0

    figure = Figure(figsize=(12, 3.6), dpi=120, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, 3)
    groups = list(summary.groupby(lines, sort=False, dropna=False))
    for index, (values, group) in enumerate(groups):
        label = _label(dict(zip(lines, values)), hue)
        if numeric:
            group = group.sort_values(x)
            positions = group[x].to_numpy(dtype=float)
        else:
            positions = np.array([categories.index(value) for value in group[x]], float)
        positions = positions + (index - (len(groups) - 1) / 2) * _DODGE * spacing
        for axis, (value, lower, upper, _) in zip(axes, _PANELS):
            centre = group[value].to_numpy(dtype=float)
            errors = np.stack(
                [
                    centre - group[lower].to_numpy(dtype=float),
                    group[upper].to_numpy(dtype=float) - centre,
                ]
            )
            errors[~np.isfinite(errors)] = 0.0
            axis.errorbar(
                positions,
                centre,
                yerr=errors,
                label=str(label),
                color=f"C{index % 10}",
                marker="o",
                markersize=4,
                capsize=3,
            )

    for axis, (_, _, _, title) in zip(axes, _PANELS):
        axis.set_title(title)
        axis.set_xlabel(x.replace("_", " "))
        axis.grid(alpha=0.3)
        if not numeric:
            axis.set_xticks(range(len(categories)), [str(c) for c in categories])
            axis.tick_params(axis="x", labelrotation=30)
        elif len(categories) <= _MAX_LABELLED_VALUES:
            axis.set_xticks(sorted(categories))
    axes[0].set_ylim(-0.05, 1.05)
    axes[1].ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    if operation is not None:
        figure.suptitle(f"operation: {operation}")
    _legend(figure, axes[0], _label({key: key for key in lines}, hue, named=False))
    return figure


def _legend(figure, axis, title: str) -> None:
    """The lines' legend under the axes, as many labels a row as fit."""
    handles, labels = axis.get_legend_handles_labels()
    longest = max((len(label) for label in labels), default=0)
    figure.legend(
        handles,
        labels,
        loc="outside lower center",
        ncol=max(min(len(labels), 6, _LEGEND_CHARACTERS // (longest + 8)), 1),
        title=title,
    )


_LEGEND_CHARACTERS = 140
"""About the characters of legend labels (and their markers) one row of the
figure's legend holds."""


def _category(value) -> str:
    """A value of a numeric column with empty cells, as its tick label."""
    return DEFAULT_LABEL if pd.isna(value) else f"{value:g}"


def _label(values: dict, hue: str, named: bool = True) -> str:
    """`hue`'s value, then what else tells the line apart: "nmu (mul, jax)"."""
    values = {
        key: DEFAULT_LABEL if named and pd.isna(value) else value
        for key, value in values.items()
    }
    text = str(values.pop(hue))
    details = [
        str(value) if key in ("operation", "engine") or not named else f"{key}={value}"
        for key, value in values.items()
    ]
    return f"{text} ({', '.join(details)})" if details else text


def plot_columns(results: pd.DataFrame, hue: str = "model") -> list[str]:
    """The columns `results_figure` accepts as `x`: what the runs were swept over.

    Every column of the runs' configuration (not an outcome such as
    `success`; see `keras_nalu.reports.summary.OUTCOME_COLUMNS`) but `hue`
    and `"operation"`, which make the lines.

    Example:

    >>> import pandas as pd
    >>> runs = pd.DataFrame({"model": ["nmu"], "operation": ["mul"], "seed": [0],
    ...                      "hidden_size": [2], "success": [True]})
    >>> plot_columns(runs)
    ['hidden_size']
    """
    return [
        column
        for column in results.columns
        if column not in OUTCOME_COLUMNS and column not in (hue, "operation")
    ]


def made_by_plot(path: str | os.PathLike) -> bool:
    """Whether the file at `path` is a PNG that `plot_results` wrote."""
    try:
        with Image.open(path) as image:
            software = getattr(image, "text", {}).get("Software", "")
            return image.format == "PNG" and software == PLOT_SOFTWARE
    # Pillow reports a file that is no image, or a damaged one, in many ways;
    # each means "not one of ours".
    except Exception:  # noqa: BLE001
        return False


def plot_results(
    results: pd.DataFrame,
    x: str,
    out_path: str | os.PathLike,
    hue: str = "model",
    operation: str | None = None,
) -> Path:
    """Saves the three panels of Madsen & Johansen's (2020) Figure 3 against `x` as a
    PNG.

    See `results_figure` for the panels; this draws it and writes it, with
    `PLOT_SOFTWARE` as the PNG's `Software` text (`made_by_plot`).

    Args:
        results: one row per run (see `keras_nalu.reports.summary.load_results`).
        x: the swept column on the x-axis, e.g. `"hidden_size"` or
            `"interpolation_range"`.
        out_path: where to write the PNG (a `.png` path); parent
            directories are created.
        hue: the column with one line per value; default `"model"`.
        operation: keep only runs of this operation (e.g. `"mul"`).

    Returns:
        The path written.

    Example:

    >>> import pandas as pd, tempfile, pathlib
    >>> runs = pd.DataFrame({
    ...     "model": ["nmu"] * 4,
    ...     "interpolation_range": ["U[1,2]", "U[1,2]", "U[0,1]", "U[0,1]"],
    ...     "success": [True, True, True, False],
    ...     "solved_at": [1000, 3000, 2000, None],
    ...     "sparsity_error": [1e-3, 2e-3, 1e-3, 0.2]})
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "figure3.png"
    >>> plot_results(runs, x="interpolation_range", out_path=path).name
    'figure3.png'
    """
    if Path(out_path).suffix.lower() != ".png":
        raise ValueError(
            "plot_results writes PNG files: out_path must end in .png. "
            f"Received: out_path={str(out_path)!r}"
        )
    figure = results_figure(results, x=x, hue=hue, operation=operation)
    out_path = Path(out_path)
    with atomic_write(out_path, "wb") as handle:
        figure.savefig(handle, format="png", metadata={"Software": PLOT_SOFTWARE})
    return out_path


def _select(
    results: pd.DataFrame, x: str, hue: str, operation: str | None
) -> pd.DataFrame:
    if hue not in results:
        raise ArgumentError(
            "plot_results",
            "hue",
            hue,
            requirement="be a column of the results, one of "
            f"{literal(list(results.columns))}",
        )
    allowed = plot_columns(results, hue)
    if x not in allowed:
        raise ArgumentError(
            "plot_results",
            "x",
            x,
            requirement="be a column the runs were swept over, one of "
            f"{literal(allowed)}"
            + (" (these results have none)" if not allowed else "")
            + f"; {literal(hue)} and operation make the lines, and outcomes such "
            "as success are the panels",
        )
    if operation is not None:
        if "operation" not in results:
            raise ArgumentError(
                "",
                "operation",
                operation,
                problem="The results have no 'operation' column to select "
                "{operation=} from.",
                received={},
            )
        selected = results[results["operation"] == operation]
        if selected.empty:
            raise ArgumentError(
                "",
                "operation",
                operation,
                problem="No runs with {operation=}. Operations in the results: "
                f"{literal(list(pd.unique(results['operation'])))}",
                received={},
            )
        return selected
    if results.empty:
        raise ValueError("The results hold no runs to plot.")
    return results
