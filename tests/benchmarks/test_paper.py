"""benchmarks/paper.py: the plan, the verdicts, Fig. 3 read three ways, resuming."""

import hashlib
import math
import re
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import paper  # noqa: E402
import published  # noqa: E402
from paper_tables import (  # noqa: E402
    comparison,
    comparison_markdown,
    hidden_size_readings,
    reason,
    still_to_run,
)

from keras_nalu.experiments import REFERENCE_SETTINGS, ExperimentConfig  # noqa: E402
from keras_nalu.sweeps.results import config_id, read_results  # noqa: E402

TABLES = (published.TABLE_1, published.TABLE_5, published.TABLE_6)


@pytest.mark.parametrize(
    "key, row",
    [(key, row) for table in TABLES for key, row in table.items()],
    ids=str,
)
def test_the_papers_intervals_are_the_wilson_intervals_of_its_counts(key, row):
    lower, upper = row.interval
    printed_lower, printed_upper = row.printed_interval
    assert abs(100 * lower - 100 * printed_lower) <= 0.5 + 1e-9
    assert abs(100 * upper - 100 * printed_upper) <= 0.5 + 1e-9


def test_the_papers_figure_3_counts():
    count = published.FIG_3_HIDDEN_SIZE[("nmu", 4)]
    assert (count.successes, count.seeds) == (33, 36)
    assert count.interval[0] == pytest.approx(0.78, abs=0.01)
    assert published.TABLE_2[("sub", "linear")].rate == 0.07
    assert published.published_row(published.TABLE_6, "sub", "linear_bias").rate == 0.07


def test_the_full_plan_counts_every_configuration_once(tmp_path):
    groups = paper.sweep_groups(list(paper.PRIORITY))
    # In priority order; a configuration trains in its first part with the
    # seeds of every part it belongs to: Fig. 3's points that are Table 6
    # rows (hidden size 2) get 100 seeds.
    assert [(name, len(seeds)) for name, seeds, _ in groups] == [
        ("table2", 100),
        ("fig3_hidden", 50),
        ("fig3_hidden", 100),
        ("table6", 100),
        ("table5", 100),
        ("fig3_range", 50),
        ("table1", 100),
    ]
    # Tables 1, 2, 5, 6 (+ the three biased baselines): 3 + 11 + 6 + 84 rows,
    # 91 distinct; Fig. 3: 45 + 35 points, 70 not already in the tables.
    counts = [len(configs) for _, _, configs in groups]
    by_seeds = {100: 0, 50: 0}
    for (_, seeds, _), count in zip(groups, counts):
        by_seeds[len(seeds)] += count
    assert by_seeds == {100: 91, 50: 70}
    text = paper.plan_text(groups, tmp_path / "results.csv", 1000, rate=4e4)
    steps = 3 * 100 * 2e5 + 88 * 100 * 5e6 + 70 * 50 * 5e6
    assert "configurations: 161, runs (config × seed): 12600" in text
    assert f"seed-steps: {steps:.3e}" in text
    assert f"still to train: {steps:.3e} seed-steps" in text
    assert f"at 4e+04 seed-steps/s: {steps / 4e4 / 3600:.1f} h" in text


def _plan_ids(settings=paper.NO_SETTINGS) -> list[str]:
    groups = paper.sweep_groups(list(paper.PRIORITY), settings=settings)
    return sorted(config_id(c) for _, _, configs in groups for c in configs)


def test_the_plan_keeps_its_config_ids():
    # The 161 configurations' ids as the committed results files hold them.
    ids = _plan_ids()
    digest = hashlib.sha256(",".join(ids).encode()).hexdigest()[:16]
    assert (len(ids), digest) == (161, "75842fb9ed335405")


def test_the_reference_settings_are_new_configurations_of_the_same_plan():
    groups = paper.sweep_groups(list(paper.PRIORITY), settings=REFERENCE_SETTINGS)
    configs = [c for _, _, part in groups for c in part]
    assert len(configs) == 161
    assert {(c.epsilon, c.steps_per_execution) for c in configs} == {(1e-8, 1)}
    assert not set(_plan_ids(REFERENCE_SETTINGS)) & set(_plan_ids())
    args = paper.parser().parse_args(["--dry-run", "--reference-settings"])
    assert args.reference_settings and args.out is None


def test_the_plan_leaves_out_finished_runs(tmp_path):
    groups = paper.sweep_groups(["table1"], seeds="0-1", iterations=1000)
    ((_, seeds, configs),) = groups
    assert seeds == [0, 1] and {c.iterations for c in configs} == {1000}
    path = tmp_path / "results.csv"
    row = {"model": "nmu", "operation": "mul", "seed": 0, "success": True}
    row.update(config_id=config_id(configs[-1]), solved_at=1, sparsity_error=0)
    row.update(interpolation_mse=0, extrapolation_mse=0, iterations=1000)
    written = read_results(path).reindex(columns=read_results(path).columns)
    pd.concat([written, pd.DataFrame([row])]).to_csv(path, index=False)
    text = paper.plan_text(groups, path, 1000, rate=1e3)
    assert "still to train: 5.000e+03 seed-steps" in text  # 6 runs, 1 done


def test_the_plan_takes_a_part_of_a_part():
    ((name, seeds, configs),) = paper.sweep_groups(
        ["fig3_hidden"], models=["nmu"], hidden_sizes=[4, 10]
    )
    assert name == "fig3_hidden"
    assert seeds == list(range(50))
    assert [(c.model, c.hidden_size, c.iterations) for c in configs] == [
        ("nmu", 4, 5_000_000),
        ("nmu", 10, 5_000_000),
    ]


def test_only_a_smaller_budget_explains_a_below_or_an_open():
    assert reason("below", 2_000_000, 5_000_000) == "budget: 2·10⁶ steps < 5·10⁶"
    assert reason("open", 50_000, 5_000_000) == "budget: 5·10⁴ steps < 5·10⁶"
    assert reason("below", 5_000_000, 5_000_000) == ""
    assert reason("above", 50_000, 5_000_000) == ""
    assert reason("inside", 50_000, 5_000_000) == ""


def _fig3_rows(budget):
    config = ExperimentConfig(
        model="nmu", operation="mul", hidden_size=4, iterations=budget
    )
    nan = math.nan
    return pd.DataFrame(
        {
            "config_id": config_id(config),
            "model": "nmu",
            "operation": "mul",
            "hidden_size": 4,
            "interpolation_range": "U[1,2]",
            "extrapolation_range": "U[2,6]",
            "max_iterations": budget,
            "seed": [0, 1, 2, 3],
            # kept to the end; found and lost; never found; best step solved
            # but lost by the end
            "success": [True, False, False, True],
            "solved_at": [1e6, 2e6, nan, 3e6],
            "last_solved_at": [5e6, 3e6, nan, 4e6],
            "final_success": [True, False, False, False],
            "best_step": [5e6, 1e6, 4e6, 4e6],
            "sparsity_error": [1e-6, 0.3, 0.4, 1e-5],
            "wall_time": 100.0,
            "replicas": 4,
            "engine": "jax",
            "device": "cpu",
        }
    )


def test_the_hidden_size_panel_reads_success_three_ways():
    (reading,) = hidden_size_readings(_fig3_rows(5_000_000)).to_dict("records")
    assert (reading["n"], reading["best_step"], reading["any_evaluation"]) == (4, 2, 3)
    assert (reading["final_step"], reading["found_and_lost"]) == (1, 2)
    assert reading["first_solved_median"] == 2e6
    assert reading["last_solved_median"] == 4e6
    assert (reading["paper"], reading["ablation"]) == ("33/36", "45/50")

    old = _fig3_rows(5_000_000).assign(final_success=np.nan)  # before the column
    (reading,) = hidden_size_readings(old).to_dict("records")
    assert math.isnan(reading["final_step"]) and math.isnan(reading["found_and_lost"])

    seeds = paper.hidden_size_seeds(_fig3_rows(5_000_000))
    assert list(seeds["last_solved_at"].fillna(0)) == [5e6, 3e6, 0, 4e6]


def test_each_budget_is_a_row_with_its_verdict_and_reason():
    rows = pd.concat([_fig3_rows(2_000_000), _fig3_rows(5_000_000)])
    table = comparison(rows, paper.PARTS["fig3_hidden"])
    assert list(table["max_iterations"]) == [2_000_000, 5_000_000]
    # 2 of 4, 50 % [15 %, 85 %], against 33 of 36, 92 % [78 %, 97 %]
    assert list(table["verdict"]) == ["open", "open"]
    assert list(table["reason"]) == ["budget: 2·10⁶ steps < 5·10⁶", ""]
    assert list(table["paper_rate"]) == [33 / 36] * 2
    assert list(table["device"]) == ["jax/cpu"] * 2
    text = comparison_markdown(table, paper.PARTS["fig3_hidden"])
    assert "| nmu | 4 | 2·10⁶ | 4 | 50% [15%, 85%] | 92% [78%, 97%] | open |" in text
    missing = still_to_run(rows, paper.PARTS["fig3_hidden"], ["nmu"])
    assert missing == ["nmu, hidden size: 2, 3, 4, 5, 6, 7, 8, 9, 10"]


def _write(rows: pd.DataFrame, path: Path) -> Path:
    rows.assign(
        interpolation_mse=1e-9, extrapolation_mse=1e-8, iterations=5_000_000
    ).to_csv(path, index=False)
    return path


def test_two_engines_are_a_row_each_and_a_run_held_twice_is_named(tmp_path):
    """The same configuration and seeds on two engines: a row per engine. The
    same run in two files: the first kept, the second named as left out."""
    jax = _write(_fig3_rows(5_000_000), tmp_path / "jax.csv")
    tensorflow = _fig3_rows(5_000_000).drop(columns=["engine", "device"])
    tensorflow = _write(tensorflow.assign(success=False), tmp_path / "tf.csv")
    again = _write(_fig3_rows(5_000_000), tmp_path / "again.csv")
    results = paper.load_tables([jax, tensorflow, again])
    assert sorted(results["engine"].value_counts().items()) == [
        ("jax", 4),
        ("tensorflow", 4),
    ]
    (dropped,) = results.attrs["dropped"]
    assert dropped.startswith(f"{again.resolve()}: 4 rows of nmu mul (")
    assert dropped.endswith(
        f"jax, 5·10⁶ steps, seeds 0-3) left out: {jax.resolve()}"
        " holds the same runs and comes first"
    )
    table = comparison(results, paper.PARTS["fig3_hidden"])
    assert list(table["device"]) == ["jax/cpu", "tensorflow/unrecorded device"]
    assert list(table["n"]) == [4, 4] and list(table["success_rate"]) == [0.5, 0.0]
    readings = hidden_size_readings(results)
    assert list(readings["engine"]) == ["jax", "tensorflow"]
    text = paper.summary_text(results, ["fig3_hidden"])
    assert f"Rows left out:\n\n- {dropped}\n" in text
    clean = paper.summary_text(paper.load_tables([jax, tensorflow]), ["fig3_hidden"])
    assert "left out" not in clean


def test_a_time_limit_stops_the_command_and_the_same_command_continues(
    tmp_path, capsys
):
    def command(*extra):
        argv = ["--full", "--only", "table1", "--models", "nmu", "--iterations"]
        argv += ["2000", "--reuse", "", "--out", str(tmp_path)]
        return paper.main([*argv, *extra])

    command("--seeds", "0-1", "--time-limit", "0", "--fixed-chunks")
    assert "Stopped at the time limit" in capsys.readouterr().out
    results = tmp_path / "results.csv"
    assert not results.exists() or read_results(results).empty
    assert list((tmp_path / "results.csv.backup").glob("*.npz"))
    groups = paper.sweep_groups(["table1"], "0-1", 2000, ["nmu"])
    plan = paper.plan_text(groups, results, 1000, rate=1)
    assert "still to train: 2.000e+03 seed-steps in 1 chunks" in plan  # 2 × 1,000
    command("--seeds", "0-2")  # more seeds: the backup is continued
    output = capsys.readouterr().out
    assert "Stopped" not in output and "| mul | nmu | 2·10³ | 3 |" in output
    assert not list((tmp_path / "results.csv.backup").glob("*.npz"))  # used up
    assert sorted(read_results(results)["seed"]) == [0, 1, 2]
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("<!-- --8<-- [start:verdict] -->")
    assert "## Table 1" in summary and "<!-- --8<-- [start:table1] -->" in summary


def test_a_chunk_planned_for_a_time_limit_finishes_inside_it(tmp_path, capsys):
    started = time.monotonic()
    argv = ["--full", "--only", "table1", "--models", "nmu", "--iterations", "2000"]
    argv += ["--seeds", "0-3", "--time-limit", "480", "--reuse", ""]
    assert paper.main([*argv, "--out", str(tmp_path)]) == 0
    elapsed = time.monotonic() - started
    output = capsys.readouterr().out
    assert elapsed < 480
    # one measurement, then the chunk, trained to its end and written
    assert "measured nmu:" in output
    assert "chunk done: 4 runs of nmu" in output
    assert "Stopped" not in output
    rows = read_results(tmp_path / "results.csv")
    assert sorted(rows["seed"]) == [0, 1, 2, 3]
    assert set(rows["iterations"]) == {2000}
    assert not list(tmp_path.glob("results.csv.backup/*"))


def test_the_dry_run_lists_the_nalm_benchmark_in_its_place(tmp_path, capsys):
    argv = ["--dry-run", "--only", "table2,nalm", "--iterations", "1000"]
    assert paper.main([*argv, "--nalm-out", str(tmp_path), "--out", str(tmp_path)]) == 0
    output = capsys.readouterr().out
    # 24 cells; with 1,000 steps, 9 ranges (fewer where a range is refused)
    assert "NALM benchmark (benchmarks/nalm.py): 24 cells, still to train:" in output


def test_the_dry_run_counts_the_programs_of_packed_chunks(tmp_path):
    groups = paper.sweep_groups(["table2"])
    text = paper.plan_text(groups, tmp_path / "results.csv", 1000, 4e4, None, 1, 1000)
    # Table 2: 1,100 runs, at most 1,000 replicas in one program, the rest in another
    assert re.search(
        r"packed up to 1000 replicas: \d+ chunks in 2 compiled programs", text
    )
    assert "compiled programs" not in paper.plan_text(
        groups, tmp_path / "r.csv", 1000, 4e4
    )
    # one program, said as one
    text = paper.plan_text(groups, tmp_path / "results.csv", 2000, 4e4, None, 1, 2000)
    assert re.search(
        r"packed up to 2000 replicas: \d+ chunks in 1 compiled program\n", text
    )
