"""The reference code's recorded runs and the differences measured from them.

`benchmarks/reference/trajectories.py` wrote the runs
(`tests/sweeps/test_reference.py` replays them); `differences.py` measured
each difference from the reference implementation (docs/protocol.md).
"""

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "reference"))

import difference_tables  # noqa: E402
import trajectories  # noqa: E402

RECORDS = ROOT / "benchmarks" / "results" / "reference"


def test_every_case_is_recorded_with_its_provenance():
    cases = json.loads((RECORDS / "cases.json").read_text())
    assert sorted(cases) == sorted(case.name for case in trajectories.CASES)
    for name, case in cases.items():
        assert len(case["reference_commit"]) == 40 and case["torch"], name
        assert case["dtype"] == "float64" and case["steps"] >= 1000, name
        with np.load(RECORDS / f"{name}.npz") as arrays:
            assert arrays["loss"].shape == (case["steps"],)
            assert arrays["batch_hash"].shape == (case["steps"],)
            assert len(arrays["snapshot_step"]) == -(-case["steps"] // case["every"])
    # λ ramps inside the recorded steps: 0 before, the full 10 after.
    with np.load(RECORDS / "h2-s0.npz") as arrays:
        assert arrays["lam"][0] == 0.0 and arrays["lam"][-1] == 10.0


def test_the_committed_records_stay_small():
    files = [*RECORDS.glob("*.npz"), *RECORDS.glob("*.json"), *RECORDS.glob("*.md")]
    assert sum(path.stat().st_size for path in files) <= 3 * 2**20


def test_the_tables_are_what_differences_py_writes_today():
    entries = json.loads((RECORDS / "differences.json").read_text())
    written = (RECORDS / "differences.md").read_text(encoding="utf-8")
    assert written == difference_tables.tables(entries)
    for part in difference_tables.RENDERERS:
        assert part in entries, part
