"""Results tables: one row per (config, seed) run in, the paper's Table 2 out.

A results file is a CSV with one row per run. `summarize` groups the runs,
one group per configuration and engine unless told otherwise (`run_keys`),
and reports, per group, the success rate with a Wilson interval and, over the
seeds that solved the task only, the solved-at step (median, and gamma-MLE
mean with a profile-likelihood interval) and the sparsity error (beta-MLE mean
with a profile-likelihood interval). A run listed twice is refused, never
counted twice. `keras_nalu.reports.tables` lays that out like Madsen &
Johansen's (2020) Table 2.

Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §4.1.1 and
Table 2.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from keras_nalu.evaluation.statistics import (
    solved_at_summary,
    sparsity_error_summary,
    success_rate_interval,
)
from keras_nalu.sweeps.results import (
    RECORD_FIELDS,
    check_identity,
    first_bad_line,
    row_lines,
)

REQUIRED_COLUMNS = (
    "model",
    "operation",
    "seed",
    "success",
    "solved_at",
    "sparsity_error",
    "interpolation_mse",
    "extrapolation_mse",
    "iterations",
)
"""Columns every results file has; swept parameters come as extra columns."""

SUMMARY_STATISTICS = (
    "n",
    "success_rate",
    "success_lower",
    "success_upper",
    "solved_at_median",
    "solved_at_mean",
    "solved_at_lower",
    "solved_at_upper",
    "sparsity_error_mean",
    "sparsity_error_lower",
    "sparsity_error_upper",
    "diverged",
)
"""Columns `summarize` adds after the group keys."""

_NUMERIC_COLUMNS = (
    "seed",
    "solved_at",
    "sparsity_error",
    "interpolation_mse",
    "extrapolation_mse",
    "iterations",
)
# Always float, so an all-successful file reads like one with empty cells.
_FLOAT_COLUMNS = (
    "solved_at",
    "sparsity_error",
    "interpolation_mse",
    "extrapolation_mse",
)

OUTCOME_COLUMNS = frozenset(
    {*REQUIRED_COLUMNS[3:], *RECORD_FIELDS, "seed", "config_id"}
    # what `explain` read from the trained model (`keras-nalu train`'s record)
    | {"formula", "formula_verdict"}
) - {"engine"}
"""Columns that say how a run went (or which seed it was), not what it was.

Every other column of a results file tells one configuration from another
(see `run_keys`): the config fields of a sweep file (`max_iterations`,
`hidden_size`, ...), the swept columns of a hand-made file, and the `engine`
that trained the run."""


def load_results(path: str | os.PathLike) -> pd.DataFrame:
    """Reads a results CSV and checks that it is one.

    Args:
        path: a CSV with one row per (config, seed) run and at least the
            columns in `REQUIRED_COLUMNS`; `solved_at` is empty for runs that
            never solved the task.

    Returns:
        The runs as a DataFrame; `success` is boolean, `solved_at`,
        `sparsity_error`, the MSEs and `iterations` are numeric.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: `path` is a folder; the file is not a CSV, lacks
            required columns (they are named), has a malformed row (a row cut
            short, one without its model, operation or seed: its line is
            named; no such row is ever counted), holds values of the wrong
            kind, or lists one run twice (the same configuration, engine and
            seed: both lines are named; no run is ever counted twice).

    Example:

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.csv"
    >>> _ = path.write_text(
    ...     "model,operation,seed,success,solved_at,sparsity_error,"
    ...     "interpolation_mse,extrapolation_mse,iterations\\n"
    ...     "nmu,mul,0,True,15000,1e-6,1e-9,1e-8,50000\\n")
    >>> load_results(path)[["model", "success", "solved_at"]]
      model  success  solved_at
    0   nmu     True    15000.0
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a folder; pass a results CSV file.")
    if not path.is_file():
        raise FileNotFoundError(f"No results file at {path}")
    try:
        lines = row_lines(path)
        results = pd.read_csv(path, dtype={"config_id": str})
    except ValueError as error:  # pandas' parser errors are ValueErrors too
        reason = " ".join(str(error).split())
        raise ValueError(f"{path} is not a results CSV: {reason}") from None
    if len(results) != len(lines):
        raise ValueError(
            f"{path} is not a results CSV: {len(lines)} rows by the CSV rules "
            f"but {len(results)} read by pandas"
        )
    missing = [column for column in REQUIRED_COLUMNS if column not in results]
    if missing:
        raise ValueError(
            f"{path} is not a results CSV: missing required columns {missing}. "
            f"Found columns: {list(results.columns)}"
        )
    problem = check_identity(results, lines)
    if problem:
        raise ValueError(f"{path}: {problem}")
    results = _coerce_columns(results, source=str(path), lines=lines)
    repeated = _repeated_run(results)
    if repeated is not None:
        first, again = (lines[index] for index in repeated)
        raise ValueError(
            f"{path}: line {again} repeats the run of line {first} (the same "
            "configuration, engine and seed); keep one of the two lines only, so "
            "that no run counts twice."
        )
    return results


def _repeated_run(results: pd.DataFrame) -> tuple[int, int] | None:
    """Positions of the first run listed twice and of its first listing, or None.

    A run is its configuration (every column that is not an outcome, and
    `config_id` where the file has one), its engine and its seed.
    """
    if "seed" not in results or results.empty:
        return None
    identity = [c for c in results.columns if c not in OUTCOME_COLUMNS]
    identity += [c for c in ("config_id", "seed") if c in results]
    seen: dict[tuple, int] = {}
    rows = results[identity].astype(str).itertuples(index=False, name=None)
    for position, key in enumerate(rows):
        if key in seen:
            return seen[key], position
        seen[key] = position
    return None


def run_keys(
    results: pd.DataFrame, within: Sequence[str] = ("operation", "model")
) -> list[str]:
    """The columns that tell the runs of `results` apart, for `summarize`.

    `within` (the columns of `within` that `results` has), then every other
    column that is not an outcome (`OUTCOME_COLUMNS`) and whose value differs
    inside a group of `within` — the swept config fields, in file order —
    then `engine` (always shown where the file has it), and `config_id` only
    where those still leave two configurations in one group (a preset
    revision, say). Grouped by these, no group pools runs of different
    configurations or engines.

    Example:

    >>> import pandas as pd
    >>> runs = pd.DataFrame({
    ...     "operation": ["add"] * 4, "model": ["nau"] * 4,
    ...     "max_iterations": [2000, 2000, 200, 200],
    ...     "engine": ["jax", "tensorflow"] * 2, "seed": [0, 0, 0, 0]})
    >>> run_keys(runs)
    ['operation', 'model', 'max_iterations', 'engine']
    """
    keys = [column for column in within if column in results]
    candidates = [
        column
        for column in results.columns
        if column not in OUTCOME_COLUMNS and column not in keys and column != "engine"
    ]
    if keys:
        grouped = results.groupby(keys, sort=False, dropna=False)
        counts = grouped[candidates].nunique(dropna=False) if candidates else None
        varying = [c for c in candidates if (counts[c] > 1).any()]
    else:
        varying = [c for c in candidates if results[c].nunique(dropna=False) > 1]
    keys += varying
    if "engine" in results:
        keys.append("engine")
    if "config_id" in results and keys:
        ids = results.groupby(keys, sort=False, dropna=False)["config_id"]
        if (ids.nunique(dropna=False) > 1).any():
            keys.append("config_id")
    return keys


def pooled_columns(results: pd.DataFrame, by: Sequence[str]) -> dict[str, list]:
    """The columns that `summarize(results, by)` pools, with their values.

    Each is a column of `run_keys(results)` outside `by` whose value differs
    inside a group of `by`: its runs are counted together though their
    configurations (or engines) differ. Empty when `by` keeps every
    configuration apart.

    Example:

    >>> import pandas as pd
    >>> runs = pd.DataFrame({
    ...     "operation": ["add"] * 2, "model": ["nau"] * 2,
    ...     "max_iterations": [2000, 200], "seed": [0, 0]})
    >>> pooled_columns(runs, by=["operation", "model"])
    {'max_iterations': [200, 2000]}
    """
    by = [by] if isinstance(by, str) else list(dict.fromkeys(by))
    pooled = {}
    for column in run_keys(results, within=by):
        if column in by:
            continue
        counts = results.groupby(by, sort=False, dropna=False)[column].nunique(
            dropna=False
        )
        if (counts > 1).any():
            values = pd.unique(results[column]).tolist()
            try:
                pooled[column] = sorted(values)
            except TypeError:  # numbers and text in one column
                pooled[column] = sorted(values, key=str)
    return pooled


def summarize(
    results: pd.DataFrame,
    by: Sequence[str] | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Success rate, solved-at step and sparsity error per group of runs.

    By default one group per configuration and engine (`run_keys`): runs of
    different budgets, swept values or engines are never pooled unless `by`
    says so (`pooled_columns` names what a `by` pools). A run listed twice
    (the same configuration, engine and seed) is refused, never counted
    twice. Groups keep their order of first appearance. `diverged` counts
    the runs whose loss diverged (their `diverged` column, which a sweep's
    results file always has; missing, `<NA>`, where the results have no such
    column); they are in `n` and count as unsolved. Solved-at and
    sparsity error use only the runs whose `success` is true, as in the
    paper; a group with no success has NaN there. The beta-MLE interval of
    the sparsity error needs errors in [0, 0.5], which bounded weights (NAU,
    NMU, NAC) always give; a model with unbounded weights (Linear, ReLU,
    NALU's Ŵ) can exceed 0.5, and its group gets the plain mean with a NaN
    interval.

    Args:
        results: one row per run, as from `load_results` (needs `success`,
            `solved_at`, `sparsity_error` and the `by` columns).
        by: the columns that define a group, e.g. `("operation", "model")` or
            `("model", "hidden_size")`; the runs of a group that differ in
            other columns are pooled. Default: `run_keys(results)`.
        confidence: coverage of every interval, in (0, 1); the paper's 95 %
            by default.

    Returns:
        One row per group: the `by` columns followed by `SUMMARY_STATISTICS`
        (`n`, `success_rate`, `success_lower`, `success_upper`,
        `solved_at_median`, `solved_at_mean`, `solved_at_lower`,
        `solved_at_upper`, `sparsity_error_mean`, `sparsity_error_lower`,
        `sparsity_error_upper`, `diverged`).

    Example:

    >>> import pandas as pd
    >>> runs = pd.DataFrame({
    ...     "operation": ["mul"] * 4, "model": ["nmu"] * 4,
    ...     "success": [True, True, True, False],
    ...     "solved_at": [1000, 2000, 4000, None],
    ...     "sparsity_error": [1e-3, 2e-3, 4e-3, 0.3]})
    >>> row = summarize(runs).iloc[0]
    >>> int(row["n"]), float(row["success_rate"]), float(row["solved_at_median"])
    (4, 0.75, 2000.0)
    """
    if by is None:
        by = run_keys(results)
    by = [by] if isinstance(by, str) else list(dict.fromkeys(by))
    needed = [*by, "success", "solved_at", "sparsity_error"]
    missing = [column for column in dict.fromkeys(needed) if column not in results]
    if missing:
        raise ValueError(
            f"summarize expects columns {missing}, which the results lack. "
            f"Found columns: {list(results.columns)}"
        )
    success = _as_flags(results["success"], source="results")
    diverged = (
        _as_flags(results["diverged"], source="results", name="diverged")
        if "diverged" in results
        else pd.Series(pd.NA, index=results.index, dtype="boolean")
    )
    repeated = _repeated_run(results)
    if repeated is not None:
        first, again = (results.index[position] for position in repeated)
        raise ValueError(
            f"summarize: the rows at index {first!r} and {again!r} are one run "
            "(the same configuration, engine and seed); drop one, so that no run "
            "counts twice."
        )
    rows = []
    grouped = results.assign(success=success, _diverged=diverged).groupby(
        by, sort=False, dropna=False
    )
    for keys, group in grouped:
        solved = group[group["success"]]
        successes = int(group["success"].sum())
        rate, lower, upper = success_rate_interval(successes, len(group), confidence)
        solved_at = solved_at_summary(solved["solved_at"], confidence)
        sparsity = _sparsity_error_or_mean(solved["sparsity_error"], confidence)
        rows.append(
            (
                *keys,
                len(group),
                rate,
                lower,
                upper,
                solved_at["median"],
                solved_at["mean"],
                solved_at["mean_lower"],
                solved_at["mean_upper"],
                sparsity["mean"],
                sparsity["lower"],
                sparsity["upper"],
                group["_diverged"].sum(skipna=False),
            )
        )
    summary = pd.DataFrame(rows, columns=[*by, *SUMMARY_STATISTICS])
    return summary.astype({"n": "int64", "diverged": "Int64"})


def _sparsity_error_or_mean(errors: pd.Series, confidence: float) -> dict:
    """`sparsity_error_summary`, or the plain mean when errors exceed 0.5."""
    values = pd.to_numeric(errors, errors="coerce").dropna()
    if (values > 0.5).any():
        return {"mean": float(values.mean()), "lower": math.nan, "upper": math.nan}
    return sparsity_error_summary(values, confidence)


def _coerce_columns(results: pd.DataFrame, source: str, lines=None) -> pd.DataFrame:
    results = results.copy()
    results["success"] = _as_flags(results["success"], source, lines)
    for column in _NUMERIC_COLUMNS:
        numbers = pd.to_numeric(results[column], errors="coerce")
        bad = numbers.isna() & results[column].notna()
        if bad.any():
            where = _where(bad, lines)
            value = results[column][bad].iloc[0]
            raise ValueError(
                f"{source}: {where}column {column!r} must be numeric (empty for "
                f"missing). Received: {value!r}"
            )
        results[column] = numbers.astype(float) if column in _FLOAT_COLUMNS else numbers
    return results


def _where(bad: pd.Series, lines) -> str:
    return "" if lines is None else f"line {first_bad_line(bad, lines)}: "


def _as_flags(
    column: pd.Series, source: str, lines=None, name: str = "success"
) -> pd.Series:
    """A column of flags (`success`, `diverged`) as bool: accepts booleans,
    0/1 and the strings true/false."""
    if pd.api.types.is_bool_dtype(column):
        return column.astype(bool)
    words = column.astype(str).str.strip().str.lower()
    mapping = {"true": True, "false": False, "1": True, "0": False}
    mapping.update({"1.0": True, "0.0": False})
    converted = words.map(mapping)
    if converted.isna().any():
        bad = column[converted.isna()].head(3).tolist()
        raise ValueError(
            f"{source}: {_where(converted.isna(), lines)}column {name!r} must "
            f"be true/false (or 1/0) for every run. Received values like {bad}"
        )
    return converted.astype(bool)
