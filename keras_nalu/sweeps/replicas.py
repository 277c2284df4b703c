"""Many seeds of one configuration in one training loop: vectorized replicas.

The public home of `ReplicaRun`, `train_replicas` and `read_backup`; they
live in `keras_nalu.sweeps.engines` (one backend-neutral run and one
compiled step per Keras backend), and this module keeps the import path that
scripts and notebooks use.

Example:

>>> from keras_nalu.experiments import ExperimentConfig
>>> from keras_nalu.sweeps.replicas import train_replicas
>>> records = train_replicas(ExperimentConfig(model="nau", input_size=10,
...     iterations=100, eval_every=100), seeds=[0, 1], progress=False)
>>> [record["replicas"] for record in records]
[2, 2]
"""

from keras_nalu.sweeps.engines import (
    ReplicaRun,
    execution_size,
    read_backup,
    total_steps,
    train_batched,
    train_replicas,
    vectorizable,
)

__all__ = [
    "ReplicaRun",
    "execution_size",
    "read_backup",
    "total_steps",
    "train_batched",
    "train_replicas",
    "vectorizable",
]
