"""`train_and_save`: the run of `keras-nalu train`, for a script."""

import json

import pytest

from keras_nalu import export
from keras_nalu.experiments import ExperimentConfig, SavedRun, train_and_save


@pytest.fixture(scope="module")
def config():
    return ExperimentConfig(
        model="nau", operation="add", input_size=10, iterations=200, eval_every=100
    )


def test_a_run_is_explained_and_saved(tmp_path, config):
    saved = train_and_save(
        config, tmp_path / "run", name="sum", export_format=None, verbose=False
    )
    assert isinstance(saved, SavedRun) and saved.export_error is None
    on_disk = json.loads(saved.record_path.read_text())
    assert saved.record_path == tmp_path / "run" / "result.json"
    assert on_disk["name"] == saved.record["name"] == "sum"
    assert on_disk["keras_model"] == str(tmp_path / "run" / "model.keras")
    assert (tmp_path / "run" / "model.keras").is_file()
    # the formula fields of `keras-nalu explain`, and no export fields
    assert "formula" in on_disk or "formula_error" in on_disk
    assert "saved_model" not in on_disk and not (tmp_path / "saved_models").exists()


def test_a_failed_export_is_returned_and_the_run_kept(tmp_path, config, monkeypatch):
    refusal = ValueError("the export folder is full")

    def refuse(model, record, export_dir, name, export_format, overwrite):
        assert (export_dir, name, export_format) == (tmp_path / "out", "sum", "onnx")
        raise refusal

    monkeypatch.setattr(export, "export_run", refuse)
    saved = train_and_save(
        config,
        tmp_path / "run",
        name="sum",
        export_dir=tmp_path / "out",
        export_format="onnx",
        verbose=False,
    )
    assert saved.export_error is refusal
    assert json.loads(saved.record_path.read_text())["name"] == "sum"
