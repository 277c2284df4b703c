"""Re-judges the committed rows against the success thresholds of this version.

    python benchmarks/rejudge.py            # rewrites the rows, prints the counts
    python benchmarks/rejudge.py --check    # prints the counts; exit 1 if a row
                                            # would change

A row records the threshold it was judged against and its verdict. Where
this version's threshold of the row's configuration
(`ExperimentConfig.success_threshold`, simulated or read from the cache)
differs, the row's `threshold` cell is replaced by it and its `success` cell
re-judged by the rule of `EvaluationSummary`: the extrapolation MSE at the
best step, which the row holds, below the threshold, and the run not
diverged. Every other byte of the file stays as it is. That is every
results file of a sweep and of `arithmetic.py` under `benchmarks/results/`,
and the `result` of each `saved_models/*/manifest.json` (there its
`solved_at_end` too: the final evaluation's MSE is stored).

The other verdicts, `solved_at`, `last_solved_at` and `final_success`, need
evaluations a row does not hold. They stay exact where the threshold did
not change, or fell and the row was never solved (nor solved at its final
evaluation); elsewhere they may differ only if an evaluation's
extrapolation MSE lay between the two thresholds, and the count of such
rows is printed. `held/results.csv` counts evaluations at or above the
threshold, which its rows do not hold either: it is left as it was
judged, and listed; `gates/gates.csv` holds verdicts without a threshold:
its rows are checked, not rewritten.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps.results import config_id, config_of_row

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
MANIFESTS = ROOT / "saved_models"
UNJUDGED = ("held/results.csv",)
"""Files whose verdicts count evaluations the rows do not hold."""
GATES = "gates/gates.csv"


@dataclasses.dataclass
class Report:
    """What re-judging one file changed, and what it could not re-derive."""

    path: Path
    rows: int = 0
    thresholds_changed: int = 0
    flipped: list[str] = dataclasses.field(default_factory=list)
    unprovable_rising: int = 0  # a larger threshold: a step may become solved
    unprovable_falling: int = 0  # a smaller one: a solved step may be lost
    largest_change: float = 0.0  # relative

    def count_unprovable(self, old: float, new: float) -> None:
        if new > old:
            self.unprovable_rising += 1
        else:
            self.unprovable_falling += 1

    def line(self) -> str:
        name = self.path.relative_to(ROOT)
        return (
            f"{name}: {self.rows} rows, {self.thresholds_changed} thresholds "
            f"changed (at most {self.largest_change:.1e} relative), "
            f"{len(self.flipped)} verdicts flipped, solved steps not re-derivable "
            f"in {self.unprovable_rising} (threshold up) + "
            f"{self.unprovable_falling} (threshold down)"
        )


def field_spans(line: str) -> list[tuple[int, int]]:
    """Where each field of one CSV line lies, `[start, end)`, quotes included."""
    spans, start, quoted = [], 0, False
    for i, char in enumerate(line):
        if char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            spans.append((start, i))
            start = i + 1
    end = len(line.rstrip("\r\n"))
    spans.append((start, end))
    return spans


def succeeded(mse: float, diverged: bool, threshold: float) -> bool:
    """`EvaluationSummary`'s success: the best step's MSE below, not diverged."""
    return math.isfinite(mse) and mse < threshold and not diverged


def _flag(value) -> bool:
    return str(value).strip().lower() == "true"


def _empty(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def solved_steps_exact(old, new, solved, known, final_unknown=False) -> bool:
    """Whether the first and last solved steps stay as judged under `new`.

    `solved` are those steps (None: never solved; -1: not recorded), `known`
    the extrapolation MSE of the steps a row or summary holds (its best, its
    last), `final_unknown` whether the final evaluation was solved under
    `old` with an MSE not held. With a larger threshold, any evaluation
    between the two could be solved now; with a smaller one, a solved step
    stays solved only where its MSE is known to be below it (the steps before
    the first were not solved under the larger one, so neither are they now).
    """
    if new == old:
        return True
    if new > old:
        return False
    first, last = solved
    below = {step for step, mse in known.items() if mse < new}
    return (first is None or (first in below and last in below)) and not final_unknown


def rejudged_text(
    text: str, rows: list[dict], thresholds: list[float], path: Path
) -> tuple[str, Report]:
    """`text`, a CSV, with each row's `threshold` and `success` re-judged.

    `rows` are the file's rows as dicts (in order), `thresholds` the new
    threshold of each. Only those two cells of a line are rewritten.
    """
    lines = text.splitlines(keepends=True)
    header = next(csv.reader([lines[0]]))
    columns = {name: header.index(name) for name in ("threshold", "success")}
    report = Report(path, rows=len(rows))
    data = [i for i, line in enumerate(lines) if i > 0 and line.strip()]
    if len(data) != len(rows):
        raise ValueError(f"{path}: {len(data)} lines for {len(rows)} rows")
    for index, row, new in zip(data, rows, thresholds):
        old = float(row["threshold"])
        mse = float(row["extrapolation_mse"])
        diverged = _flag(row["diverged"])
        if succeeded(mse, diverged, old) != _flag(row["success"]):
            raise ValueError(f"{path}, line {index + 1}: its verdict is not its rule")
        if new == old:
            continue
        report.thresholds_changed += 1
        report.largest_change = max(report.largest_change, abs(new - old) / old)
        success = succeeded(mse, diverged, new)
        if success != _flag(row["success"]):
            report.flipped.append(f"line {index + 1}: {_name(row)} → {success}")
        steps = [row.get(key) for key in ("solved_at", "last_solved_at")]
        steps = [None if _empty(step) else int(step) for step in steps]
        if _empty(row.get("last_solved_at")):  # not recorded: as unknown
            steps[1] = steps[0] if steps[0] is None else -1
        known = {} if _empty(row["best_step"]) else {int(row["best_step"]): mse}
        final = _flag(row.get("final_success"))
        if not solved_steps_exact(old, new, steps, known, final):
            report.count_unprovable(old, new)
        line = lines[index]
        spans = field_spans(line)
        cells = {columns["threshold"]: repr(new), columns["success"]: str(success)}
        for column in sorted(cells, reverse=True):
            start, end = spans[column]
            line = line[:start] + cells[column] + line[end:]
        lines[index] = line
    return "".join(lines), report


def _name(row: dict) -> str:
    return f"{row['model']} {row['operation']} seed {int(row['seed'])}"


def _sweep_config(row: dict) -> ExperimentConfig:
    config = config_of_row(row)
    if config is None or config_id(config) != row["config_id"]:
        raise ValueError(f"row {_name(row)} does not give back its configuration")
    return config


def _arithmetic_config(row: dict) -> ExperimentConfig:
    # benchmarks/arithmetic.py trains the presets on the default task.
    return ExperimentConfig(
        model=row["model"], operation=row["operation"], seed=int(row["seed"])
    )


def rejudge_file(
    path: Path, threshold_of: Callable[[ExperimentConfig], float], write: bool
) -> Report:
    """Re-judges one results CSV (a sweep's or `arithmetic.py`'s)."""
    from keras_nalu.sweeps.results import read_results

    text = path.read_text(encoding="utf-8")
    try:
        table = read_results(path)
        config_of = _sweep_config
    except ValueError:  # arithmetic.py's columns
        table = pd.read_csv(path)
        config_of = _arithmetic_config
    rows = table.to_dict("records")
    thresholds = [threshold_of(config_of(row)) for row in rows]
    new_text, report = rejudged_text(text, rows, thresholds, path)
    if write and new_text != text:
        path.write_text(new_text, encoding="utf-8")
    return report


def rejudge_manifest(
    path: Path, threshold_of: Callable[[ExperimentConfig], float], write: bool
) -> Report:
    """Re-judges each version's `result` of a saved model's manifest."""
    text = path.read_text(encoding="utf-8")
    manifest = json.loads(text)
    report = Report(path)
    for version in manifest["versions"].values():
        result = version["result"]
        old, new = (
            result["threshold"],
            threshold_of(ExperimentConfig(**version["config"])),
        )
        report.rows += 1
        if new == old:
            continue
        report.thresholds_changed += 1
        report.largest_change = max(report.largest_change, abs(new - old) / old)
        verdicts = {
            "success": succeeded(result["extrapolation_mse"], result["diverged"], new),
            "solved_at_end": succeeded(result["final_extrapolation_mse"], False, new),
        }
        if verdicts["success"] != result["success"]:
            report.flipped.append(f"{version['path']} → {verdicts['success']}")
        known = {result["best_step"]: result["extrapolation_mse"]}
        known[result["final_step"]] = result["final_extrapolation_mse"]
        solved = (result["solved_at"], None if result["solved_at"] is None else -1)
        if not solved_steps_exact(old, new, solved, known):
            report.count_unprovable(old, new)
        for key, value in {"threshold": new, **verdicts}.items():
            pattern = re.compile(rf'("{key}": ){re.escape(json.dumps(result[key]))}')
            text, count = pattern.subn(rf"\g<1>{json.dumps(value)}", text, count=1)
            if count != 1:
                raise ValueError(f"{path}: no {key} of {version['path']}")
    if write:
        path.write_text(text, encoding="utf-8")
    return report


def rejudge_backup(
    path: Path, threshold_of: Callable[[ExperimentConfig], float], write: bool
) -> Report:
    """Moves a committed backup's summaries to this version's thresholds.

    A backup (`ReplicaRun.save_backup`) continues only against the threshold
    its summaries were judged by. Each replica's summary keeps its best and
    last evaluation, which are re-judged exactly; its solved steps stay as
    they were (`solved_steps_exact` counts where that is not proven). The
    variables are written back unchanged, the state as `save_backup` writes
    it, compressed.
    """
    import numpy as np

    with np.load(path, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    state = json.loads(arrays.pop("state").tobytes().decode("utf-8"))
    report = Report(path, rows=len(state["summaries"]))
    replicas = zip(state["configs"], state["summaries"], state["loss_diverged"])
    for index, (config, summary, loss_diverged) in enumerate(replicas):
        old, new = summary["threshold"], threshold_of(ExperimentConfig(**config))
        if new == old:
            continue
        report.thresholds_changed += 1
        report.largest_change = max(report.largest_change, abs(new - old) / old)
        best, diverged = summary["best"], summary["nonfinite"] or loss_diverged
        if best is not None and succeeded(best[2], diverged, old) != succeeded(
            best[2], diverged, new
        ):
            name = f"{config['model']} {config['operation']} seed {config['seed']}"
            report.flipped.append(f"replica {index}: {name}")
        known = {e[0]: e[2] for e in (summary["best"], summary["last"]) if e}
        solved = (summary["solved_at"], summary["last_solved_at"])
        if not solved_steps_exact(old, new, solved, known):
            report.count_unprovable(old, new)
        summary["threshold"] = new
    if write and report.thresholds_changed:
        text = json.dumps(state, separators=(",", ":"))
        with open(path, "wb") as file:
            np.savez_compressed(
                file, state=np.frombuffer(text.encode(), np.uint8), **arrays
            )
    return report


def gates_margin(path: Path, threshold_of) -> float:
    """The smallest relative distance of a gates row's MSE to its threshold."""
    rows = pd.read_csv(path).to_dict("records")
    distances = []
    for row in rows:
        threshold = threshold_of(_arithmetic_config(row))
        distances.append(abs(float(row["extrapolation_mse"]) - threshold) / threshold)
    return min(distances)


def results_files() -> list[Path]:
    """Every committed results CSV with a threshold and a success column."""
    files = []
    for path in sorted(RESULTS.glob("*/*.csv")):
        header = path.read_text(encoding="utf-8").splitlines()[0].split(",")
        if {"threshold", "success"} <= set(header):
            files.append(path)
    return files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="print the counts, rewrite nothing"
    )
    args = parser.parse_args(argv)
    cache: dict = {}

    def threshold_of(config: ExperimentConfig) -> float:
        key = dataclasses.replace(config, seed=0)
        if key not in cache:
            cache[key] = config.success_threshold()
        return cache[key]

    reports = [rejudge_file(p, threshold_of, not args.check) for p in results_files()]
    reports += [
        rejudge_manifest(path, threshold_of, not args.check)
        for path in sorted(MANIFESTS.glob("*/manifest.json"))
    ]
    reports += [
        rejudge_backup(path, threshold_of, not args.check)
        for path in sorted(RESULTS.glob("*/*.csv.backup/*.npz"))
    ]
    for report in reports:
        print(report.line())
        for flipped in report.flipped:
            print(f"    {flipped}")
    changed = sum(r.thresholds_changed for r in reports)
    flipped = sum(len(r.flipped) for r in reports)
    rising = sum(r.unprovable_rising for r in reports)
    falling = sum(r.unprovable_falling for r in reports)
    print(
        f"total: {sum(r.rows for r in reports)} rows, {changed} thresholds changed, "
        f"{flipped} verdicts flipped; solved steps not re-derivable in "
        f"{rising} + {falling} rows"
    )
    for name in UNJUDGED:
        print(f"{name}: left as judged (its counts need every evaluation)")
    margin = gates_margin(RESULTS / GATES, threshold_of)
    print(f"{GATES}: every MSE {margin:.1e} or more (relative) from the threshold")
    return 1 if args.check and (changed or flipped) else 0


if __name__ == "__main__":
    raise SystemExit(main())
