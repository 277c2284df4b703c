"""What the paper examples share: flags, output folder, tables, figures, seeds.

Each example is a script (`python examples/NAME.py [--tiny] [--out DIR]`) with
a `main(argv=None) -> dict` that returns its result rows. Scripts find this
module because Python puts the script's folder first on `sys.path`; the smoke
test (`tests/examples/test_examples.py`) puts `examples/` there itself.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Before TensorFlow: importing keras_nalu first keeps TF's start-up lines quiet.
importlib.import_module("keras_nalu")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import pyplot as plt  # noqa: E402

DEFAULT_OUTPUT = Path(__file__).resolve().parent / "output"
"""Where the examples write their figures unless `--out` is given."""


def make_parser(description: str, default_seed: int = 0) -> argparse.ArgumentParser:
    """An argument parser with the flags every example has.

    `--tiny` shrinks the run to seconds (the smoke test's mode), `--out` is
    the output folder and `--seed` the base seed.
    """
    parser = argparse.ArgumentParser(
        description=description,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="a few steps and seeds: checks the pipeline in seconds",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUTPUT,
        help="folder for the figure",
    )
    parser.add_argument("--seed", type=int, default=default_seed, help="base seed")
    return parser


def output_dir(path: Path | str | None) -> Path:
    """The output folder, created if missing."""
    folder = Path(path) if path is not None else DEFAULT_OUTPUT
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def set_seed(seed: int) -> None:
    """Seeds Python, NumPy and the backend (`keras.utils.set_random_seed`)."""
    keras.utils.set_random_seed(int(seed))


def format_value(value) -> str:
    """A table cell: floats with 3–4 significant digits, None as "—"."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value == 0:
            return "0"
        if abs(value) >= 1e5 or abs(value) < 1e-3:
            return f"{value:.3g}"
        if abs(value) >= 100:
            return f"{value:.1f}"
        return f"{value:.4g}"
    return str(value)


def format_table(rows: Sequence[dict], columns: Sequence[str]) -> str:
    """A Markdown table of `rows` (dicts) restricted to `columns`."""
    cells = [[format_value(row.get(column)) for column in columns] for row in rows]
    widths = [
        max(len(column), *(len(line[i]) for line in cells))
        for i, column in enumerate(columns)
    ]

    def line(values: Iterable[str]) -> str:
        padded = (value.ljust(width) for value, width in zip(values, widths))
        return "| " + " | ".join(padded) + " |"

    separator = "|" + "|".join("-" * (width + 2) for width in widths) + "|"
    return "\n".join([line(columns), separator, *(line(c) for c in cells)])


def print_table(title: str, rows: Sequence[dict], columns: Sequence[str]) -> None:
    """Prints a title and the Markdown table."""
    print(f"\n{title}\n")
    print(format_table(rows, columns))


def save_figure(figure: plt.Figure, folder: Path, name: str) -> Path:
    """Saves `figure` as `folder/name` (PNG, 120 dpi), closes it, returns path."""
    path = Path(folder) / name
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    print(f"\nsaved {path}")
    return path


class Stopwatch:
    """Wall time since construction, for the "took N s" lines."""

    def __init__(self):
        self.start = time.perf_counter()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.start
