"""benchmarks/dmu.py: the DMU beside the other units, and the claim's verdict."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import dmu  # noqa: E402
import nalm  # noqa: E402


def _rows(model, operation, solved, seeds=25):
    return [
        {
            "model": model,
            "operation": operation,
            "input_size": 2,
            "max_iterations": 50_000,
            "eval_every": 1_000,
            "interpolation_range": "U[1,2]",
            "extrapolation_range": "U[2,6]",
            "seed": seed,
            "diverged": False,
            "iterations": 50_000,
            "extrapolation_mse": 1e-9 if seed < solved else 1.0,
            "threshold": 1e-6,
            "wall_time": 10.0,
            "replicas": seeds,
            "engine": "jax",
            "device": "cpu",
        }
        for seed in range(seeds)
    ]


def test_the_claim_sets_each_recipe_against_the_best_other_unit():
    rows = nalm.judged(
        pd.DataFrame(
            _rows("single_nmru", "div", 25, seeds=225)
            + _rows("single_real_npu_div", "div", 100, seeds=225)
            + _rows("single_dmu_sub", "div", 150, seeds=225)
            + _rows("single_dmu_sub_author", "div", 224, seeds=225)
        )
    )
    text = dmu.claim_text(rows)
    # the best other unit on ÷ is the Real NPU here (44 % against 11 %)
    line = next(x for x in text.splitlines() if x.startswith("| ÷ | fixed"))
    assert "| real_npu |" in line
    assert "67 % [60, 73] **higher**" in line
    assert "100 % [98, 100] **higher**" in line
    assert "203/225" in line  # the author's own run beside
    assert "is handed its initialization by operation" in text


def test_overlapping_intervals_are_level_apart_ones_higher_or_lower():
    assert dmu._relation((0.5, 0.4, 0.6), (0.55, 0.45, 0.65)) == "level"
    assert dmu._relation((0.9, 0.8, 0.95), (0.5, 0.4, 0.6)) == "higher"
    assert dmu._relation((0.2, 0.1, 0.3), (0.5, 0.4, 0.6)) == "lower"


def test_the_beside_table_names_the_initialization_it_was_given():
    rows = nalm.judged(
        pd.DataFrame(
            _rows("single_dmu_add", "mul", 25) + _rows("single_nmu", "mul", 20)
        )
    )
    table = dmu.beside_table(rows)
    assert "| × | dmu | DMU_add | 25 | 100 % [87, 100] |" in table
    assert "| × | nmu | – | 25 | 80 % [61, 91] |" in table


def _lost_on_negative_inputs(model, solved, seeds=25):
    lost = _rows(model, "mul", solved, seeds)
    for row in lost:
        row["interpolation_range"], row["extrapolation_range"] = (
            "U[-20,-10]",
            "U[-40,-20]",
        )
    return lost


def test_the_verdict_names_the_ranges_a_recipe_does_not_solve_every_run_of():
    rows = nalm.judged(
        pd.DataFrame(
            _rows("single_nmru", "mul", 225, seeds=225)
            + _rows("single_dmu_add", "mul", 200, seeds=200)
            + _lost_on_negative_inputs("single_dmu_add", 14)
            + _rows("single_dmu_add_author", "mul", 225, seeds=225)
        )
    )
    text = dmu.verdict_text(rows)
    line = next(x for x in text.splitlines() if x.startswith("- ×"))
    # one recipe lower, the other level: not borne out, not refuted
    assert line.startswith("- ×: the claim is not borne out; dmu lower than nmru")
    assert "U[-20, -10] → U[-40, -20] (14 of 25 solved)" in line
    assert "dmu_author level with nmru, not every run solved on: none" in line
    assert "- ÷: the claim is open; dmu not run yet" in text
    assert "- +" not in text  # the claim names × and ÷ only


def test_the_claim_stays_open_until_both_recipes_have_every_run():
    full = _rows("single_nmru", "mul", 225, seeds=225) + _lost_on_negative_inputs(
        "single_dmu_add", 100, seeds=225
    )
    partial = _rows("single_dmu_add_author", "mul", 10, seeds=50)
    rows = nalm.judged(pd.DataFrame(full + partial))
    assert dmu.claim_verdict(rows, "mul") == "is open"
    assert "dmu_author (50 of 225 runs so far) lower than nmru" in dmu.verdict_text(
        rows
    )
    done = _rows("single_dmu_add_author", "mul", 200, seeds=225)
    rows = nalm.judged(pd.DataFrame(full + done))
    assert dmu.claim_verdict(rows, "mul") == "does not hold"
    # one complete recipe above every other unit is enough, the other unrun
    rows = nalm.judged(pd.DataFrame(_rows("single_nmru", "mul", 100, 225) + done))
    assert dmu.claim_verdict(rows, "mul") == "holds"
