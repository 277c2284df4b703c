"""Many seeds and many configurations: vectorized replicas, resumable sweeps.

- `engines`: `train_replicas(config, seeds)` trains R seeds of one
  configuration in one vectorized training loop, on the Keras backend's
  engine (`replica_run` and `ReplicaRun` for the details);
- `runner`: `run_sweep(grid, seeds, results_path, options)` trains a grid
  of configurations × seeds chunk by chunk into a resumable results CSV,
  here (`local`) or on Ray (`cluster`), backing up the chunk in training
  (`chunk_backup`, in `chunks`) so that a killed sweep continues it; how,
  one `SweepOptions` (`options`) says;
- `grid`: the grid syntax and seed lists (`parse_grid`, `parse_seeds`);
  `results`: the results file (`read_results`, its columns, `config_id`);
- `planning`: chunk sizes and sweeps that fit a time limit.

The reports on a results file (Madsen & Johansen's (2020) Table 2 and
Fig. 3) are a package of their own, `keras_nalu.reports`.
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
