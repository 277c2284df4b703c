"""Madsen & Johansen's (2020) published numbers, to print beside ours (facts, not code).

Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020: Table 2 (100 seeds,
5·10⁶ iterations, default arithmetic task) and Table 6 where Table 2 has no
row. Keys are (operation, preset); values are the success rate and the
median "solved at" step (None where the paper reports none).
"""

import pandas as pd

TABLE_2 = {
    ("mul", "nmu"): (0.98, 1.4e6),
    ("mul", "nac_mul"): (0.31, 2.8e6),
    ("mul", "nalu"): (0.00, None),
    ("mul", "nau"): (0.00, None),
    ("mul", "linear"): (0.00, None),
    ("mul", "relu"): (0.00, None),
    ("mul", "relu6"): (0.00, None),
    ("mul", "nac_mul_sigma"): (1.00, 2.5e6),
    ("mul", "nac_mul_nmu"): (0.93, 1.8e6),
    ("mul", "gated_nau_nmu"): (0.00, None),
    ("add", "nau"): (1.00, 1.8e4),
    ("add", "nac"): (1.00, 2.5e5),
    ("add", "linear"): (1.00, 6.1e4),
    ("add", "relu"): (0.62, 6.2e4),
    ("add", "relu6"): (0.00, None),
    ("add", "nmu"): (0.00, None),
    ("add", "gated_nau_nmu"): (0.00, None),
    ("add", "nac_mul"): (0.00, None),
    ("add", "nac_mul_sigma"): (0.00, None),
    ("add", "nac_mul_nmu"): (0.00, None),
    ("add", "nalu"): (0.14, 1.5e6),
    ("sub", "nau"): (1.00, 5.0e3),
    ("sub", "nac"): (1.00, 9.0e3),
    ("sub", "nmu"): (0.56, 1.0e6),
    ("sub", "nalu"): (0.14, 1.9e6),
    ("sub", "linear"): (0.07, 3.3e6),
    ("sub", "relu"): (0.00, None),
    ("sub", "relu6"): (0.00, None),
    ("sub", "gated_nau_nmu"): (0.00, None),
    ("sub", "nac_mul"): (0.00, None),
    ("sub", "nac_mul_sigma"): (0.00, None),
    ("sub", "nac_mul_nmu"): (0.00, None),
}

COMPARISON_COLUMNS = (
    "n",
    "success_rate",
    "success_lower",
    "success_upper",
    "paper_success_rate",
    "solved_at_median",
    "paper_solved_at_median",
    "sparsity_error_mean",
)
"""Summary columns printed beside the paper's, after the grouping columns."""


def with_paper_columns(summary: pd.DataFrame) -> pd.DataFrame:
    """Adds `paper_success_rate` and `paper_solved_at_median` by (op, model)."""
    summary = summary.copy()
    keys = list(zip(summary["operation"], summary["model"]))
    summary["paper_success_rate"] = [TABLE_2.get(k, (None, None))[0] for k in keys]
    summary["paper_solved_at_median"] = [TABLE_2.get(k, (None, None))[1] for k in keys]
    return summary
