"""Results tables: loading, grouping, the paper's layout in Markdown/LaTeX/CSV."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from keras_nalu.evaluation.statistics import sparsity_error_summary
from keras_nalu.reports.summary import (
    REQUIRED_COLUMNS,
    SUMMARY_STATISTICS,
    load_results,
    pooled_columns,
    run_keys,
    summarize,
)
from keras_nalu.reports.tables import to_latex, to_markdown, write_summary

EXAMPLE = Path(__file__).parents[2] / "examples" / "results" / "example_results.csv"
#: The paper's Table 2 rows: each pools the hidden sizes of `runs`.
TABLE_2 = ("operation", "model")


def run(model, operation, seed, success, solved_at, sparsity_error, **swept):
    return {
        "model": model,
        "operation": operation,
        "seed": seed,
        "success": success,
        "solved_at": solved_at,
        "sparsity_error": sparsity_error,
        "interpolation_mse": 1e-9 if success else 1.0,
        "extrapolation_mse": 1e-8 if success else 10.0,
        "iterations": 50_000,
        **swept,
    }


@pytest.fixture
def runs():
    """mul/nmu: 3 of 4 solved (the failure reached the threshold once, at step
    500, and has a large sparsity error, neither of which may count);
    mul/nac_mul: 1 of 2; add/nau: 0 of 2."""
    return pd.DataFrame(
        [
            run("nmu", "mul", 0, True, 1000, 1e-3, hidden_size=2),
            run("nmu", "mul", 1, True, 2000, 2e-3, hidden_size=2),
            run("nmu", "mul", 2, True, 4000, 4e-3, hidden_size=4),
            run("nmu", "mul", 3, False, 500, 0.45, hidden_size=4),
            run("nac_mul", "mul", 0, True, 9000, 0.1, hidden_size=2),
            run("nac_mul", "mul", 1, False, None, 0.3, hidden_size=2),
            run("nau", "add", 0, False, None, 0.2, hidden_size=2),
            run("nau", "add", 1, False, None, 0.3, hidden_size=2),
        ]
    )


def test_summarize_counts_rates_and_only_solved_seeds(runs):
    summary = summarize(runs, by=TABLE_2)
    assert list(summary.columns) == ["operation", "model", *SUMMARY_STATISTICS]
    assert list(zip(summary["operation"], summary["model"])) == [
        ("mul", "nmu"),
        ("mul", "nac_mul"),
        ("add", "nau"),
    ]
    nmu, nac_mul, nau = (row for _, row in summary.iterrows())

    assert (nmu["n"], nac_mul["n"], nau["n"]) == (4, 2, 2)
    assert nmu["success_rate"] == 0.75
    lower, upper = proportion_confint(3, 4, alpha=0.05, method="wilson")
    assert (nmu["success_lower"], nmu["success_upper"]) == pytest.approx((lower, upper))

    assert nmu["solved_at_median"] == 2000.0
    assert nmu["solved_at_mean"] == pytest.approx(7000 / 3)
    assert nmu["solved_at_lower"] < nmu["solved_at_mean"] < nmu["solved_at_upper"]
    expected = sparsity_error_summary([1e-3, 2e-3, 4e-3])
    assert nmu["sparsity_error_mean"] == pytest.approx(expected["mean"])
    assert nmu["sparsity_error_upper"] == pytest.approx(expected["upper"])
    assert nmu["sparsity_error_upper"] < 0.45 / 4

    assert nac_mul["solved_at_median"] == nac_mul["solved_at_mean"] == 9000.0
    assert math.isnan(nac_mul["solved_at_lower"])

    assert (nau["success_rate"], nau["success_lower"]) == (0.0, 0.0)
    for column in SUMMARY_STATISTICS[4:-1]:
        assert math.isnan(nau[column]), column
    assert summary["diverged"].isna().all()  # the runs have no such column


def test_diverged_runs_are_counted_in_n_and_shown(runs):
    runs = runs.assign(diverged=[False, False, False, True, False, True, "1", 0])
    summary = summarize(runs, by=TABLE_2)
    assert list(summary["diverged"]) == [1, 1, 1]
    assert list(summary["n"]) == [4, 2, 2]
    rows = to_markdown(summary).splitlines()
    assert rows[0].startswith("| operation | model | n | diverged | success rate |")
    assert rows[2].startswith("| mul | nmu | 4 | 1 | 75% [30%, 95%] |")
    assert "\nmul & nmu & 4 & 1 & 75\\%" in to_latex(summary)
    with pytest.raises(ValueError, match="column 'diverged' must be true/false"):
        summarize(runs.assign(diverged="maybe"), by=TABLE_2)


def test_a_sweeps_summary_counts_its_diverged_runs(tmp_path):
    """The NALU on + and × of the committed Table 2 sweep: 15 and 23 of 100
    runs diverged."""
    from keras_nalu.reports.tables import summary_markdown
    from keras_nalu.sweeps.runner import SweepOutcome

    table2 = EXAMPLE.parents[2] / "benchmarks" / "results" / "table2" / "results.csv"
    rows = load_results(table2)
    nalu = rows["model"].eq("nalu") & rows["max_iterations"].eq(50_000)
    rows = rows[nalu & rows["operation"].isin(["add", "mul"])]
    assert len(rows) == 200
    path = tmp_path / "results.csv"
    rows.to_csv(path, index=False)
    outcome = SweepOutcome(path, rows, 0, len(rows), ("operation", "model"))
    table = summary_markdown(outcome).splitlines()
    assert table[0].startswith("| operation | model | n | diverged | success rate |")
    assert [line.split(" | ")[:4] for line in table[2:]] == [
        ["| add", "nalu", "100", "15"],
        ["| mul", "nalu", "100", "23"],
    ]


def test_unbounded_weights_get_the_plain_sparsity_mean(runs):
    """A Linear model's weights are unbounded, so its sparsity error can pass
    0.5 (|W| = 1.7 gives 0.7): no beta interval, the mean and a NaN interval."""
    linear = pd.DataFrame(
        [
            run("linear", "add", seed, True, 1000, error)
            for seed, error in enumerate([0.7, 0.1, 0.4])
        ]
    )
    row = summarize(pd.concat([runs, linear]), by=TABLE_2).iloc[-1]
    assert row["model"] == "linear"
    assert row["sparsity_error_mean"] == pytest.approx(0.4)
    assert math.isnan(row["sparsity_error_lower"])
    assert math.isnan(row["sparsity_error_upper"])
    assert "linear" in to_markdown(summarize(linear))


def test_summarize_by_swept_parameter_and_success_as_integers(runs):
    runs = runs.assign(success=runs["success"].astype(int))
    summary = summarize(runs[runs["model"] == "nmu"], by=("model", "hidden_size"))
    assert list(summary["hidden_size"]) == [2, 4]
    assert list(summary["n"]) == [2, 2]
    assert list(summary["success_rate"]) == [1.0, 0.5]
    assert list(summary["solved_at_median"]) == [1500.0, 4000.0]


def test_summarize_rejects_missing_columns(runs):
    with pytest.raises(ValueError, match="hidden_units"):
        summarize(runs, by=("model", "hidden_units"))
    with pytest.raises(ValueError, match="sparsity_error"):
        summarize(runs.drop(columns="sparsity_error"))


def test_markdown_layout(runs):
    text = to_markdown(summarize(runs, by=TABLE_2))
    lines = text.splitlines()
    assert len(lines) == 2 + 3
    assert lines[0].startswith("| operation | model | n | diverged | success rate |")
    nmu = lines[2].split(" | ")
    assert nmu[:5] == ["| mul", "nmu", "4", "—", "75% [30%, 95%]"]
    assert nmu[5] == "2.0e+03"
    assert nmu[6].startswith("2.3e+03 [")
    assert lines[4].startswith("| add | nau | 2 | — | 0% [0%, 66%] | — | — | —")


def test_latex_layout(runs):
    text = to_latex(summarize(runs, by=TABLE_2))
    assert text.startswith("\\begin{tabular}{llrrllll}\n\\toprule\n")
    assert text.rstrip().endswith("\\bottomrule\n\\end{tabular}")
    rows = [line for line in text.splitlines() if line.endswith("\\\\")]
    assert len(rows) == 1 + 3
    assert rows[1].startswith(
        "mul & nmu & 4 & --- & 75\\% [30\\%, 95\\%] & $2.0 \\cdot 10^{3}$"
    )
    # The operation is printed once per block; blocks are separated by a rule.
    assert rows[2].startswith(" & nac\\_mul & 2 & --- & 50\\%")
    assert "\\midrule\nadd & nau" in text
    assert rows[3].endswith("& --- & --- & --- \\\\")


def test_write_summary_writes_three_files(runs, tmp_path):
    results_path = tmp_path / "results.csv"
    runs.to_csv(results_path, index=False)
    paths = write_summary(results_path, tmp_path / "out" / "summary", by=TABLE_2)
    assert set(paths) == {"markdown", "latex", "csv"}
    assert [path.name for path in paths.values()] == [
        "results.summary.md",
        "results.summary.tex",
        "results.summary.csv",
    ]
    assert {path.parent for path in paths.values()} == {tmp_path / "out" / "summary"}
    assert all(path.is_file() for path in paths.values())
    assert "| mul | nac_mul | 2 |" in paths["markdown"].read_text(encoding="utf-8")
    assert "add & nau & 2" in paths["latex"].read_text(encoding="utf-8")
    written = pd.read_csv(paths["csv"])
    pd.testing.assert_frame_equal(
        written, summarize(runs, by=TABLE_2), check_dtype=False
    )


def test_load_results_reads_the_example_file():
    results = load_results(EXAMPLE)
    assert set(REQUIRED_COLUMNS) <= set(results.columns)
    assert len(results) == 6 * 3 * 10
    assert results["success"].dtype == bool
    assert results["solved_at"].dtype == float
    solved = results[results["success"]]
    assert solved["solved_at"].notna().all()
    assert results.loc[~results["success"], "solved_at"].isna().all()
    summary = summarize(results, by=TABLE_2)
    assert len(summary) == 6 and set(summary["n"]) == {30}
    # By default, one row per configuration: each of the three swept values.
    summary = summarize(results)
    assert len(summary) == 18 and set(summary["n"]) == {10}


def test_load_results_names_the_missing_columns(tmp_path):
    path = tmp_path / "foreign.csv"
    pd.DataFrame({"model": ["nmu"], "loss": [0.1], "seed": [0]}).to_csv(path)
    with pytest.raises(ValueError, match="missing required columns") as error:
        load_results(path)
    for column in ("operation", "success", "solved_at", "sparsity_error"):
        assert repr(column) in str(error.value)
    assert "'model'" not in str(error.value).split("Found")[0]


@pytest.mark.parametrize(
    "content",
    [
        np.random.default_rng(0).bytes(4096),
        b"",
        b"model,operation\nnmu,mul,1,2,3\nnau\x00,add,,,,,,\n",
    ],
    ids=["binary", "empty", "ragged"],
)
def test_load_results_rejects_corrupt_files(tmp_path, content):
    path = tmp_path / "corrupt.csv"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="not a results CSV"):
        load_results(path)


def test_load_results_rejects_bad_values(tmp_path, runs):
    path = tmp_path / "results.csv"
    runs.assign(success="maybe").to_csv(path, index=False)
    with pytest.raises(ValueError, match="success"):
        load_results(path)
    runs.assign(solved_at="soon").to_csv(path, index=False)
    with pytest.raises(ValueError, match="solved_at"):
        load_results(path)


def test_load_results_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_results(tmp_path / "nothing.csv")


def test_single_numeric_key_keeps_its_type_and_needs_no_blocks(runs):
    summary = summarize(runs, by="hidden_size")
    assert list(summary["hidden_size"]) == [2, 4]
    markdown = to_markdown(summary).splitlines()
    assert markdown[2].startswith("| 2 | 6 | — | 50% [")
    latex = to_latex(summary)
    assert "\n4 & 2 & --- & 50\\%" in latex
    assert latex.count("\\midrule") == 1


def test_write_summary_never_writes_over_its_input(runs, tmp_path):
    # A results file named like the old fixed output, summary.csv, was
    # written over by its own summary.
    results_path = tmp_path / "summary.csv"
    runs.to_csv(results_path, index=False)
    content = results_path.read_bytes()
    paths = write_summary(results_path)
    assert results_path.read_bytes() == content
    assert paths["csv"] == tmp_path / "summary.summary.csv"
    assert len(load_results(results_path)) == len(runs)


def test_two_results_files_in_one_folder_get_two_summaries(runs, tmp_path):
    first, second = tmp_path / "hidden.csv", tmp_path / "ranges.csv"
    runs.to_csv(first, index=False)
    runs.head(2).to_csv(second, index=False)
    first_paths, second_paths = write_summary(first), write_summary(second)
    assert set(first_paths.values()).isdisjoint(second_paths.values())
    assert list(pd.read_csv(first_paths["csv"])["n"]) == [2, 2, 2, 2]  # nmu: 2 sizes
    assert list(pd.read_csv(second_paths["csv"])["n"]) == [2]


def test_a_foreign_file_in_the_way_of_a_summary_is_refused(runs, tmp_path):
    results_path = tmp_path / "results.csv"
    runs.to_csv(results_path, index=False)
    foreign = tmp_path / "results.summary.csv"
    foreign.write_text("name,score\nalice,3\n")
    with pytest.raises(ValueError, match="not a summary; it is left untouched"):
        write_summary(results_path)
    assert foreign.read_text() == "name,score\nalice,3\n"
    assert not (tmp_path / "results.summary.md").exists()
    paths = write_summary(results_path, tmp_path / "elsewhere")
    write_summary(results_path, tmp_path / "elsewhere")  # its own: replaced
    assert all(path.is_file() for path in paths.values())


def _complete_file(runs, path):
    runs.to_csv(path, index=False)
    return path.read_bytes()


@pytest.mark.parametrize("keep", ["half a row", "row without its last digit"])
def test_a_row_cut_short_is_refused_with_its_line(runs, tmp_path, keep):
    path = tmp_path / "results.csv"
    content = _complete_file(runs, path)
    last_row = content.rstrip(b"\n").rsplit(b"\n", 1)[1]
    # Line 9 is the 8th run, after the header.
    cut = len(last_row) // 2 if keep == "half a row" else len(last_row) - 1
    path.write_bytes(content[: len(content) - len(last_row) - 1 + cut])
    with pytest.raises(ValueError, match="line 9") as error:
        load_results(path)
    assert "\n" not in str(error.value)


def test_a_row_without_a_run_is_never_counted(runs, tmp_path):
    path = tmp_path / "results.csv"
    runs.to_csv(path, index=False)
    with open(path, "a") as handle:
        handle.write(",,,,,,,,,\n")
    with pytest.raises(ValueError, match="line 10 has no model"):
        load_results(path)


def test_bad_values_are_named_by_their_line(runs, tmp_path):
    path = tmp_path / "results.csv"
    runs.assign(solved_at=["soon" if i == 5 else 1 for i in range(8)]).to_csv(
        path, index=False
    )
    with pytest.raises(ValueError, match="line 7: column 'solved_at'.*'soon'"):
        load_results(path)


def test_two_configurations_on_two_engines_are_four_rows_with_the_engine(runs):
    one = runs[runs["model"] == "nmu"].drop(columns="hidden_size")
    table = pd.concat(
        [
            one.assign(max_iterations=budget, engine=engine)
            for budget in (2000, 200)
            for engine in ("tensorflow", "jax")
        ],
        ignore_index=True,
    )
    summary = summarize(table)
    keys = ["operation", "model", "max_iterations", "engine"]
    assert list(summary.columns) == [*keys, *SUMMARY_STATISTICS]
    assert summary[keys].values.tolist() == [
        ["mul", "nmu", 2000, "tensorflow"],
        ["mul", "nmu", 2000, "jax"],
        ["mul", "nmu", 200, "tensorflow"],
        ["mul", "nmu", 200, "jax"],
    ]
    assert list(summary["n"]) == [4, 4, 4, 4]
    assert "| mul | nmu | 200 | jax | 4 |" in to_markdown(summary)
    assert run_keys(table) == keys
    assert pooled_columns(table, ["operation", "model"]) == {
        "max_iterations": [200, 2000],
        "engine": ["jax", "tensorflow"],
    }
    assert pooled_columns(table, keys) == {}


def test_a_run_listed_twice_is_refused_naming_both_lines(runs, tmp_path):
    path = tmp_path / "results.csv"
    pd.concat([runs, runs.iloc[[2]]]).to_csv(path, index=False)
    with pytest.raises(ValueError, match="line 10 repeats the run of line 4"):
        load_results(path)
    with pytest.raises(ValueError, match="are one run"):
        summarize(pd.concat([runs, runs.iloc[[2]]]))
    # The same seed of another configuration or engine is another run.
    other = pd.concat([runs, runs.iloc[[2]].assign(engine="jax")])
    assert summarize(other.fillna({"engine": "tensorflow"}))["n"].sum() == 9
