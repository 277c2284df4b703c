"""The papers' published numbers beside ours, and the verdict comparing the two.

The numbers are facts of the papers (not code); the verdict compares a row of
ours with one of them.

Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020:

- Table 1: the simple 10-parameter function t = (x₁ + x₂)·(x₁ + x₂ + x₃ + x₄);
- Tables 2 and 6: the arithmetic task (Table 2's rows are a subset of
  Table 6's, with the same numbers);
- Table 5: the gated units (App. C.5);
- Fig. 3: the NMU on × against the hidden size. Its counts are not printed in
  the paper: they are read off the figure's Wilson error bars, solved back to
  counts (neither the caption nor the text gives the seeds a point; the
  reference job script runs seeds 0–49, and the bars fit fewer: some seeds
  had not finished). App. C.3 (Fig. 7), the hidden-size ablation, and App.
  C.4, the dataset study, say 50 experiments each.

Mistry, Farrahi & Hare (2021), "Learning Division with Neural Arithmetic
Logic Modules" (the division paper), on the single-module benchmark of their
"A Primer for Neural Arithmetic Logic Modules" (2022): the pooled success
rates on ÷ with 10 inputs (`NALM_10_INPUTS`), printed without a count; the
plain Real NPU's is derived (`REAL_NPU_READINGS`).

Each table row is a `Published`: the success rate as printed, the printed
interval (rate − minus, rate + plus), the solved-at median and mean and the
sparsity-error mean (None where the paper prints "—"). Every row of Tables
1, 2, 5 and 6 summarizes 100 seeds, so the success count is rate × 100 and
`Published.interval` is the Wilson interval of that count (it rounds to the
printed one; a test checks every row). Keys are `(operation, preset)`.

The budgets are the reference code's job scripts (stable-nalu,
`lfs_batch_jobs/`): 5·10⁶ iterations for the arithmetic task (Tables 2, 5,
6, Fig. 3), 2·10⁵ for the simple function (Table 1).
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from keras_nalu.evaluation.statistics import success_rate_interval

ARITHMETIC_BUDGET = 5_000_000
"""Iterations of every arithmetic-task run in the paper."""

SIMPLE_BUDGET = 200_000
"""Iterations of the simple-function runs (Table 1) in the reference code."""


@dataclasses.dataclass(frozen=True)
class Published:
    """One published row: success rate with its printed ± and the statistics."""

    rate: float
    plus: float
    minus: float
    solved_at_median: float | None = None
    solved_at_mean: float | None = None
    sparsity_error_mean: float | None = None
    seeds: int = 100

    @property
    def successes(self) -> int:
        return round(self.rate * self.seeds)

    @property
    def printed_interval(self) -> tuple[float, float]:
        """The interval as the paper prints it (whole percents)."""
        return (round(self.rate - self.minus, 2), round(self.rate + self.plus, 2))

    @property
    def interval(self) -> tuple[float, float]:
        """The Wilson 95 % interval of the paper's count (exact bounds)."""
        _, lower, upper = success_rate_interval(self.successes, self.seeds)
        return lower, upper


def _failed() -> Published:
    """A row the paper prints as 0 % [0 %, 4 %] with no statistics."""
    return Published(0.0, 0.04, 0.0)


# Table 1: t = (x1 + x2)·(x1 + x2 + x3 + x4), 100 seeds.
TABLE_1 = {
    ("mul", "nac_mul"): Published(0.13, 0.08, 0.05, 5.5e4, 5.9e4, 7.5e-6),
    ("mul", "nalu"): Published(0.26, 0.09, 0.08, 7.0e4, 7.8e4, 9.2e-6),
    ("mul", "nmu"): Published(0.94, 0.03, 0.06, 1.4e4, 1.4e4, 2.6e-8),
}

_SOLVED = {
    # Table 6's rows with a success rate above 0; every other row is 0 %.
    ("mul", "nac_mul_nmu"): Published(0.93, 0.04, 0.07, 1.8e6, 2.0e6, 9.5e-7),
    ("mul", "nac_mul_sigma"): Published(1.00, 0.0, 0.04, 2.5e6, 2.6e6, 4.6e-5),
    ("mul", "nac_mul"): Published(0.31, 0.10, 0.08, 2.8e6, 3.0e6, 5.8e-4),
    ("mul", "nmu"): Published(0.98, 0.01, 0.05, 1.4e6, 1.5e6, 4.2e-7),
    ("add", "nac"): Published(1.00, 0.0, 0.04, 2.5e5, 4.9e5, 2.3e-1),
    ("add", "linear"): Published(1.00, 0.0, 0.04, 6.1e4, 6.3e4, 2.5e-1),
    ("add", "nalu"): Published(0.14, 0.08, 0.05, 1.5e6, 1.6e6, 1.7e-1),
    ("add", "nau"): Published(1.00, 0.0, 0.04, 1.8e4, 3.9e5, 3.2e-5),
    ("add", "relu"): Published(0.62, 0.09, 0.10, 6.2e4, 7.6e4, 2.5e-1),
    ("sub", "nac"): Published(1.00, 0.0, 0.04, 9.0e3, 3.7e5, 2.3e-1),
    ("sub", "linear"): Published(0.07, 0.07, 0.04, 3.3e6, 1.4e6, 1.8e-1),
    ("sub", "nalu"): Published(0.14, 0.08, 0.05, 1.9e6, 1.9e6, 2.1e-1),
    ("sub", "nau"): Published(1.00, 0.0, 0.04, 5.0e3, 1.6e5, 6.6e-2),
    ("sub", "nmu"): Published(0.56, 0.09, 0.10, 1.0e6, 1.0e6, 3.4e-4),
    ("root", "nac_mul_nmu"): Published(0.03, 0.05, 0.02, 1.0e6, 1.0e6, 1.7e-1),
    ("root", "nac_mul"): Published(0.07, 0.07, 0.04, 4.0e5, 1.5e6, 2.4e-1),
    ("root", "nalu"): Published(0.02, 0.05, 0.01, 2.6e6, 3.3e6, 5.0e-1),
    ("squared", "nac_mul_nmu"): Published(1.00, 0.0, 0.04, 1.4e6, 1.5e6, 2.9e-7),
    ("squared", "nac_mul_sigma"): Published(1.00, 0.0, 0.04, 1.9e6, 1.9e6, 1.8e-2),
    ("squared", "nac_mul"): Published(0.77, 0.07, 0.09, 3.3e6, 3.2e6, 1.8e-2),
    ("squared", "nmu"): Published(1.00, 0.0, 0.04, 1.2e6, 1.3e6, 3.7e-5),
}

TABLE_6_OPERATIONS = ("mul", "div", "add", "sub", "root", "squared")
TABLE_6_MODELS = (
    "nac_mul_nmu",
    "nac_mul_sigma",
    "nac_mul",
    "nac",
    "gated_nau_nmu",
    "linear",
    "nalu",
    "nau",
    "nmu",
    "relu",
    "relu6",
)
"""Table 6's models as this package's presets, in the paper's order."""

TABLE_6 = {
    (operation, model): _SOLVED.get((operation, model), _failed())
    for operation in TABLE_6_OPERATIONS
    for model in TABLE_6_MODELS
}

TABLE_2_ROWS = (
    ("mul", "nac_mul"),
    ("mul", "nalu"),
    ("mul", "nmu"),
    ("add", "nac"),
    ("add", "linear"),
    ("add", "nalu"),
    ("add", "nau"),
    ("sub", "nac"),
    ("sub", "linear"),
    ("sub", "nalu"),
    ("sub", "nau"),
)
TABLE_2 = {key: TABLE_6[key] for key in TABLE_2_ROWS}

# Table 5: the gated units on × and + (App. C.5), 100 seeds.
TABLE_5 = {
    ("mul", "gated_nau_nmu"): Published(0.62, 0.09, 0.10, 1.5e6, 1.5e6, 5.0e-5),
    ("mul", "nalu_separate"): Published(0.22, 0.09, 0.07, 2.8e6, 3.3e6, 5.8e-2),
    ("mul", "nalu_shared"): Published(0.24, 0.09, 0.07, 2.9e6, 3.3e6, 1.0e-3),
    ("add", "gated_nau_nmu"): Published(0.37, 0.10, 0.09, 1.9e4, 4.2e5, 1.7e-1),
    ("add", "nalu_separate"): Published(0.51, 0.10, 0.10, 1.4e5, 2.9e5, 1.8e-1),
    ("add", "nalu_shared"): Published(0.34, 0.10, 0.09, 1.8e5, 3.1e5, 1.8e-1),
}


@dataclasses.dataclass(frozen=True)
class Count:
    """A success count read off a figure, with the mean first-solved step."""

    successes: int
    seeds: int
    solved_at_mean: float | None = None

    @property
    def rate(self) -> float:
        return self.successes / self.seeds

    @property
    def interval(self) -> tuple[float, float]:
        _, lower, upper = success_rate_interval(self.successes, self.seeds)
        return lower, upper


FIG_3_MODELS = ("nmu", "nac_mul_nmu", "nac_mul_sigma", "nac_mul", "nalu")
"""The models of Fig. 3, as presets."""

FIG_3_HIDDEN_SIZES = (2, 3, 4, 5, 6, 7, 8, 9, 10)
"""The hidden sizes of Fig. 3 (reference job script: 2 to 10, 50 seeds)."""

FIG_3_RANGES = (
    ("U[-2,-1]", "U[-6,-2]"),
    ("U[-2,2]", "U[-6,-2] ∪ U[2,6]"),
    ("U[0,1]", "U[1,5]"),
    ("U[0.1,0.2]", "U[0.2,2]"),
    ("U[1.1,1.2]", "U[1.2,6]"),
    ("U[1,2]", "U[2,6]"),
    ("U[10,20]", "U[20,40]"),
)
"""Fig. 3's (interpolation, extrapolation) range pairs (App. C.4), 50 seeds."""

FIG_3_SEEDS = 50

FIG_3_COUNTS_NOTE = (
    "The paper's Fig. 3 counts are read off its Wilson error bars, not printed in "
    "it (neither its caption nor its text gives the seeds a point; the reference "
    "job script runs seeds 0–49)."
)
"""Said wherever the Fig. 3 counts are used."""

# Fig. 3, hidden-size panel, NMU on ×: read off the figure's Wilson error bars,
# solved back to counts (not printed; the job script runs 50 seeds a point, the
# bars fit fewer: some seeds had not finished).
FIG_3_HIDDEN_SIZE = {
    ("nmu", 2): Count(31, 31, 1.42e6),
    ("nmu", 4): Count(33, 36, 2.78e6),
    ("nmu", 10): Count(24, 38, 3.46e6),
}

# App. C.3 (Fig. 7), the hidden-size ablation: the NMU as in Fig. 3, 50 seeds each.
HIDDEN_SIZE_ABLATION = {
    ("nmu", 2): Count(50, 50),
    ("nmu", 4): Count(45, 50),
    ("nmu", 10): Count(29, 50),
}


@dataclasses.dataclass(frozen=True)
class Reported:
    """A success rate printed without its count: its interval is the rate alone."""

    rate: float

    @property
    def interval(self) -> tuple[float, float]:
        return self.rate, self.rate


# Mistry, Farrahi & Hare (2021), the division paper: the single-module
# benchmark with 10 inputs (8 distractors), nine ranges, ÷, the pooled success
# rates. The plain Real NPU's is not printed: the abstract says the modified
# unit's 85.3 % improves on it "by 15.1 %", read here as points.
REAL_NPU_IMPROVEMENT = 0.151
"""The division paper's "improving over the original by 15.1 %" (its abstract)."""

NALM_10_INPUTS = {
    ("div", "nmru"): Reported(0.916),
    ("div", "real_npu_modified"): Reported(0.853),
    ("div", "real_npu"): Reported(round(0.853 - REAL_NPU_IMPROVEMENT, 3)),
}

REAL_NPU_READINGS = {
    "points": NALM_10_INPUTS[("div", "real_npu")],
    "relative": Reported(round(0.853 / (1 + REAL_NPU_IMPROVEMENT), 3)),
}
"""The plain Real NPU's ÷ rate, derived from "improving … by 15.1 %" read as
percentage points (85.3 % − 15.1, the one beside our rows) or as relative
(85.3 % / 1.151)."""

NALM_PAPER = (
    'Mistry, Farrahi & Hare (2021), "Learning Division with Neural Arithmetic '
    'Logic Modules"'
)
"""The paper whose pooled rates stand beside the NALM rows."""

# Curry (2025), the Domain Mixed Unit: the paper's text could not be read for
# this package (only its abstract: "the highest percentage solved over all
# seeds on multiplication and division" of the NALM benchmark, with DMU_add
# for + and × and DMU_sub for − and ÷). The counts below are not the paper's
# table but the author's own run committed in his code:
# `named_results/commit_83e6f2df434dfd88bd0c2370a8d97c5c81a1c368_good.json`
# of marict/nalm-benchmark (2025-08-28): 25 seeds × 9 ranges, 2 inputs, ×
# and + with DMU_add, − and ÷ with DMU_sub, 2,000 steps at most, Adam 10⁻³,
# batch 512, global gradient norm 0.01; solved ("grokked") = the MSE of the
# one-hot evaluation on the interpolation (validation) set below 10⁻⁷ at 100
# steps in a row, checked every step (`experiments/single_layer_benchmark.py`
# at that commit: the extrapolation set is not judged).
DMU_AUTHOR_RUN = {
    "add": Count(222, 225),
    "sub": Count(225, 225),
    "mul": Count(225, 225),
    "div": Count(203, 225),
}
"""The DMU author's committed 2-input run, solved seeds by operation."""

DMU_CLAIM = (
    'Curry (2025), "The Domain Mixed Unit", abstract: "the highest percentage '
    'solved over all seeds on multiplication and division" of the NALM benchmark'
)

TRASK_MNIST_ADDITION_MAE = {10: 1.42, 100: 7.88, 1000: 57.3}
"""Trask et al. (2018), Table 2: the NAC's mean absolute error on MNIST digit
addition, per sequence length (the full MNIST)."""

VERDICTS = ("inside", "open", "below", "above", "no paper number")
"""The words of `verdict`, one rule for every summary."""

VERDICT_RULE = (
    "Verdict: both rates carry a Wilson 95 % interval (the paper's from its "
    "count; a rate printed without a count is its own interval). **inside**: "
    "one rate lies in the other's interval; **open**: the intervals overlap but "
    "neither rate lies in the other's (too few seeds to tell); **below** / "
    "**above**: the intervals do not overlap."
)
"""`verdict`'s rule in words, printed with every table that has a verdict."""


def verdict(successes: int, seeds: int, paper) -> str:
    """Our success count against the paper's row: one word.

    Both rates come with a Wilson 95 % interval (the paper's from its count;
    a rate printed without a count is its own interval):

    - "inside": one rate lies in the other's interval, ours in the paper's
      or the paper's in ours;
    - "open": the intervals overlap, but neither rate lies in the other's
      interval (too few seeds to tell);
    - "below", "above": the intervals do not overlap, ours lower or higher;
    - "no paper number": the paper has no row, or we have no seeds.

    Args:
        successes: our solved seeds.
        seeds: our seeds.
        paper: the paper's row (`Published`, `Count` or `Reported`: anything
            with `rate` and `interval`), or None.

    Example:

    >>> verdict(19, 20, TABLE_6[("mul", "nmu")])
    'inside'
    >>> verdict(1, 5, FIG_3_HIDDEN_SIZE[("nmu", 10)])
    'open'
    >>> verdict(144, 225, NALM_10_INPUTS[("div", "real_npu")])
    'below'
    """
    if paper is None or seeds == 0:
        return "no paper number"
    rate, lower, upper = success_rate_interval(successes, seeds)
    paper_lower, paper_upper = paper.interval
    tolerance = 1e-12
    if upper < paper_lower - tolerance:
        return "below"
    if lower > paper_upper + tolerance:
        return "above"
    ours_in_theirs = paper_lower - tolerance <= rate <= paper_upper + tolerance
    theirs_in_ours = lower - tolerance <= paper.rate <= upper + tolerance
    return "inside" if ours_in_theirs or theirs_in_ours else "open"


BASELINE_ALIASES = {"linear_bias": "linear", "relu_bias": "relu", "relu6_bias": "relu6"}
"""Presets compared with another preset's published row: the reference code's
Linear, ReLU and ReLU6 have biases (and the ReLUs He-uniform kernels); this
package's `linear`, `relu`, `relu6` have neither, the `*_bias` presets have."""

NOTES = {
    ("table6", "gated_nau_nmu"): "Table 6's gated model is gated in both layers "
    "(reference job script); this preset has an NAU first, as Table 5's",
    ("table6", "linear"): "no biases; the reference code's Linear has them "
    "(preset linear_bias)",
    ("table6", "relu"): "no biases; the reference code's ReLU has them "
    "(preset relu_bias)",
    ("table6", "relu6"): "no biases; the reference code's ReLU6 has them "
    "(preset relu6_bias)",
}
"""Known differences between a preset and the model behind the paper's row,
by (table, preset); Table 2 shares Table 6's."""

COMPARISON_COLUMNS = (
    "n",
    "success_rate",
    "success_lower",
    "success_upper",
    "paper_success_rate",
    "solved_at_median",
    "paper_solved_at_median",
    "verdict",
    "sparsity_error_mean",
)
"""Summary columns printed beside the paper's, after the grouping columns."""


# --- how the summaries print -------------------------------------------------------

OPERATION_SIGNS = {"add": "+", "sub": "−", "mul": "×", "div": "÷"}

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power(value: float) -> str:
    """A step count as the papers print it.

    Example:

    >>> power(5e6), power(2.5e5), power(50_000)
    ('5·10⁶', '2.5·10⁵', '5·10⁴')
    """
    mantissa, exponent = f"{value:.1e}".split("e")
    mantissa = mantissa.removesuffix(".0")
    return f"{mantissa}·10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def section(name: str, text: str) -> str:
    """`text` between the markers a docs page includes it by (`file.md:name`)."""
    start, end = f"<!-- --8<-- [start:{name}] -->", f"<!-- --8<-- [end:{name}] -->"
    return f"{start}\n{text.strip()}\n{end}\n"


def published_row(table: dict, operation: str, model: str) -> Published | None:
    """The paper's row for `(operation, model)` in `table`, aliases followed."""
    return table.get((operation, BASELINE_ALIASES.get(model, model)))


def with_paper_columns(summary: pd.DataFrame) -> pd.DataFrame:
    """Adds Table 6's `paper_success_rate`, `paper_solved_at_median` and our
    `verdict` (see `verdict`) by (operation, model)."""
    summary = summary.copy()
    rows = [
        published_row(TABLE_6, op, model)
        for op, model in zip(summary["operation"], summary["model"])
    ]
    summary["paper_success_rate"] = [None if r is None else r.rate for r in rows]
    summary["paper_solved_at_median"] = [
        None if r is None else r.solved_at_median for r in rows
    ]
    summary["verdict"] = [
        verdict(round(rate * n), n, r)
        for rate, n, r in zip(summary["success_rate"], summary["n"], rows)
    ]
    return summary
