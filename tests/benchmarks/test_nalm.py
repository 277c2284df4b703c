"""benchmarks/nalm.py: runs stopped at the start, the published rates, the cells
not yet run."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import nalm  # noqa: E402


def _runs(model, interpolation, successes, stopped, seeds=25):
    """`seeds` runs of one range: `successes` solved, `stopped` diverged at step 2."""
    rows = []
    for seed in range(seeds):
        diverged = seed < stopped
        rows.append(
            {
                "model": model,
                "operation": "div" if "npu" in model or "nmru" in model else "mul",
                "input_size": 10,
                "max_iterations": 100_000,
                "eval_every": 1_000,
                "interpolation_range": interpolation,
                "extrapolation_range": "U[20,40]",
                "seed": seed,
                "diverged": diverged,
                "iterations": 2 if diverged else 100_000,
                "extrapolation_mse": float("nan")
                if diverged
                else (1e-7 if seed < stopped + successes else 1.0),
                "threshold": 1e-6,
                "wall_time": 10.0,
                "replicas": seeds,
                "engine": "jax",
                "device": "cpu",
            }
        )
    return rows


def test_runs_stopped_at_the_start_are_failures_counted_apart():
    rows = nalm.judged(
        pd.DataFrame(
            _runs("single_snmu", "U[10,20]", successes=0, stopped=25)
            + _runs("single_snmu", "U[1,2]", successes=20, stopped=0)
        )
    )
    assert rows["stopped_at_start"].sum() == 25
    assert not rows.loc[rows["stopped_at_start"], "success_fixed"].any()
    text = nalm.summary_text(rows, [])
    # pooled: 20 of 50 with them, 20 of 25 without
    assert "| 10 | × | snmu | 100,000 | 2 | 50 | 40 % [28, 54] |" in text
    assert "| 25 | 80 % [61, 91] | 80 % [61, 91] | – | no paper number |" in text


def test_a_run_that_diverges_later_is_not_stopped_at_the_start():
    rows = pd.DataFrame(_runs("single_nmu", "U[10,20]", successes=0, stopped=1))
    rows.loc[0, "iterations"] = 5_000
    assert not nalm.judged(rows)["stopped_at_start"].any()


def test_the_published_rate_stands_beside_ours_with_a_verdict_per_rule():
    # 16 of 25 solved (64 % [44.5, 79.8]) against the plain Real NPU's 70.2 %
    rows = nalm.judged(
        pd.DataFrame(_runs("single_real_npu_div", "U[1,2]", successes=16, stopped=0))
    )
    text = nalm.summary_text(rows, [])
    assert "| 70.2 % | inside | inside | jax/cpu, 10 s |" in text


def test_the_note_says_where_the_plain_real_npus_rate_comes_from():
    """Read as points (70.2 %) or as relative (74.1 %): the note says whether
    the other reading changes a verdict."""
    same = nalm.judged(
        pd.DataFrame(_runs("single_real_npu_div", "U[1,2]", successes=16, stopped=0))
    )
    note = nalm.paper_note(same)
    assert note.startswith("`paper`: Mistry, Farrahi & Hare (2021)")
    assert "70.2 %" in note and "74.1 %, which gives the same verdicts." in note
    # 150 of 225, 67 % [60.3, 72.5]: 70.2 % inside, 74.1 % above the interval
    other = nalm.judged(
        pd.DataFrame(
            _runs("single_real_npu_div", "U[1,2]", successes=150, stopped=0, seeds=225)
        )
    )
    assert "fixed: below instead of inside" in nalm.paper_note(other)
    assert nalm.paper_note(other) in nalm.summary_text(other, [])


def test_the_cells_not_yet_run_are_listed():
    rows = nalm.judged(
        pd.DataFrame(_runs("single_nmru", "U[1,2]", successes=25, stopped=0))
    )
    missing = nalm.not_yet_run(rows)
    assert missing[0].startswith("2 inputs: nau +, nau −, mcfc +, mcfc ×,")
    assert missing[1].endswith("real_npu_modified ÷ (11 cells)")
    assert "nmru ÷" not in missing[1]
    text = nalm.summary_text(rows, missing)
    assert "<!-- --8<-- [start:to-run] -->\nNot yet run: 2 inputs:" in text


def test_the_dmu_runs_with_two_inputs_only_and_apart_from_the_benchmarks_file():
    cells = nalm.plan((2, 10), ("dmu", "dmu_author"), ("mul", "div"))
    assert {(cell.input_size, cell.unit) for cell in cells} == {
        (2, "dmu"),
        (2, "dmu_author"),
    }
    # Its initialization is chosen by operation; ÷ runs around 0 too.
    presets = {(cell.unit, cell.operation): cell.preset for cell in cells}
    assert presets[("dmu", "mul")] == "single_dmu_add"
    assert presets[("dmu_author", "div")] == "single_dmu_sub_author"
    assert all(len(cell.ranges) == 9 for cell in cells)
    missing = " ".join(
        nalm.not_yet_run(
            nalm.judged(
                pd.DataFrame(_runs("single_nmru", "U[1,2]", successes=25, stopped=0))
            )
        )
    )
    assert "dmu" not in missing
