"""`keras-nalu plot`: writes over its own plots only; --x is a swept column."""

import shutil
from pathlib import Path

import pytest

from keras_nalu import cli
from keras_nalu.reports.plots import made_by_plot

EXAMPLE = Path(__file__).parents[2] / "examples" / "results" / "example_results.csv"


def keras_nalu(capsys, *argv):
    """`keras-nalu ARGV` here: (exit status, stdout, stderr lines)."""
    code = cli.main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, [line for line in captured.err.splitlines() if line]


@pytest.fixture
def results(tmp_path):
    path = tmp_path / "keep.csv"
    shutil.copy(EXAMPLE, path)
    return path


@pytest.mark.parametrize("name", ["sweepB.csv", "notes.txt", "photo.png"])
def test_plot_never_writes_over_a_file_it_did_not_make(results, capsys, name):
    other = results.parent / name
    shutil.copy(EXAMPLE, other)
    content = other.read_bytes()
    code, out, err = keras_nalu(
        capsys, "plot", results, "--x", "hidden_size", "--out", other
    )
    assert code == 2 and out == "" and len(err) == 1
    if not name.endswith(".png"):  # never PNG bytes under another name
        assert "plot writes PNG files" in err[0]
        return
    assert f"--out {str(other)!r} exists and is not a plot keras-nalu made" in err[0]
    assert "--overwrite" in err[0]
    assert other.read_bytes() == content

    code, out, err = keras_nalu(
        capsys, "plot", results, "--x", "hidden_size", "--out", other, "--overwrite"
    )
    assert code == 0, err
    assert made_by_plot(other)


def test_plot_replaces_its_own_plot(results, capsys):
    out_path = results.parent / "hidden.png"
    argv = ["plot", results, "--x", "hidden_size", "--out", out_path]
    assert keras_nalu(capsys, *argv)[0] == 0
    assert made_by_plot(out_path)
    out_path.write_bytes(out_path.read_bytes())  # touched, still a plot of ours
    code, out, err = keras_nalu(capsys, *argv)
    assert code == 0, err
    assert out.strip() == str(out_path)


@pytest.mark.parametrize("x", ["operation", "model", "success", "solved_at", "seed"])
def test_an_x_that_is_not_swept_is_one_line_listing_the_columns(results, capsys, x):
    code, out, err = keras_nalu(capsys, "plot", results, "--x", x)
    assert code == 2 and out == "" and len(err) == 1
    assert (
        "one of ['hidden_size', 'interpolation_range', 'extrapolation_range']" in err[0]
    )
    assert f"Received: --x {x!r}" in err[0]
    assert not list(results.parent.glob("*.png"))


def test_mixed_budgets_and_engines_get_lines_of_their_own(tmp_path, capsys):
    import pandas as pd

    from keras_nalu.reports.plots import results_figure
    from keras_nalu.reports.summary import load_results

    table = load_results(EXAMPLE)
    table = table[table["model"] == "nmu"]
    runs = pd.concat(
        [
            table.assign(max_iterations=budget, engine=engine)
            for budget in (2000, 200)
            for engine in ("tensorflow", "jax")
        ],
        ignore_index=True,
    )
    figure = results_figure(runs, x="hidden_size")
    labels = figure.axes[0].get_legend_handles_labels()[1]
    assert labels == [
        "nmu (max_iterations=2000, tensorflow)",
        "nmu (max_iterations=2000, jax)",
        "nmu (max_iterations=200, tensorflow)",
        "nmu (max_iterations=200, jax)",
    ]


@pytest.mark.parametrize("out", ["figures/", "made", "x.pdf", "x.svg", "plain"])
def test_out_is_a_png_file_or_a_folder_for_one(results, capsys, out):
    folder = results.parent
    (folder / "made").mkdir()
    code, stdout, err = keras_nalu(
        capsys, "plot", results, "--x", "hidden_size", "--out", f"{folder}/{out}"
    )
    if out in ("figures/", "made"):  # a folder: the plot under its default name
        assert code == 0, err
        written = folder / out.rstrip("/") / "keep.hidden_size.png"
        assert stdout.strip() == str(written) and made_by_plot(written)
        return
    assert code == 2 and len(err) == 1
    assert "plot writes PNG files; pass a path ending in .png" in err[0]
    assert not (folder / out).exists()


def test_empty_cells_of_a_numeric_x_are_the_default(results, capsys):
    import pandas as pd

    # epsilon and sparsity: None (the default) in half the runs, numbers in
    # the other half, as a sweep of epsilon=none,1e-8 writes them.
    table = pd.read_csv(results)
    table = table[
        (table["hidden_size"] == 2) & (table["interpolation_range"] == "U[1,2]")
    ]
    half = len(table) // 2
    for column, value in (("epsilon", 1e-8), ("sparsity", 10.0)):
        table[column] = [None] * half + [value] * (len(table) - half)
    table.drop(columns=["hidden_size"]).to_csv(results, index=False)
    for x in ("epsilon", "sparsity"):
        code, stdout, err = keras_nalu(capsys, "plot", results, "--x", x)
        assert code == 0, err
        assert made_by_plot(stdout.strip())
    from keras_nalu.reports.plots import results_figure
    from keras_nalu.reports.summary import load_results

    figure = results_figure(load_results(results), x="epsilon")
    ticks = [label.get_text() for label in figure.axes[0].get_xticklabels()]
    assert ticks == ["default", "1e-08"]
