"""The Ray backend: chunks as Ray tasks give the rows of the local backend."""

import pandas as pd
import pytest
import ray

from keras_nalu.sweeps.results import read_results
from keras_nalu.sweeps.runner import run_sweep

GRID = {
    "model": ["nau", "nmu"],
    "operation": ["mul"],
    "input_size": [10],
    "iterations": [400],
    "eval_every": [200],
}
TIMING = ["wall_time", "iterations_per_second"]


@pytest.fixture
def local_ray(monkeypatch):
    # Ray turns token authentication on for a runtime it starts unless told
    # otherwise, and writes a token to ~/.ray/auth_token; this process read
    # its authentication mode when it imported Ray, so it stays off here.
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    # One CPU: one worker process (one import of Keras and TensorFlow) takes
    # the chunks in turn.
    ray.init(
        num_cpus=1,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        yield
    finally:
        ray.shutdown()


def _sorted(table):
    return (
        table.drop(columns=TIMING)
        .sort_values(["config_id", "seed"])
        .reset_index(drop=True)
    )


def test_ray_backend_gives_the_local_rows(tmp_path, local_ray):
    on_ray = run_sweep(
        GRID,
        "0-2",
        tmp_path / "ray.csv",
        chunk_size=2,
        ray_address="local",
        progress=False,
    )
    assert ray.is_initialized()  # the test's runtime was used, not replaced
    local = run_sweep(GRID, "0-2", tmp_path / "local.csv", chunk_size=2, progress=False)
    assert on_ray.new_rows == local.new_rows == 6
    pd.testing.assert_frame_equal(
        _sorted(read_results(on_ray.path)), _sorted(read_results(local.path))
    )
    again = run_sweep(
        GRID,
        "0-3",
        tmp_path / "ray.csv",
        chunk_size=2,
        ray_address="local",
        progress=False,
    )
    assert (again.skipped, again.new_rows) == (6, 2)
