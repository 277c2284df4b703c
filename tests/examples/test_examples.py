"""Smoke test of the paper examples: each `main(["--tiny", ...])` runs in-process.

`--tiny` trains for a few dozen steps: these tests check that every example
runs end to end, returns a row for everything it reports and writes its
figure, not that it reproduces the paper (see examples/README.md for that).
"""

import importlib.util
import math
import sys
from pathlib import Path

import keras
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def run_example(monkeypatch, tmp_path):
    """Imports examples/NAME.py and runs its tiny mode into tmp_path."""
    monkeypatch.syspath_prepend(str(EXAMPLES))

    def run(name):
        spec = importlib.util.spec_from_file_location(
            f"example_{name}", EXAMPLES / f"{name}.py"
        )
        module = importlib.util.module_from_spec(spec)
        # Registered first: dataclasses look their module up while defined.
        monkeypatch.setitem(sys.modules, spec.name, module)
        spec.loader.exec_module(module)
        result = module.main(["--tiny", "--out", str(tmp_path)])
        return module, result

    yield run
    keras.backend.clear_session()


def check_figure(path, tmp_path):
    path = Path(path)
    assert path.parent == tmp_path
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 5_000


def finite(value) -> bool:
    return isinstance(value, float) and math.isfinite(value)


def test_identity_extrapolation(run_example, tmp_path):
    module, result = run_example("identity_extrapolation")
    rows = result["rows"]
    assert [row["nonlinearity"] for row in rows] == [
        n.name for n in module.NONLINEARITIES
    ]
    assert len(rows) >= 15
    for row in rows:
        assert all(
            finite(row[key])
            for key in ("MAE [-5,5]", "MAE [-20,20]", "MAE -1000..1000")
        )
    # Each row carries its own non-linearity's Table 5 error, not a neighbour's.
    table = {n.name: n.paper_error for n in module.NONLINEARITIES}
    assert [row["paper (Table 5)"] for row in rows] == [
        table[row["nonlinearity"]] for row in rows
    ]
    check_figure(result["figure"], tmp_path)


def test_number_words(run_example, tmp_path):
    module, result = run_example("number_words")
    rows = result["rows"]
    assert [row["model"] for row in rows] == [
        "LSTM",
        "LSTM + NAC",
        "LSTM + NALU",
        "LSTM + NAU",
        "LSTM + NMU",
    ]
    for row in rows:
        assert all(
            finite(row[key]) for key in ("train MAE", "validation MAE", "test MAE")
        )
    # The paper's columns sit beside the head they belong to (the LSTM alone
    # is Trask et al.'s "Linear" row); heads the paper lacks have None.
    for row, head in zip(rows, module.HEADS):
        columns = ("paper train", "paper validation", "paper test")
        paper = module.PAPER.get(head, (None, None, None))
        assert tuple(row[column] for column in columns) == paper
    queries = {row["query"] for row in result["intermediate"]}
    assert queries == set(module.QUERIES)
    first = result["intermediate"][0]
    assert first["after each token"].count("→") == len(first["query"].split())
    check_figure(result["figure"], tmp_path)


def test_operand_count(run_example, tmp_path):
    module, result = run_example("operand_count")
    rows = result["rows"]
    assert [(row["op"], row["operands"]) for row in rows] == [
        (symbol, n) for symbol in module.OPERATIONS.values() for n in range(1, 11)
    ]
    for row in rows:
        for unit in module.UNITS:
            assert 0.0 <= row[f"{unit} acc %"] <= 100.0
            assert finite(row[f"{unit} MSE"])
            solved, seeds = row[f"{unit} solved"].split("/")
            assert 0 <= int(solved) <= int(seeds)
    check_figure(result["figure"], tmp_path)


def test_recurrent_arithmetic(run_example, tmp_path):
    module, result = run_example("recurrent_arithmetic")
    rows = result["rows"]
    assert [(row["test"], row["model"]) for row in rows] == [
        (test, model)
        for test in ("interpolation", "extrapolation")
        for model in module.MODELS
    ]
    labels = list(module.OPERATIONS.values())
    for row in rows:
        assert all(isinstance(row[label], float) for label in labels)
        # A barely trained recurrent unit may blow up over 1000 steps, but
        # not on the 10 training steps, and the LSTM / GRU cannot.
        if row["test"] == "interpolation" or row["model"] in ("LSTM", "GRU"):
            assert all(finite(row[label]) for label in labels)
    # Each row has its own model's and split's Table 9 entry, None where the
    # paper has no such model (the NAU).
    tables = {
        "interpolation": module.PAPER_INTERPOLATION,
        "extrapolation": module.PAPER_EXTRAPOLATION,
    }
    for row in rows:
        for op, label in module.OPERATIONS.items():
            expected = tables[row["test"]].get(row["model"], {}).get(op)
            assert row[f"paper {label}"] == expected
    assert all(row["paper a + b"] is None for row in rows if row["model"] == "NAU")
    check_figure(result["figure"], tmp_path)
