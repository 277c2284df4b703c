"""The tables of `benchmarks/paper.py`: our rows beside the paper's, with verdicts.

`load_tables` joins the results files (one row per configuration, engine
and seed), `comparison` sets each part's rows beside the published numbers
with the verdict (`published.verdict`) and its reason, `hidden_size_readings`
reads Fig. 3's hidden-size panel three ways, and `summary_text` lays every
selected part out as Markdown between named markers (`published.section`)
for the pages to include. The parts themselves are `paper_plan.py`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
from paper_plan import NO_SETTINGS, PARTS, RESULTS, Part, seeds_text
from published import (
    FIG_3_COUNTS_NOTE,
    FIG_3_HIDDEN_SIZE,
    HIDDEN_SIZE_ABLATION,
    NOTES,
    VERDICT_RULE,
    power,
    section,
    verdict,
)

from keras_nalu.evaluation.statistics import success_rate_interval
from keras_nalu.reports.summary import load_results, summarize
from keras_nalu.sweeps.results import config_id

# --- verdicts (the rule: `published.verdict`) --------------------------------------


def reason(row_verdict: str, budget: int, paper_budget: int) -> str:
    """The one-line reason of a "below" or "open": the smaller budget, or blank.

    Example:

    >>> reason("below", 50_000, 5_000_000)
    'budget: 5·10⁴ steps < 5·10⁶'
    >>> reason("below", 5_000_000, 5_000_000)
    ''
    """
    if row_verdict in ("below", "open") and budget < paper_budget:
        return f"budget: {power(budget)} steps < {power(paper_budget)}"
    return ""


# --- tables -------------------------------------------------------------------------


RUN = ["config_id", "engine", "seed"]
"""What tells one run from another in the joined tables: a configuration and
seed trained on two engines are two runs, and each engine gets a row."""


def load_tables(paths: Sequence[Path]) -> pd.DataFrame:
    """Every row of the results files that exist, one per (config, engine, seed).

    Rows without an `engine` (files written before that column) were trained
    on TensorFlow. A run that two files hold is taken from the first, and
    `table.attrs["dropped"]` says which rows were left out and why, one line
    per file and configuration (`summary_text` prints them).
    """
    tables = []
    for path in paths:
        if Path(path).is_file():
            table = load_results(path).assign(_file=Path(path))
            tables.append(table)
    if not tables:
        return pd.DataFrame(columns=[*RUN, "_file"])
    table = pd.concat(tables, ignore_index=True)
    table = table[table["config_id"].notna()].copy()
    engine = table.get("engine", pd.Series(index=table.index, dtype=object))
    table["engine"] = engine.fillna("tensorflow")
    repeated = table.duplicated(RUN)
    dropped = _dropped_lines(table, repeated)
    table = table[~repeated].drop(columns="_file").reset_index(drop=True)
    table.attrs["dropped"] = dropped
    return table


def _dropped_lines(table: pd.DataFrame, repeated: pd.Series) -> list[str]:
    """One line per file and configuration whose runs another file holds."""
    kept = table[~repeated].set_index(RUN)["_file"]
    lines = []
    for (path, config), rows in table[repeated].groupby(
        ["_file", "config_id"], sort=False
    ):
        first = kept.loc[tuple(rows[RUN].iloc[0])]
        row = rows.iloc[0]
        lines.append(
            f"{_shown(path)}: {len(rows)} rows of {row['model']} "
            f"{row['operation']} ({config}, {row['engine']}, "
            f"{power(row['max_iterations'])} steps, seeds "
            f"{seeds_text(sorted(rows['seed'].astype(int)))}) left out: "
            f"{_shown(first)} holds the same runs and comes first"
        )
    return lines


def _shown(path: Path) -> str:
    """A results file as the summary names it: relative to `RESULTS` if inside."""
    path = Path(path).resolve()
    return str(path.relative_to(RESULTS)) if path.is_relative_to(RESULTS) else str(path)


def part_rows(results: pd.DataFrame, part: Part) -> pd.DataFrame:
    """The results rows of `part`'s configurations, at every budget present."""
    if results.empty:
        return results
    order = {}
    for budget in sorted(results["max_iterations"].dropna().unique()):
        for index, config in enumerate(part.configs(int(budget))):
            order[config_id(config)] = (index, int(budget))
    rows = results[results["config_id"].isin(order)].copy()
    keys = rows["config_id"].map(order)
    rows["_row"] = [key[0] for key in keys]
    return rows.sort_values(["_row", "max_iterations", "seed"], kind="stable")


def comparison(results: pd.DataFrame, part: Part) -> pd.DataFrame:
    """Our rows of `part` beside the paper's, with the verdict and its reason."""
    rows = part_rows(results, part)
    if rows.empty:
        return pd.DataFrame()
    by = [*part.by, "max_iterations", "engine"]  # a row per engine
    table = summarize(rows, by=by)
    papers = [part.paper(row) for row in table.to_dict("records")]
    table["paper_rate"] = [None if p is None else p.rate for p in papers]
    table["paper_lower"] = [None if p is None else p.interval[0] for p in papers]
    table["paper_upper"] = [None if p is None else p.interval[1] for p in papers]
    table["paper_solved_at"] = [
        None if p is None else _paper_solved_at(p) for p in papers
    ]
    table["paper_sparsity_error"] = [
        getattr(p, "sparsity_error_mean", None) for p in papers
    ]
    table["verdict"] = [
        verdict(round(rate * n), n, p)
        for rate, n, p in zip(table["success_rate"], table["n"], papers)
    ]
    table["reason"] = [
        reason(v, int(b), part.budget)
        for v, b in zip(table["verdict"], table["max_iterations"])
    ]
    table["note"] = [
        NOTES.get(("table6" if part.name == "table2" else part.name, model), "")
        for model in table["model"]
    ]
    where = rows.assign(_device=_devices(rows)).groupby(by, sort=False, dropna=False)
    table["device"] = list(where["_device"].agg(lambda d: ", ".join(sorted(set(d)))))
    table["wall_time"] = list(where.apply(_wall_time, include_groups=False))
    return table


def _devices(rows: pd.DataFrame) -> pd.Series:
    """The engine and device each run trained on, e.g. "jax/cpu"."""
    engine = rows.get("engine", pd.Series("tensorflow", index=rows.index))
    device = rows.get("device", pd.Series("", index=rows.index))
    device = device.fillna("").replace("", "unrecorded device")
    return engine.fillna("tensorflow") + "/" + device


def _wall_time(rows: pd.DataFrame) -> float:
    """Seconds of the chunks that trained a row, each chunk counted once."""
    chunks = rows.drop_duplicates(["wall_time", "replicas"])
    return float(pd.to_numeric(chunks["wall_time"], errors="coerce").sum())


def _paper_solved_at(paper) -> float | None:
    """The paper's solved-at median (tables) or mean (Fig. 3 counts)."""
    median = getattr(paper, "solved_at_median", None)
    return median if median is not None else getattr(paper, "solved_at_mean", None)


def still_to_run(results: pd.DataFrame, part: Part, models=None) -> list[str]:
    """The part's rows without every seed at the paper's budget, grouped.

    Example (no results at all):

    >>> still_to_run(pd.DataFrame(), PARTS["table1"])
    ['mul: nac_mul, nalu, nmu']
    """
    seeds = set(range(part.seeds))
    done = set()
    if not results.empty:
        complete = results.groupby("config_id")["seed"].agg(lambda s: seeds <= set(s))
        done = set(complete[complete].index)
    grouped: dict[str, list[str]] = {}
    for config in part.configs(None, models):
        if config_id(config) in done:
            continue
        if part.name == "fig3_hidden":
            key, value = f"{config.model}, hidden size", str(config.hidden_size)
        elif part.name == "fig3_range":
            key, value = config.model, config.interpolation_range
        else:
            key, value = config.operation, config.model
        grouped.setdefault(key, []).append(value)
    return [f"{key}: {', '.join(values)}" for key, values in grouped.items()]


def hidden_size_readings(
    results: pd.DataFrame, settings: Mapping = NO_SETTINGS
) -> pd.DataFrame:
    """Fig. 3's hidden-size points read three ways, with first and last success.

    Per (model, hidden size, budget, engine): success at the best-validation step
    (`success`, the paper's rule), at any evaluation (`solved_at` set) and
    at the final step (`final_success`; NaN where a row did not record it),
    the medians of the first and the last solved step over the seeds that
    solved at some evaluation, and how many of those lost it by the end.
    `settings`: as for `sweep_groups`.
    """
    rows = part_rows(results, PARTS["fig3_hidden"].with_settings(settings))
    if rows.empty:
        return pd.DataFrame()
    readings = []
    for (model, hidden, budget, engine), group in rows.groupby(
        ["model", "hidden_size", "max_iterations", "engine"], sort=False
    ):
        found = group["solved_at"].notna()
        final = group["final_success"] if "final_success" in group else None
        final_known = final is not None and final.notna().all()
        final_count = int(final.astype(bool).sum()) if final_known else math.nan
        lost = int((found & ~final.astype(bool)).sum()) if final_known else math.nan
        last = group.get("last_solved_at", pd.Series(math.nan, index=group.index))
        paper = FIG_3_HIDDEN_SIZE.get((model, int(hidden)))
        ablation = HIDDEN_SIZE_ABLATION.get((model, int(hidden)))
        readings.append(
            {
                "model": model,
                "hidden_size": int(hidden),
                "max_iterations": int(budget),
                "engine": engine,
                "n": len(group),
                "best_step": int(group["success"].astype(bool).sum()),
                "any_evaluation": int(found.sum()),
                "final_step": final_count,
                "found_and_lost": lost,
                "first_solved_median": group.loc[found, "solved_at"].median(),
                "last_solved_median": pd.to_numeric(last[found]).median(),
                "paper": None if paper is None else f"{paper.successes}/{paper.seeds}",
                "ablation": None
                if ablation is None
                else f"{ablation.successes}/{ablation.seeds}",
            }
        )
    return pd.DataFrame(readings)


def hidden_size_seeds(
    results: pd.DataFrame, settings: Mapping = NO_SETTINGS
) -> pd.DataFrame:
    """Each Fig. 3 hidden-size seed: verdict, first and last solved step."""
    rows = part_rows(results, PARTS["fig3_hidden"].with_settings(settings))
    columns = [
        "model",
        "hidden_size",
        "max_iterations",
        "engine",
        "seed",
        "success",
        "best_step",
        "solved_at",
        "last_solved_at",
        "final_success",
    ]
    return rows.reindex(columns=columns).reset_index(drop=True)


# --- text -----------------------------------------------------------------------------


def _percent(value) -> str:
    return "—" if value is None or pd.isna(value) else f"{100 * value:.0f}%"


def _text(value) -> str:
    return "—" if value is None or pd.isna(value) else str(value)


def _number(value) -> str:
    return "—" if value is None or pd.isna(value) else f"{value:.2g}"


def _count_cell(count, n) -> str:
    if pd.isna(count):
        return "—"
    rate, lower, upper = success_rate_interval(int(count), int(n))
    return f"{int(count)}/{n} {_percent(rate)} [{_percent(lower)}, {_percent(upper)}]"


def comparison_markdown(table: pd.DataFrame, part: Part) -> str:
    """One part's comparison as a Markdown table."""
    keys = [key for key in part.by if key != "extrapolation_range"]
    mean = part.name == "fig3_hidden"  # Fig. 3's counts come with mean steps
    solved_at = "solved_at_mean" if mean else "solved_at_median"
    header = [
        *keys,
        "steps",
        "seeds",
        "ours [Wilson 95 %]",
        "paper [95 %]",
        "verdict",
        "reason",
        "solved at, mean (ours / paper)" if mean else "solved at (ours / paper)",
        "sparsity error (ours / paper)",
        "device, wall time",
        "note",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table.to_dict("records"):
        key_cells = [str(row[key]) for key in keys]
        if "interpolation_range" in keys:
            index = keys.index("interpolation_range")
            key_cells[index] = f"{row['interpolation_range']} → "
            key_cells[index] += str(row["extrapolation_range"])
        ours = (
            f"{_percent(row['success_rate'])} [{_percent(row['success_lower'])}, "
            f"{_percent(row['success_upper'])}]"
        )
        paper = "—"
        if row["paper_rate"] is not None and not pd.isna(row["paper_rate"]):
            paper = (
                f"{_percent(row['paper_rate'])} [{_percent(row['paper_lower'])}, "
                f"{_percent(row['paper_upper'])}]"
            )
        cells = [
            *key_cells,
            power(row["max_iterations"]),
            str(row["n"]),
            ours,
            paper,
            row["verdict"],
            row["reason"],
            f"{_number(row[solved_at])} / {_number(row['paper_solved_at'])}",
            f"{_number(row['sparsity_error_mean'])} / "
            f"{_number(row['paper_sparsity_error'])}",
            f"{row['device']}, {row['wall_time']:.0f} s",
            row["note"],
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def readings_markdown(readings: pd.DataFrame) -> str:
    """The three-way Fig. 3 hidden-size table as Markdown."""
    header = [
        "model",
        "hidden size",
        "steps",
        "engine",
        "best-validation step (paper's rule)",
        "any evaluation",
        "final step",
        "found, then lost",
        "first solved (median)",
        "last solved (median)",
        "paper (Fig. 3, read off its error bars)",
        "paper (App. C.3, Fig. 7)",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in readings.to_dict("records"):
        n = row["n"]
        cells = [
            row["model"],
            str(row["hidden_size"]),
            power(row["max_iterations"]),
            row["engine"],
            _count_cell(row["best_step"], n),
            _count_cell(row["any_evaluation"], n),
            _count_cell(row["final_step"], n),
            "—" if pd.isna(row["found_and_lost"]) else str(int(row["found_and_lost"])),
            _number(row["first_solved_median"]),
            _number(row["last_solved_median"]),
            _text(row["paper"]),
            _text(row["ablation"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def summary_text(
    results: pd.DataFrame,
    names: Sequence[str],
    models=None,
    settings: Mapping = NO_SETTINGS,
) -> str:
    """Every selected part's table, the Fig. 3 readings and what is left.

    Each part's pieces sit between named markers (`section`), so a page can
    include one of them: `<part>` (the table), `<part>-three-ways` (Fig. 3's
    readings) and `<part>-to-run` (the rows still to run); `verdict` is the
    rule in words, and `dropped`, where `load_tables` left rows out, says
    which and why.
    """
    sections = [section("verdict", VERDICT_RULE)]
    dropped = results.attrs.get("dropped", [])
    if dropped:
        lines = "".join(f"- {line}\n" for line in dropped)
        sections.append(section("dropped", f"Rows left out:\n\n{lines}"))
    for name in names:
        part = PARTS[name].with_settings(settings)
        table = comparison(results, part)
        if models is not None and not table.empty:
            table = table[table["model"].isin(models)]
        sections.append(f"## {part.title}\n")
        body = "No results yet.\n"
        if not table.empty:
            body = comparison_markdown(table, part)
        if name == "fig3_hidden":
            body += f"\n{FIG_3_COUNTS_NOTE}\n"
        sections.append(section(name, body))
        if name == "fig3_hidden":
            readings = hidden_size_readings(results, settings)
            if models is not None and not readings.empty:
                readings = readings[readings["model"].isin(models)]
            if not readings.empty:
                sections.append("Success three ways:\n")
                text = readings_markdown(readings) + f"\n{FIG_3_COUNTS_NOTE}\n"
                sections.append(section(f"{name}-three-ways", text))
        missing = still_to_run(results, part, models)
        budget = f"{part.seeds} seeds at {power(part.budget)} steps"
        if missing:
            text = f"Still to run ({budget}): " + "; ".join(missing) + "\n"
        else:
            text = f"Every row has {budget}.\n"
        sections.append(section(f"{name}-to-run", text))
    return "\n".join(sections)
