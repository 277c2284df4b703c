"""The file rules of `keras_nalu._files`: the atomic write, the backup folder."""

import os

import pytest

from keras_nalu._files import atomic_write, backup_folder, temporary_path


def test_the_file_is_replaced_whole_and_no_temporary_is_left(tmp_path):
    path = tmp_path / "new" / "table.csv"  # the folder is created
    with atomic_write(path, encoding="utf-8") as handle:
        handle.write("a\n")
        assert not path.exists()  # nothing there until the block succeeds
        assert handle.name == str(temporary_path(path))
    assert path.read_text(encoding="utf-8") == "a\n"
    assert os.listdir(path.parent) == ["table.csv"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "table.csv"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_write(path, "wb") as handle:
            handle.write(b"half of the new")
            raise RuntimeError("disk full")
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["table.csv"]


def test_a_named_temporary_is_used_and_a_bad_mode_refused(tmp_path):
    path, partial = tmp_path / "chunk.npz", tmp_path / ".chunk.npz.partial"
    with atomic_write(path, "wb", temporary=partial) as handle:
        assert handle.name == str(partial)
        handle.write(b"\x00")
    assert path.read_bytes() == b"\x00" and not partial.exists()
    with pytest.raises(ValueError, match="mode 'w' or 'wb'"):
        with atomic_write(path, "a"):
            pass


def test_a_sweeps_backups_lie_in_one_folder_beside_its_results_file(tmp_path):
    from keras_nalu.experiments import ExperimentConfig
    from keras_nalu.sweeps.chunks import Chunk, backup_files, chunk_backup

    results = tmp_path / "sweep.csv"
    assert backup_folder(results) == tmp_path / "sweep.csv.backup"
    backup = chunk_backup(results, Chunk(ExperimentConfig(), (0, 1)))
    assert backup.parent == backup_folder(results)
    backup.parent.mkdir()
    backup.write_bytes(b"")
    assert backup_files(results) == [backup]


def test_the_backup_folders_name_is_spelled_out_in_one_place():
    from tests.package_source import module_files

    spelled = [
        module
        for module, path in module_files().items()
        if '".backup"' in path.read_text(encoding="utf-8")
    ]
    assert spelled == ["keras_nalu._files"]


def test_a_keras_model_with_weights_not_finite_is_saved_with_a_warning(tmp_path):
    import keras
    import numpy as np

    from keras_nalu._files import save_keras_model
    from keras_nalu.layers import NAU

    layer = NAU(1, name="nau")
    model = keras.Sequential([keras.Input((2,)), layer], name="run")
    path = tmp_path / "model.keras"
    layer.kernel.assign([[np.nan], [-np.inf]])
    with pytest.warns(
        UserWarning,
        match=r"model\.keras holds 2 weights that are not finite, saved as they "
        r"are: run/nau/kernel\[0,0\] = nan, run/nau/kernel\[1,0\] = -inf$",
    ):
        save_keras_model(model, path)
    assert path.is_file()
