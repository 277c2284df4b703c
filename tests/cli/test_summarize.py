"""`keras-nalu summarize`: each run counted once, no configurations pooled."""

import pandas as pd

from keras_nalu import cli
from tests.bad_paths import listing, read_only_folder_with

HEADER = (
    "model,operation,seed,max_iterations,engine,success,solved_at,sparsity_error,"
    "interpolation_mse,extrapolation_mse,iterations\n"
)


def row(seed, budget=2000, engine="tensorflow", success=True, model="nau"):
    solved = f"{budget // 2}" if success else ""
    return (
        f"{model},add,{seed},{budget},{engine},{success},{solved},1e-4,1e-9,1e-8,"
        f"{budget}\n"
    )


def keras_nalu(capsys, *argv):
    """`keras-nalu ARGV` here: (exit status, stdout, stderr lines)."""
    code = cli.main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, [line for line in captured.err.splitlines() if line]


def table_rows(out: str) -> list[list[str]]:
    lines = [line for line in out.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_two_configurations_and_two_engines_are_four_rows(tmp_path, capsys):
    results = tmp_path / "results.csv"
    rows = [
        row(seed, budget, engine, success=seed < 2)
        for budget in (2000, 200)
        for engine in ("tensorflow", "jax")
        for seed in range(4)
    ]
    results.write_text(HEADER + "".join(rows))
    code, out, err = keras_nalu(capsys, "summarize", results)
    assert code == 0, err
    header, _, *body = table_rows(out)
    assert header[:5] == ["operation", "model", "max_iterations", "engine", "n"]
    assert [cells[:5] for cells in body] == [
        ["add", "nau", "2000", "tensorflow", "4"],
        ["add", "nau", "2000", "jax", "4"],
        ["add", "nau", "200", "tensorflow", "4"],
        ["add", "nau", "200", "jax", "4"],
    ]
    assert all(cells[5] == "—" for cells in body)  # no `diverged` column
    assert all(cells[6].startswith("50% ") for cells in body)
    written = pd.read_csv(tmp_path / "results.summary.csv")
    assert list(written["n"]) == [4, 4, 4, 4]


def test_pooling_with_by_says_what_it_pooled(tmp_path, capsys):
    results = tmp_path / "results.csv"
    engines = ("tensorflow", "jax")
    rows = [row(s, b, e) for b in (2000, 200) for e in engines for s in (0, 1)]
    results.write_text(HEADER + "".join(rows))
    code, out, err = keras_nalu(capsys, "summarize", results, "--by", "operation,model")
    assert code == 0, err
    assert table_rows(out)[2][:3] == ["add", "nau", "8"]
    (note,) = [line for line in err if "note" in line]
    assert "pools runs of different max_iterations (200, 2000)" in note
    assert "engine (jax, tensorflow)" in note


def test_a_run_listed_twice_is_refused_not_counted_twice(tmp_path, capsys):
    results = tmp_path / "dup.csv"
    content = HEADER + "".join(row(seed) for seed in range(4)) + row(0)
    results.write_text(content)
    code, out, err = keras_nalu(capsys, "summarize", results)
    assert code == 2 and out == "" and len(err) == 1
    assert "line 6 repeats the run of line 2" in err[0]
    assert results.read_text() == content
    assert not (tmp_path / "dup.summary.csv").exists()


def test_a_folder_is_named_as_a_folder(tmp_path, capsys):
    code, out, err = keras_nalu(capsys, "summarize", tmp_path)
    assert code == 2 and len(err) == 1
    assert f"{tmp_path} is a folder; pass a results CSV file" in err[0]


def test_a_read_only_folder_still_prints_the_table_and_names_out(tmp_path, capsys):
    content = HEADER + "".join(row(seed) for seed in range(4))
    with read_only_folder_with(tmp_path, "results.csv", content) as folder:
        results = folder / "results.csv"
        before = listing(folder)
        code, out, err = keras_nalu(capsys, "summarize", results)
        assert code == 1
        assert table_rows(out)[2][:3] == ["add", "nau", "tensorflow"]
        assert len(err) == 1 and "--out" in err[0] and "cannot write in" in err[0]
        assert listing(folder) == before
        elsewhere = tmp_path / "elsewhere"
        code, out, err = keras_nalu(capsys, "summarize", results, "--out", elsewhere)
        assert code == 0, err
        assert (elsewhere / "results.summary.md").is_file()


def test_a_column_named_twice_in_by_is_one_column(tmp_path, capsys):
    import warnings

    results = tmp_path / "results.csv"
    results.write_text(HEADER + "".join(row(seed) for seed in range(4)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pandas' warning about the column twice
        code, out, err = keras_nalu(
            capsys, "summarize", results, "--by", "operation,operation"
        )
    assert code == 0, err
    header, _, body = table_rows(out)
    assert header[:2] == ["operation", "n"] and body[:2] == ["add", "4"]
    assert list(pd.read_csv(tmp_path / "results.summary.csv").columns)[:2] == [
        "operation",
        "n",
    ]


def test_a_file_of_no_runs_says_so(tmp_path, capsys):
    results = tmp_path / "header-only.csv"
    results.write_text(HEADER)
    code, out, err = keras_nalu(capsys, "summarize", results)
    assert code == 0 and out == ""
    assert err == [
        f"keras-nalu summarize: {results} holds 0 runs (a header and no rows): "
        "there is nothing to summarize, and no table is written"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["header-only.csv"]
