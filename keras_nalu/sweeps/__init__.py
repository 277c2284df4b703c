"""Many seeds and many configurations: vectorized replicas, resumable sweeps.

- `replicas`: `train_replicas(config, seeds)` trains R seeds of one
  configuration in one vectorized training loop (`ReplicaRun` for the details);
- `runner`: `run_sweep(grid, seeds, results_path)` trains a grid of
  configurations × seeds chunk by chunk into a resumable results CSV, here or on
  Ray (`keras-nalu sweep`), backing up the chunk in training (`chunk_backup`) so
  that a killed sweep continues it, and `read_backup` shows how far it got;
- `grid`: the grid syntax and seed lists (`parse_grid`, `parse_seeds`);
  `results`: the results file (`read_results`, its columns, `config_id`);
- `summary`, `plots`: Madsen & Johansen's (2020) Table 2 and Fig. 3 from a results file.
"""

from keras_nalu.sweeps.grid import load_grid_file, parse_grid, parse_seeds
from keras_nalu.sweeps.replicas import ReplicaRun, read_backup, train_replicas
from keras_nalu.sweeps.results import read_results
from keras_nalu.sweeps.runner import chunk_backup, run_sweep

__all__ = [
    "ReplicaRun",
    "chunk_backup",
    "load_grid_file",
    "parse_grid",
    "parse_seeds",
    "read_backup",
    "read_results",
    "run_sweep",
    "train_replicas",
]
