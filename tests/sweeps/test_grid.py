"""The grid of a sweep: its syntax, its configurations, its seeds."""

import pytest

from keras_nalu.sweeps.grid import grid_configs, parse_grid, parse_seeds


def test_grid_syntax():
    grid = parse_grid(
        [
            "model=nmu,nau",
            "sparsity=none,10",
            "stop_on_success=true",
            "interpolation_range:extrapolation_range=U[1,2]:U[2,6],[-2,2]:U[-6,-2] ∪ "
            "U[2,6]",
        ]
    )
    assert grid[("sparsity",)] == [(None,), (10.0,)]
    assert grid[("stop_on_success",)] == [(True,)]
    assert grid[("interpolation_range", "extrapolation_range")] == [
        ("U[1,2]", "U[2,6]"),
        ("[-2,2]", "U[-6,-2] ∪ U[2,6]"),
    ]
    configs = grid_configs(grid)
    assert len(configs) == 8
    assert {(c.model, c.sparsity, c.extrapolation_range) for c in configs} >= {
        ("nau", None, "U[-6,-2] ∪ U[2,6]")
    }
    assert parse_seeds("0-2,7") == [0, 1, 2, 7]


@pytest.mark.parametrize(
    "items, message",
    [
        (["colour=red"], "unknown field 'colour'"),
        (["seed=1,2"], "--seeds"),
        (["hidden_size=two"], "hidden_size expects int"),
        (["sparsity_start:sparsity_end=1:2,3"], "takes 2 values"),
        (["model=nmu", "model=nau"], "model is given twice"),
        (["input_size=10", "model=nau", "input_size=20"], "input_size is given tw"),
        (["model=nau", "model:operation=nmu:mul"], "model is given twice"),
        (["model"], "KEY=V1,V2"),
    ],
)
def test_bad_grids_are_refused(items, message):
    with pytest.raises(ValueError, match=message):
        parse_grid(items)


def test_bad_configurations_and_seeds_are_refused():
    with pytest.raises(ValueError, match="invalid configuration.*input_size"):
        grid_configs({"input_size": [0]})
    for spec in ("3-1", "a", "1,1"):
        with pytest.raises(ValueError):
            parse_seeds(spec)
