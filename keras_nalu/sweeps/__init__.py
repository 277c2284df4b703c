"""Many seeds and many configurations: vectorized replicas (`engines`),
resumable sweeps (`run_sweep`, `SweepOptions`), their grids and results files.

The reports on a results file are a package of their own, `keras_nalu.reports`.
"""

from keras_nalu.sweeps.chunks import chunk_backup
from keras_nalu.sweeps.grid import load_grid_file, parse_grid, parse_seeds
from keras_nalu.sweeps.options import SweepOptions
from keras_nalu.sweeps.results import read_results
from keras_nalu.sweeps.runner import run_sweep

__all__ = [
    "SweepOptions",
    "chunk_backup",
    "load_grid_file",
    "parse_grid",
    "parse_seeds",
    "read_results",
    "run_sweep",
]
