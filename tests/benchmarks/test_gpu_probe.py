"""benchmarks/gpu_probe.sh end to end on the CPU: its table, its backups, a rerun."""

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "benchmarks" / "gpu_probe.sh"
# Table 1's NALU and NMU, two seeds each, far from their end: each slice stops
# at a backup.
PLAN = ["--only", "table1", "--models", "nmu,nalu", "--seeds", "0-1"]
PLAN += ["--iterations", "1000000"]


def _probe(out, resume, settings, train_on, check):
    environment = {
        **os.environ,
        "PYTHON": sys.executable,
        "PYTHONPATH": str(ROOT),
        "RESUME": str(resume),
        "PROBE_SETTINGS": settings,
        "PROBE_SLICE": "2",
        "PROBE_TRAIN_ON": str(train_on),
        "PROBE_CHECK": str(check),
    }
    done = subprocess.run(
        ["bash", str(PROBE), str(out), "400", *PLAN],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _steps(out, folder) -> dict:
    """Each backed-up chunk's model and step, from OUT's tar files."""
    from keras_nalu.sweeps.engines import read_backup

    for tar in out.glob("backups*.tar"):
        with tarfile.open(tar) as archive:
            archive.extractall(folder, filter="data")
    records = [read_backup(path)[0] for path in folder.glob("*/*.npz")]
    return {record["model"]: record["step"] for record in records}


@pytest.mark.skipif(
    importlib.util.find_spec("jax") is None, reason="the probe trains on JAX"
)
def test_the_probe_writes_its_table_and_a_rerun_continues_its_backups(tmp_path):
    out, resume = tmp_path / "out", tmp_path / "committed"
    resume.mkdir()  # nothing committed: the probe starts the plan
    # two ways, the bit-for-bit check at 10 steps, no training on
    log = _probe(out, resume, "one-by-one,packed", train_on=0, check=10)
    table = (out / "probe.md").read_text()
    assert "Device: cpu; JAX " in table
    assert "10 steps): packed yes; unrolled ×8 yes." in table  # bit for bit
    probe = json.loads((out / "probe.json").read_text())
    measured = {r["setting"]: r for r in probe["settings"]}
    assert set(measured) == {"one-by-one", "packed"}, table
    assert f"The fastest: {probe['fastest']}; it did not train on." in table
    assert all(f"| {setting} |" in table for setting in measured)
    assert measured["packed"]["runs"] == 4  # both chunks, two seeds each
    assert measured["one-by-one"]["runs"] == 2  # the first chunk only
    assert all(r["seed_steps"] >= 1000 * r["runs"] for r in measured.values())
    first = _steps(out, tmp_path / "first")
    assert set(first) == {"nmu", "nalu"} and min(first.values()) >= 1000
    files = sorted(path.name for path in out.iterdir())
    assert files == ["backups.tar", "log.txt", "probe.json", "probe.md"], files
    assert all(path.stat().st_size <= 16 * 2**20 for path in out.iterdir())
    assert "probe: rc 0" in log

    # no way measured: one by one, the default, trains on from the backups
    _probe(out, resume, "", train_on=2, check=0)
    second = _steps(out, tmp_path / "second")
    (trained,) = json.loads((out / "probe.json").read_text())["settings"]
    assert trained["setting"] == "one-by-one (trained on)"
    assert set(second) == set(first)
    advanced = [second[model] - first[model] for model in first]
    assert sorted(advanced)[0] == 0 < sorted(advanced)[1]  # one chunk went on
    assert trained["seed_steps"] == 2 * sum(advanced)  # two seeds a chunk
