"""Sweep figures: three panels against a swept parameter, written as PNG."""

from pathlib import Path

import pytest
from matplotlib import image

from keras_nalu.reports.plots import plot_results, results_figure
from keras_nalu.reports.summary import load_results

EXAMPLE = Path(__file__).parents[2] / "examples" / "results" / "example_results.csv"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def results():
    return load_results(EXAMPLE)


@pytest.fixture(scope="module")
def multiplication(results):
    return results[results["operation"] == "mul"]


def test_plot_writes_a_valid_png(multiplication, tmp_path):
    out = tmp_path / "figures" / "hidden_size.png"
    path = plot_results(multiplication, x="hidden_size", out_path=out)
    assert path == out and path.is_file()
    assert path.stat().st_size > 10_000
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    height, width, channels = image.imread(path).shape
    assert width > 2 * height > 400 and channels in (3, 4)


def test_figure_has_three_panels_and_one_line_per_model(multiplication):
    figure = results_figure(multiplication, x="hidden_size")
    assert len(figure.axes) == 3
    titles = [axis.get_title() for axis in figure.axes]
    assert titles == ["Success rate", "Solved at iteration step", "Sparsity error"]
    labels = figure.axes[0].get_legend_handles_labels()[1]
    assert labels == ["nmu", "nac_mul", "nalu"]
    assert [tick for tick in figure.axes[0].get_xticks()] == [2, 4, 8]
    assert len(figure.legends) == 1


def test_categorical_axis_keeps_order_of_appearance(multiplication):
    ranges = {2: "U[1,2]", 4: "U[-2,2]", 8: "U[0.1,0.2]"}
    runs = multiplication.assign(
        interpolation_range=multiplication["hidden_size"].map(ranges)
    )
    figure = results_figure(runs, x="interpolation_range")
    ticks = [label.get_text() for label in figure.axes[2].get_xticklabels()]
    assert ticks == ["U[1,2]", "U[-2,2]", "U[0.1,0.2]"]


def test_operation_filter_and_mixed_operations(results):
    small = results[results["hidden_size"] < 8]
    small = small[small["model"].isin(["nmu", "nau", "nac"])]
    figure = results_figure(small, x="hidden_size", operation="add")
    assert figure.axes[0].get_legend_handles_labels()[1] == ["nau", "nac"]
    mixed = results_figure(small, x="hidden_size")
    labels = mixed.axes[0].get_legend_handles_labels()[1]
    assert labels == ["nmu (mul)", "nau (add)", "nac (add)"]


def test_plot_rejects_unknown_columns_and_operations(results, tmp_path):
    with pytest.raises(ValueError, match="x='hidden_units'"):
        plot_results(results, x="hidden_units", out_path=tmp_path / "x.png")
    with pytest.raises(ValueError, match="hue='optimizer'"):
        plot_results(results, "hidden_size", tmp_path / "x.png", hue="optimizer")
    with pytest.raises(ValueError, match="operation='div'"):
        plot_results(results, "hidden_size", tmp_path / "x.png", operation="div")
    assert not (tmp_path / "x.png").exists()
