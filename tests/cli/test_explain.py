"""`keras-nalu explain` and the formula `train` prints: what the model computes."""

import json

import keras
import numpy as np
import pytest

from keras_nalu import cli
from keras_nalu.cli.train import train_summary
from keras_nalu.experiments import explain_record
from keras_nalu.layers import NAU, NMU, GatedNAUNMU, NACMul, iNALU
from tests.helpers import mixed_subtraction, set_nac

pytest.importorskip("sympy")

# Madsen & Johansen's subtraction on 10 inputs: a = x6 + x7, b = x7 + x8.
ROW = ["--model", "nau", "--operation", "sub", "--learning-rate", "0.01"]
ROW += ["--iterations", "2000", "--eval-every", "250", "--input-size", "10"]


def explain_command(capsys, path, *flags):
    code = cli.main(["explain", str(path), *flags])
    captured = capsys.readouterr()
    return code, captured.out.strip(), captured.err.strip()


def test_mixed_hidden_units_print_the_difference_they_compute(tmp_path, capsys):
    path = tmp_path / "model.keras"
    mixed_subtraction().save(path)

    for flags in ([], ["--tolerance", "0.49"]):
        assert explain_command(capsys, path, *flags) == (0, "y = x6 - x8", "")


def test_train_and_explain_print_the_same_formula(tmp_path, capsys):
    # Solved, its two hidden units mixing the inputs (MSE ~1e-13).
    code = cli.main(["train", *ROW, "--output-dir", tmp_path, "--no-export"])
    out = capsys.readouterr().out
    assert code == 0
    (run_dir,) = tmp_path.iterdir()
    record = json.loads((run_dir / "result.json").read_text())
    assert record["success"]
    assert record["formula"] == "y = x6 - x8"
    assert record["formula_verdict"] == "exact"
    assert "  formula:     y = x6 - x8  (exact)\n" in out
    assert explain_command(capsys, run_dir / "model.keras") == (0, "y = x6 - x8", "")


def test_a_model_that_computes_no_formula_says_so(tmp_path, capsys):
    model = keras.Sequential([keras.Input((4,)), NAU(2), NMU(1)])
    model.layers[0].kernel.assign([[1, 0], [1, 0], [0, 1], [0, -1.0]])
    model.layers[1].kernel.assign([[1.0], [0.5]])
    model.save(tmp_path / "model.keras")

    code, out, err = explain_command(capsys, tmp_path / "model.keras")

    assert (code, err) == (0, "")
    assert out.startswith("no formula: the weights, rounded to their discrete ")
    assert "on 1,000 inputs from U[1, 2] and 1,000 from U[2, 6]" in out
    assert " = " not in out


def test_explain_checks_on_the_ranges_of_the_run_beside_the_model(tmp_path, capsys):
    # |x0·x1·x2|: x0 * x1 * x2 on positive inputs, not on the run's negative ones.
    model = keras.Sequential([keras.Input((3,)), NACMul(1)])
    set_nac(model.layers[0], [[1], [1], [1]])
    model.save(tmp_path / "model.keras")
    assert explain_command(capsys, tmp_path / "model.keras")[1] == "y = x0 * x1 * x2"
    task = {"interpolation_range": [[-2, -1]], "extrapolation_range": "U[-6, -2]"}
    (tmp_path / "result.json").write_text(json.dumps({"task": task}))

    code, out, _ = explain_command(capsys, tmp_path / "model.keras")

    assert code == 0
    assert out.startswith("no formula: ")
    assert out.endswith("on 1,000 inputs from U[-2, -1] and 1,000 from U[-6, -2]")


@pytest.mark.parametrize(
    "layer, what",
    [
        (iNALU(1, name="inalu"), "'inalu' (iNALU): an iNALU mixes a sum and a"),
        (GatedNAUNMU(1, name="gated"), "'gated' (GatedNAUNMU): a gated NAU/NMU mixes"),
    ],
)
def test_a_unit_explain_does_not_read_is_named_with_what_to_do(
    tmp_path, capsys, layer, what
):
    keras.Sequential([keras.Input((3,)), layer]).save(tmp_path / "model.keras")

    code, out, err = explain_command(capsys, tmp_path / "model.keras")

    assert (code, out) == (2, "")
    assert err.startswith("keras-nalu explain: error: cannot read a formula from ")
    assert what in err
    assert "explain reads chains of NAU, NMU, NMRU, NAC, NACMul, NALU" in err
    assert "judge other models by their errors on the task" in err
    assert "arithmetic unit" not in err and "\n" not in err


def test_train_record_of_a_model_that_computes_no_formula(tmp_path):
    from keras_nalu.experiments import ExperimentConfig

    model = mixed_subtraction()
    model.get_layer("output").kernel.assign(np.array([[1.0], [0.6]], "float32"))
    config = ExperimentConfig(model="nau", operation="sub", input_size=10)

    record = explain_record(model, config)

    assert record["formula"] is None
    assert record["formula_verdict"] == "no formula"
    assert record["formula_error"].startswith("no formula: the weights, rounded")
    summary = train_summary({**record, **RECORD}, config, tmp_path / "result.json")
    assert f"  formula:     {record['formula_error']}\n" in summary


RECORD = {
    "name": "run",
    "diverged": False,
    "success": False,
    "solved_at": None,
    "extrapolation_mse": 1.0,
    "threshold": 1e-9,
    "best_step": 0,
    "final_extrapolation_mse": 1.0,
    "iterations": 1,
    "wall_time": 0.0,
    "keras_model": "model.keras",
}


@pytest.mark.parametrize("solved", [True, False])
def test_without_sympy_train_records_what_explain_prints(monkeypatch, solved):
    # The formula and the check against the model need NumPy only; the
    # verdict against the task needs SymPy, and is left out without it.
    from keras_nalu.experiments import ExperimentConfig
    from keras_nalu.explain import comparison, explain

    model = mixed_subtraction()
    if not solved:
        model.get_layer("output").kernel.assign(np.array([[1.0], [0.6]], "float32"))
    config = ExperimentConfig(model="nau", operation="sub", input_size=10)
    task = config.task()
    printed = str(
        explain(
            model, input_ranges=(task.interpolation_range, task.extrapolation_range)
        )
    )

    def no_sympy():
        raise ImportError("This needs SymPy.")

    monkeypatch.setattr(comparison, "import_sympy", no_sympy)
    record = explain_record(model, config)

    if solved:
        assert record == {"formula": printed}
        assert printed == "y = x6 - x8"
    else:
        assert record["formula_error"] == printed
        assert (record["formula"], record["formula_verdict"]) == (None, "no formula")
