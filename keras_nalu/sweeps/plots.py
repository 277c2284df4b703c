"""Sweep figures: success rate, solved-at step and sparsity error against a knob.

The layout is Madsen & Johansen's (2020) Figure 3 (and Figures 7-8): three panels side
by side sharing the swept parameter on their x-axis, one line per model, each
point with its 95 % interval from `keras_nalu.sweeps.summary.summarize`.
Figures are drawn on matplotlib's Agg canvas, so no display is needed and
pyplot's global state is never touched.

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

from keras_nalu.sweeps.summary import summarize

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
    appearance. An interval bound at the edge of the parameter space
    (infinite) is drawn without its bar.

    Args:
        results: one row per run (see `keras_nalu.sweeps.summary.load_results`).
        x: the swept column on the x-axis.
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
    lines = [hue]
    if operation is None and "operation" in results:
        if results["operation"].nunique(dropna=False) > 1:
            lines = ["operation", hue]
    numeric = pd.api.types.is_numeric_dtype(
        results[x]
    ) and not pd.api.types.is_bool_dtype(results[x])
    if not numeric:
        results = results.assign(**{x: results[x].astype(str)})
    summary = summarize(results, by=(*lines, x))
    categories = list(pd.unique(results[x]))
    if numeric:
        spacing = np.min(np.diff(np.sort(categories))) if len(categories) > 1 else 1.0
    else:
        spacing = 1.0

    figure = Figure(figsize=(12, 3.6), dpi=120, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, 3)
    groups = list(summary.groupby(lines, sort=False, dropna=False))
    for index, (keys, group) in enumerate(groups):
        label = keys[-1] if len(keys) == 1 else f"{keys[1]} ({keys[0]})"
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
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(
        handles,
        labels,
        loc="outside lower center",
        ncol=min(len(labels), 6) or 1,
        title=" / ".join(reversed(lines)) if len(lines) > 1 else hue,
    )
    return figure


def plot_results(
    results: pd.DataFrame,
    x: str,
    out_path: str | os.PathLike,
    hue: str = "model",
    operation: str | None = None,
) -> Path:
    """Saves the three panels of Madsen & Johansen's (2020) Figure 3 against `x` as a
    PNG.

    See `results_figure` for the panels; this draws it and writes it.

    Args:
        results: one row per run (see `keras_nalu.sweeps.summary.load_results`).
        x: the swept column on the x-axis, e.g. `"hidden_size"` or
            `"interpolation_range"`.
        out_path: where to write the PNG; parent directories are created.
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
    figure = results_figure(results, x=x, hue=hue, operation=operation)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out_path, format="png")
    return out_path


def _select(
    results: pd.DataFrame, x: str, hue: str, operation: str | None
) -> pd.DataFrame:
    for name, column in (("x", x), ("hue", hue)):
        if column not in results:
            raise ValueError(
                f"plot_results expects {name} to be a column of the results. "
                f"Received: {name}={column!r}; columns are {list(results.columns)}"
            )
    if operation is not None:
        if "operation" not in results:
            raise ValueError(
                "plot_results was given operation="
                f"{operation!r}, but the results have no 'operation' column"
            )
        selected = results[results["operation"] == operation]
        if selected.empty:
            raise ValueError(
                f"No runs with operation={operation!r}. Operations in the results: "
                f"{list(pd.unique(results['operation']))}"
            )
        return selected
    if results.empty:
        raise ValueError("plot_results received no runs")
    return results
