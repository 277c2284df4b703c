"""`keras-nalu sweep --time-limit` and `--chunks-per-device`."""

import pytest

from keras_nalu import cli
from keras_nalu.sweeps.results import read_results
from tests.helpers import interrupted_while_starting

GRID = ["--grid", "model=nau", "--grid", "input_size=10"]
GRID += ["--grid", "iterations=100", "--grid", "eval_every=100"]


def test_the_flags_reach_run_sweep(tmp_path, monkeypatch):
    import keras_nalu.sweeps.runner as runner

    seen = []

    def fake_sweep(grid, seeds, results, **options):
        seen.append((options["time_limit"], options["chunks_per_device"]))
        raise SystemExit(0)

    monkeypatch.setattr(runner, "run_sweep", fake_sweep)
    argv = ["sweep", "--quiet", "--results", str(tmp_path / "r.csv")]
    for extra in ([], ["--time-limit", "90", "--chunks-per-device", "4"]):
        with pytest.raises(SystemExit):
            cli.main([*argv, *extra])
    assert seen == [(None, 1), (90.0, 4)]


def test_a_sweep_stops_at_its_time_limit_and_the_same_command_continues(
    tmp_path, capsys
):
    path = tmp_path / "results.csv"
    argv = ["sweep", "--quiet", *GRID, "--seeds", "0-1", "--chunk-size", "1"]
    argv += ["--results", str(path)]
    assert cli.main([*argv, "--time-limit", "0"]) == 0
    assert "stopped at --time-limit" in capsys.readouterr().err
    assert list(read_results(path)["seed"]) == [0]  # one chunk, then the limit
    assert cli.main(argv) == 0
    assert "stopped at --time-limit" not in capsys.readouterr().err
    assert sorted(read_results(path)["seed"]) == [0, 1]


@pytest.mark.parametrize("extra", [["--no-backup"], ["--ray-address", "local"]])
def test_a_time_limit_needs_backups_here(tmp_path, capsys, extra):
    argv = ["sweep", "--quiet", *GRID, "--results", str(tmp_path / "r.csv")]
    assert cli.main([*argv, "--time-limit", "60", *extra]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("keras-nalu sweep: error: --time-limit")
    assert len(error.splitlines()) == 1
    assert not (tmp_path / "r.csv").exists()


def test_chunks_per_device_must_be_positive(tmp_path, capsys):
    argv = ["sweep", "--quiet", *GRID, "--results", str(tmp_path / "r.csv")]
    assert cli.main([*argv, "--chunks-per-device", "0"]) == 2
    assert "--chunks-per-device must be" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["sweep", "summarize"])
def test_ctrl_c_while_the_command_starts_is_one_line_and_130(tmp_path, command):
    results = tmp_path / "results.csv"
    argv = ["summarize", results]
    if command == "sweep":
        argv = ["sweep", "--quiet", *GRID, "--seeds", "0", "--results", results]
    else:
        results.write_text("model,operation,seed,success,solved_at\n")
    before = sorted(tmp_path.iterdir())
    completed = interrupted_while_starting(*argv, cwd=tmp_path)
    assert completed.returncode == 130, completed.stderr[-3000:]
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("keras-nalu"), completed.stderr
    assert lines[0].endswith("interrupted")
    assert completed.stdout == ""
    assert sorted(tmp_path.iterdir()) == before


def test_a_time_limit_before_any_run_finished_says_so(tmp_path, capsys):
    path = tmp_path / "results.csv"
    argv = ["sweep", "--quiet", "--grid", "model=nau", "--grid", "input_size=10"]
    argv += ["--grid", "iterations=300", "--grid", "eval_every=100"]
    argv += ["--seeds", "0", "--results", str(path), "--time-limit", "0"]
    assert cli.main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    (backup,) = (tmp_path / "results.csv.backup").glob("*.npz")
    assert err == [
        "keras-nalu sweep: stopped at --time-limit with runs left, the chunk in "
        f"training backed up to {backup}; run the same command again to continue",
        f"keras-nalu sweep: no run has finished yet, so there is no {path} and no "
        "table",
    ]
    assert not path.exists()


def test_a_time_limit_between_seed_by_seed_chunks_names_no_backup(tmp_path, capsys):
    path = tmp_path / "results.csv"
    argv = ["sweep", "--quiet", "--grid", "model=inalu", "--grid", "input_size=10"]
    argv += ["--grid", "iterations=200", "--grid", "eval_every=100"]
    argv += ["--seeds", "0-1", "--chunk-size", "1", "--results", str(path)]
    assert cli.main([*argv, "--time-limit", "0"]) == 0
    err = capsys.readouterr().err
    assert (
        "keras-nalu sweep: stopped at --time-limit with runs left, between two "
        "runs, none cut short (no backup was needed); run the same command again "
        "to continue"
    ) in err
    assert "backed up" not in err
    assert list(read_results(path)["seed"]) == [0]
    assert not (tmp_path / "results.csv.backup").exists()
