"""The tables of `differences.py`: `differences.md`, one named section a part.

`tables(entries)` lays out the entries of `differences.json` (each part's
measurement) as Markdown sections the protocol page includes; `SETTINGS`
and `EPSILONS` are what the `steps` and `adam` parts measure, and name
these tables' columns.
"""

from __future__ import annotations

import math

SETTINGS = {
    "reference": (True, {"epsilon": 1e-8, "steps_per_execution": 1}),
    "epsilon": (True, {"steps_per_execution": 1}),
    "blocks": (True, {"epsilon": 1e-8}),
    "float32": (False, {"epsilon": 1e-8, "steps_per_execution": 1}),
    "package": (False, {}),
}
"""The replays of `steps`: (float64?, config fields). `reference` is the
reference's settings, `package` ours; the others change one of them."""

EPSILONS = (1e-8, 1e-7)


def _number(value, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if value == 0:
        return "0"
    exponent = math.floor(math.log10(abs(value)))
    if -2 <= exponent <= 3:
        return f"{value:.{digits}g}"
    mantissa = f"{value / 10**exponent:.{digits}g}"
    return f"{mantissa}·10{str(exponent).translate(_SUPERSCRIPTS)}"


_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _section(name: str, text: str) -> str:
    return f"<!-- --8<-- [start:{name}] -->\n{text}<!-- --8<-- [end:{name}] -->\n"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _steps_table(entry: dict) -> str:
    header = ["case", "reference's settings", "ε = 10⁻⁷", "λ in blocks of 50"]
    header += ["float32", "all three (the package's)"]
    by_size = sorted(entry["cases"], key=lambda n: (int(n.split("-")[0][1:]), n))
    rows = [
        [name, *(_number(entry["cases"][name][s]) for s in SETTINGS)]
        for name in by_size
    ]
    placement = entry["placement"]["h4-s0"]
    return _table(header, rows) + (
        "\nCase h4-s0 recorded with the installed PyTorch's own Adam (ε added "
        "after the bias correction) against the paper's placement: "
        f"{_number(placement)}.\n"
    )


def _schedule_table(entry: dict) -> str:
    header = ["λ at full strength", "largest lag", "mean lag", "float32 rounding"]
    row = [entry["strength"], entry["largest_lag"], entry["mean_lag"]]
    return _table(header, [[_number(v) for v in (*row, entry["float32_rounding"])]])


def _thresholds_table(entry: dict) -> str:
    rows = []
    for operation, row in entry["operations"].items():
        ours, theirs = row["threshold_25"], row["threshold_26"]
        rows.append(
            [operation, _number(ours, 5), _number(theirs, 5), _number(ours / theirs)]
        )
    header = ["operation", "ours (25-element subsets)", "reference (26)", "ratio"]
    return _table(header, rows)


def _best_step_table(entry: dict) -> str:
    header = ["runs (committed results)", "best step at step 0"]
    header += ["of those, below the threshold at some evaluation"]
    row = [f"{entry['runs']:,}", f"{entry['best_at_step_0']:,}"]
    return _table(header, [[*row, f"{entry['solved_later']:,}"]])


def _data_table(entry: dict) -> str:
    header = ["stream", "targets", "mean", "std", "KS distance", "p"]
    rows = []
    for name, label in (("ours", "the JAX engine's"), ("reference", "reference")):
        moments = entry[name]
        rows.append(
            [
                label,
                f"{entry['samples']:,}",
                _number(moments["mean"], 6),
                _number(moments["std"]),
                _number(entry["ks_statistic"]),
                _number(entry["ks_p_value"], 2),
            ]
        )
    return _table(header, rows)


def _targets_table(entry: dict) -> str:
    header = ["set", "ours", "reference", "× threshold"]
    rows = [
        [
            {"training": "training batches", "test": "test set"}[name],
            _number(entry[name]["ours"]),
            _number(entry[name]["reference"]),
            _number(entry["threshold"], 5),
        ]
        for name in ("training", "test")
    ]
    return _table(header, rows)


def _speed_table(entry: dict, key: str, unit: str) -> str:
    names = {
        "package": "the package's (ε = 10⁻⁷, λ in blocks of 50)",
        "epsilon": "ε = 10⁻⁸",
        "lambda_every_step": "λ every step",
        "reference": "the reference's (both)",
    }
    rows = [
        [label, f"{entry[key][name]:,.0f}", _number(entry["ratio"][name], 3)]
        for name, label in names.items()
    ]
    return _table(["settings", unit, "ratio"], rows)


def _adam_table(entry: dict) -> str:
    header = ["step", "√v̂: min", "0.1 %", "1 %", "10 %", "median"]
    header += ["steps ε changes > 1 %", "of those, off the bounds", "at a bound"]
    rows, points = [], list(entry["points"].items())
    stride = math.ceil(len(points) / 10)  # about ten rows; the note reads all
    for step, point in points[stride - 1 :: stride]:
        q = point["sqrt_v_hat_quantiles"]
        rows.append(
            [
                _number(int(step)),
                *(_number(q[k]) for k in ("0.0", "0.001", "0.01", "0.1", "0.5")),
                _number(point["share_changed_over_1_percent"]),
                _number(point["share_changed_over_1_percent_inside"]),
                _number(point["share_at_a_bound"]),
            ]
        )
    smallest = min(p["sqrt_v_hat_quantiles"]["0.0"] for p in entry["points"].values())
    change = (EPSILONS[1] - EPSILONS[0]) / (smallest + EPSILONS[1])
    return _table(header, rows) + (
        f"\nOver all {len(points)} readings, the largest change of a step from "
        f"one ε to the other: {_number(change)} of it (the smallest √v̂, "
        f"{_number(smallest)}).\n"
    )


RENDERERS = {
    "steps": _steps_table,
    "schedule": _schedule_table,
    "thresholds": _thresholds_table,
    "best_step": _best_step_table,
    "data": _data_table,
    "targets": _targets_table,
    "speed": lambda e: _speed_table(
        e, "seed_steps_per_second", "seed-steps per CPU second"
    ),
    "fit_speed": lambda e: _speed_table(e, "steps_per_second", "steps per CPU second"),
}


def tables(entries: dict) -> str:
    """`differences.md`: one named section per measured part."""
    sections = [
        _section(key.replace("_", "-"), render(entries[key]))
        for key, render in RENDERERS.items()
        if key in entries
    ]
    sections += [
        _section(key.replace("_", "-"), _adam_table(entries[key]))
        for key in sorted(k for k in entries if k.startswith("adam_h"))
    ]
    return "\n".join(sections)
