"""Sequential MNIST's figure and table of judged runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from keras_nalu._files import atomic_write
from keras_nalu.experiments.mnist.study import success_rates


def plot_success_rate(records: Sequence[Mapping], out_path) -> str:
    """Success rate against extrapolation length per unit (Madsen & Johansen 2020, Fig.
    4).

    Error bars are Wilson 95 % intervals over the seeds.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from keras_nalu.evaluation.statistics import success_rate_interval

    figure, axis = plt.subplots(figsize=(6, 3.5))
    for unit, rates in success_rates(records).items():
        seeds = sum(1 for r in records if r["config"]["unit"] == unit)
        lengths = sorted(n for n in rates if rates[n] is not None)
        low, high = [], []
        for length in lengths:
            rate, lower, upper = success_rate_interval(
                round(rates[length] * seeds), seeds
            )
            low.append(rate - lower)
            high.append(upper - rate)
        axis.errorbar(
            lengths,
            [rates[n] for n in lengths],
            yerr=[low, high],
            marker="o",
            capsize=2,
            label=unit.upper(),
        )
    axis.set_xlabel("Extrapolation length")
    axis.set_ylabel("Success rate")
    axis.set_ylim(-0.05, 1.05)
    axis.legend()
    figure.tight_layout()
    out_path = Path(out_path)
    with atomic_write(out_path, "wb") as handle:
        figure.savefig(handle, format=out_path.suffix[1:] or "png", dpi=120)
    plt.close(figure)
    return str(out_path)


def mae_table(records: Sequence[Mapping], lengths=(1, 10, 100, 1000)) -> str:
    """Markdown: mean test MAE over seeds per unit and length (Trask et al. 2018, Table
    2).

    Example:

    >>> from keras_nalu.experiments.mnist import mae_table
    >>> print(mae_table([{"config": {"unit": "nau"}, "test_lengths": [1, 10],
    ...                   "test_mae": [0.1, 0.5], "digit_accuracy": 0.9}],
    ...                 lengths=(1, 10)))
    | model | accuracy (length 1) | MAE 1 | MAE 10 |
    |---|---|---|---|
    | NAU | 90.0% | 0.1 | 0.5 |
    """
    rows = {}
    for record in records:
        row = rows.setdefault(record["config"]["unit"], {"mae": {}, "acc": []})
        for length, mae in zip(record["test_lengths"], record["test_mae"]):
            row["mae"].setdefault(int(length), []).append(mae)
        if record.get("digit_accuracy") is not None:
            row["acc"].append(record["digit_accuracy"])
    header = "| model | accuracy (length 1) | " + " | ".join(
        f"MAE {length}" for length in lengths
    )
    lines = [header + " |", "|---" * (len(lengths) + 2) + "|"]
    for unit, row in rows.items():
        accuracy = f"{100 * np.mean(row['acc']):.1f}%" if row["acc"] else "–"
        cells = [
            f"{np.mean(row['mae'][n]):.3g}" if n in row["mae"] else "–" for n in lengths
        ]
        lines.append(f"| {unit.upper()} | {accuracy} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
