"""benchmarks/fig3.py: reused points, a row per engine."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import fig3  # noqa: E402


def _rows(engine, seeds, config="c0123456789ab"):
    rows = pd.DataFrame(
        {
            "config_id": config,
            "model": "nmu",
            "operation": "mul",
            "seed": list(seeds),
            "success": True,
            "solved_at": 1e6,
            "sparsity_error": 1e-6,
            "interpolation_mse": 1e-9,
            "extrapolation_mse": 1e-8,
            "iterations": 5_000_000,
        }
    )
    return rows if engine is None else rows.assign(engine=engine)


def test_a_reused_point_keeps_every_seed_of_each_engine_that_holds_them(tmp_path):
    """Seeds 0-19 asked: JAX holds 0-37 (all reused), TensorFlow 0-4 (not)."""
    jax = tmp_path / "jax.csv"
    _rows("jax", range(38)).to_csv(jax, index=False)
    tensorflow = tmp_path / "tf.csv"
    _rows(None, range(5)).to_csv(tensorflow, index=False)  # before `engine`
    reused = fig3.reusable_rows({"c0123456789ab"}, list(range(20)), [jax, tensorflow])
    assert set(reused["engine"]) == {"jax"} and len(reused) == 38
    both = fig3.reusable_rows({"c0123456789ab"}, list(range(5)), [jax, tensorflow])
    assert both.groupby("engine").size().to_dict() == {"jax": 38, "tensorflow": 5}
