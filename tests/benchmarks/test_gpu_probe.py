"""The GPU scripts end to end on the CPU: benchmarks/gpu_probe.sh (one table that
grows call by call, its backups, its exit status) and benchmarks/gpu_call.sh; the
probe's table, budget and safe unpacking."""

import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import gpu_probe  # noqa: E402
import probe_backups  # noqa: E402
import probe_table  # noqa: E402

needs_jax = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None, reason="the GPU scripts train on JAX"
)
# Table 1's NALU and NMU, two seeds each, far from their end: each slice stops
# at a backup.
PLAN = ["--only", "table1", "--models", "nmu,nalu", "--seeds", "0-1"]
PLAN += ["--iterations", "1000000"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One threshold cache for the module's calls (not the user's)."""
    return tmp_path_factory.mktemp("cache")


def _script(script, out, seconds, plan, cache, **variables):
    """`bash benchmarks/SCRIPT OUT SECONDS PLAN` with `variables` set."""
    environment = {**os.environ, "KERAS_NALU_CACHE_DIR": str(cache), **variables}
    # the module's processes compile many of the same programs (a setting
    # measured, then trained on; a speed case built three times): JAX keeps
    # each compiled program once, in the module's cache
    environment["JAX_COMPILATION_CACHE_DIR"] = str(cache / "jax")
    environment["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    environment.setdefault("PYTHON", sys.executable)
    return subprocess.run(
        ["bash", str(BENCHMARKS / script), str(out), str(seconds), *plan],
        capture_output=True,
        text=True,
        env=environment,
        timeout=900,
    )


def _probe(out, resume, cache, settings, train_on, check, plan=PLAN, **variables):
    done = _script(
        "gpu_probe.sh",
        out,
        400,
        plan,
        cache,
        RESUME=str(resume),
        PROBE_SETTINGS=settings,
        PROBE_SLICE="2",
        PROBE_STARTUP="120",  # a process on a loaded 2-core machine, and more
        PROBE_TRAIN_ON=str(train_on),
        PROBE_CHECK=str(check),
        **variables,
    )
    return done.returncode, done.stdout + done.stderr


def _steps(out, folder) -> dict:
    """Each backed-up chunk's model and step, from OUT's tar files."""
    from keras_nalu.sweeps.engines import read_backup

    for tar in out.glob("backups*.tar"):
        with tarfile.open(tar) as archive:
            probe_backups.extract(archive, folder)
    records = [read_backup(path)[0] for path in folder.glob("*/*.npz")]
    return {record["model"]: record["step"] for record in records}


@needs_jax
def test_each_call_adds_the_ways_not_yet_measured_to_one_table(tmp_path, cache):
    out, resume = tmp_path / "out", tmp_path / "committed"
    resume.mkdir()  # nothing committed: the probe starts the plan
    # one way, the bit-for-bit check at 10 steps, no training on
    code, log = _probe(out, resume, cache, "one-by-one", train_on=0, check=10)
    assert code == 0, log[-3000:]
    assert "probe: rc 0" in log
    table = (out / "probe.md").read_text()
    assert "Every bit as trained alone on cpu" in table
    assert "10 steps): packed yes; unrolled ×8 yes." in table
    probe = json.loads((out / "probe.json").read_text())
    ((setting, device),) = [(r["setting"], r["device"]) for r in probe["settings"]]
    assert (setting, device) == ("one-by-one", "cpu")
    assert probe["settings"][0]["runs"] == 2  # the first chunk only
    assert probe["settings"][0]["seed_steps"] >= 2 * 1000
    assert "trained_on" not in probe["calls"][0]
    first = _steps(out, tmp_path / "first")
    assert len(first) == 1 and min(first.values()) >= 1000  # that chunk
    measured_first = probe["settings"][0]
    files = sorted(path.name for path in out.iterdir())
    assert files == ["backups.tar", "log.txt", "probe.json", "probe.md"], files
    assert all(path.stat().st_size <= 16 * 2**20 for path in out.iterdir())

    # the same folder again, asked for both ways: only packed is measured (the
    # check is not repeated on this device), then the fastest trains on
    code, log = _probe(out, resume, cache, "one-by-one,packed", train_on=2, check=10)
    assert code == 0, log[-3000:]
    assert "checking packed" not in log
    probe = json.loads((out / "probe.json").read_text())
    assert [r["setting"] for r in probe["settings"]] == ["one-by-one", "packed"]
    assert probe["settings"][0] == measured_first
    assert [call["measured"] for call in probe["calls"]] == [["one-by-one"], ["packed"]]
    assert probe["settings"][1]["runs"] == 4  # both chunks, two seeds each
    trained = probe["calls"][1]["trained_on"]
    assert trained["setting"] == probe["calls"][1]["fastest"]
    assert trained["setting"] == probe_table.fastest(probe, "cpu")
    assert trained["seed_steps"] > 0
    table = (out / "probe.md").read_text()
    assert table == probe_table.table(probe)
    assert "| one-by-one | cpu |" in table and "| packed | cpu |" in table
    assert "measured packed; the fastest there so far" in table
    assert len(probe["checks"]) == 1
    second = _steps(out, tmp_path / "second")
    assert set(second) == {"nmu", "nalu"}
    assert all(second[model] >= first.get(model, 0) for model in second)


@needs_jax
@pytest.mark.parametrize("failure", ["no jax", "a failing way"])
def test_a_probe_that_fails_exits_with_a_failure(tmp_path, cache, failure):
    out, resume = tmp_path / "out", tmp_path / "committed"
    resume.mkdir()
    plan, variables = PLAN, {}
    if failure == "no jax":  # an interpreter without its site-packages
        python = tmp_path / "python"
        python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
        python.chmod(0o755)
        variables["PYTHON"] = str(python)
    else:  # the way's paper.py refuses an option
        plan = [*PLAN, "--no-such-option"]
    code, log = _probe(out, resume, cache, "one-by-one", 0, 0, plan, **variables)
    if failure == "no jax":
        assert code == 2, log
        assert f"gpu_probe.sh: {python} lacks jax" in log
        assert not (out / "probe.json").exists()
    else:
        assert code == 1, log[-3000:]
        assert "gpu_probe: failed: one-by-one" in log
        probe = json.loads((out / "probe.json").read_text())
        assert probe["settings"][0]["error"] == "exit code 2"
        assert "| one-by-one | cpu |" in (out / "probe.md").read_text()
    assert (out / "log.txt").read_text() in log


@needs_jax
def test_a_gpu_call_runs_its_steps_and_says_when_one_failed(tmp_path, cache):
    committed = tmp_path / "committed"
    committed.mkdir()
    tiny = {"SPEED_REPLICAS": "1", "SPEED_STEPS": "100", "SPEED_SEED_STEPS": "100"}
    tiny["SPEED_SECONDS"] = "400"  # a loaded 2-core machine: far more than it takes
    plan = ["--only", "table1", "--models", "nmu", "--seeds", "0-1"]
    plan += ["--iterations", "1000", "--chunk-size", "2"]
    done = _script(
        "gpu_call.sh", tmp_path / "ok", 600, plan, cache, RESUME=str(committed), **tiny
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    assert "speed R=1: rc 0" in log and "paper: rc 0" in log
    files = sorted(path.name for path in (tmp_path / "ok").iterdir())
    assert {"log.txt", "results.csv", "speed-1.json"} <= set(files), files
    assert "backups.tar" not in files  # the plan finished
    rows = (tmp_path / "ok" / "results.csv").read_text().splitlines()
    assert len(rows) == 1 + 2  # the header and both seeds

    # a speed case that fails: the call goes on (no time is left for the
    # paper's rows here) and ends with a failure
    done = _script(
        "gpu_call.sh",
        tmp_path / "failed",
        30,
        [],
        cache,
        RESUME=str(committed),
        **{**tiny, "SPEED_STEPS": "many"},
    )
    log = done.stdout + done.stderr
    assert done.returncode == 1, log[-3000:]
    assert "speed R=1: rc 2" in log and "call: " in log


def test_without_jax_the_gpu_call_stops_in_one_line(tmp_path, cache):
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    done = _script(
        "gpu_call.sh",
        tmp_path / "out",
        60,
        [],
        cache,
        PYTHON=str(python),
        RESUME=str(tmp_path / "nothing"),
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"gpu_call.sh: {python} lacks jax" in done.stdout + done.stderr


def test_the_scripts_take_the_clones_virtual_environment_before_python3(tmp_path):
    """As the other commands of benchmarks/README.md do; PYTHON goes first."""
    clone = tmp_path / "clone"
    (clone / "benchmarks").mkdir(parents=True)
    (clone / "benchmarks" / "interpreter.sh").write_text(
        (BENCHMARKS / "interpreter.sh").read_text()
    )
    show = 'source benchmarks/interpreter.sh; echo "$PYTHON|$PYTHONPATH"'
    environment = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    environment["PYTHONPATH"] = "/wheels"

    def chosen(**variables):
        done = subprocess.run(
            ["bash", "-c", show],
            cwd=clone,
            capture_output=True,
            text=True,
            env={**environment, **variables},
            check=True,
        )
        return done.stdout.strip().split("|")

    assert chosen() == ["python3", f"{clone}:/wheels"]
    (clone / ".venv" / "bin").mkdir(parents=True)
    (clone / ".venv" / "bin" / "python").symlink_to(sys.executable)
    assert chosen()[0] == f"{clone}/.venv/bin/python"
    assert chosen(PYTHON="/opt/python")[0] == "/opt/python"


# --- the budget and the table -------------------------------------------------------


def test_each_way_not_yet_measured_gets_a_slice_of_the_budget():
    # plenty: every way its whole slice, the rest trains on
    assert gpu_probe.slices(520, 7, 25, 30) == 25
    # short: the seven ways share it
    assert gpu_probe.slices(280, 7, 25, 30) == pytest.approx(10)
    # shorter: as many as fit a 5 s slice, the rest in the next call
    assert gpu_probe.slices(100, 7, 25, 30) == pytest.approx(20)  # two fit
    assert gpu_probe.slices(34, 7, 25, 30) == 0
    assert gpu_probe.slices(33, 1, 2, 30) == pytest.approx(2)  # a 2 s slice


def _row(setting, device, rate, pack="1000"):
    options = f"--pack-replicas {pack if setting == 'packed' else 0}"
    return {
        "setting": setting,
        "device": device,
        "options": options,
        "seed_steps": 1000,
        "seed_steps_per_second": rate,
    }


def test_packing_is_on_by_default_only_where_a_table_measured_it_faster():
    check = {"device": "GPU", "recipes": [], "steps": 10, "packed": True}
    faster = {
        "settings": [_row("one-by-one", "GPU", 100), _row("packed", "GPU", 300)],
        "checks": [check],
        "calls": [],
    }
    assert probe_table.measured_packing([faster]) == {"GPU": 1000}
    slower = {**faster, "settings": [*faster["settings"], _row("packed", "GPU", 50)]}
    assert probe_table.measured_packing([slower]) == {}  # its last row counts
    unequal = {**faster, "checks": [{**check, "packed": False}]}
    assert probe_table.measured_packing([unequal]) == {}
    unchecked = {**faster, "checks": []}
    assert probe_table.measured_packing([unchecked]) == {}


COMMITTED_TABLES = sorted((ROOT / "benchmarks" / "results").rglob("probe.json"))


def test_the_default_pack_is_what_the_committed_probe_tables_measured():
    from keras_nalu.sweeps.local import MEASURED_PACK_REPLICAS

    assert COMMITTED_TABLES  # the CPU's table at least
    documents = [probe_table.read_table(path) for path in COMMITTED_TABLES]
    assert MEASURED_PACK_REPLICAS == probe_table.measured_packing(documents)


@pytest.mark.parametrize("path", COMMITTED_TABLES, ids=lambda p: p.parent.name)
def test_a_committed_probe_table_is_what_its_json_gives(path):
    document = probe_table.read_table(path)
    assert (path.parent / "probe.md").read_text(encoding="utf-8") == (
        probe_table.table(document)
    )


# --- unpacking ------------------------------------------------------------------------


def _tar(path, *members):
    """A tar file of `members`: (TarInfo, bytes or None)."""
    with tarfile.open(path, "w") as archive:
        for info, data in members:
            archive.addfile(info, None if data is None else io.BytesIO(data))
    return path


def _file(name, data=b"backup"):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _special(name, kind, target=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


@pytest.fixture(params=["data filter", "without it"])
def extraction(request, monkeypatch):
    """Python's "data" filter, and the path of a Python without it (before
    3.11.4 and 3.10.12, as Debian 12's 3.11.2)."""
    if request.param == "without it":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    return request.param


def test_backups_come_out_of_their_tar_files(tmp_path, extraction):
    tar = _tar(tmp_path / "backups.tar", _file("results.csv.backup/a.npz"))
    (tmp_path / "out").mkdir()
    tar.rename(tmp_path / "out" / "backups.tar")
    assert probe_backups.unpack_backups(tmp_path / "out") == [
        tmp_path / "out" / "backups.tar"
    ]
    assert (tmp_path / "out" / "results.csv.backup" / "a.npz").read_bytes() == (
        b"backup"
    )
    assert not (tmp_path / "out" / "backups.tar").exists()


OUTSIDE = {
    "absolute": lambda outside: _file(str(outside)),
    "dot-dot": lambda _: _file("results.csv.backup/../../outside"),
    "absolute link": lambda outside: _special("b/l", tarfile.SYMTYPE, str(outside)),
    "link out": lambda _: _special("b/l", tarfile.SYMTYPE, "../../outside"),
    "hard link": lambda outside: _special("b/l", tarfile.LNKTYPE, str(outside)),
    "device": lambda _: _special("b/device", tarfile.CHRTYPE),
}
"""Members that reach outside the folder (`tmp/deep/out`) they come out into."""


@pytest.mark.parametrize("member", sorted(OUTSIDE))
def test_a_tar_that_reaches_outside_its_folder_is_refused(tmp_path, extraction, member):
    outside = tmp_path / "deep" / "outside"
    folder = tmp_path / "deep" / "out"
    folder.mkdir(parents=True)
    tar = _tar(tmp_path / "bad.tar", _file("b/a.npz"), OUTSIDE[member](outside))
    with tarfile.open(tar) as archive:
        try:
            probe_backups.extract(archive, folder)
        except tarfile.TarError:
            refused = True
        else:  # Python's filter takes an absolute name as a relative one
            refused = False
            assert (extraction, member) == ("data filter", "absolute")
            assert (folder / str(outside).lstrip("/")).is_file()
    assert not outside.exists()
    if extraction == "without it":  # refused before anything is written
        assert refused and list(folder.iterdir()) == []
