"""Replica engines: many seeds of one configuration trained as one vectorized model.

Modules and their parts: docs/architecture.md ("The replica engines"). Import
the public names from here (those that need JAX from their modules).
"""

from keras_nalu.sweeps.engines.backup import (
    BACKUP_FORMAT,
    READABLE_FORMATS,
    backup_runs,
    read_backup,
)
from keras_nalu.sweeps.engines.device import device_name
from keras_nalu.sweeps.engines.loop import (
    BACKUP_EVERY,
    TimeLimitReached,
    TrainingLimits,
    stop_at_interrupt,
    stop_requested,
)
from keras_nalu.sweeps.engines.run import ReplicaRun
from keras_nalu.sweeps.engines.setup import (
    RECIPE_FIELDS,
    NotVectorizableError,
    recipe,
    vectorizable,
)
from keras_nalu.sweeps.engines.state import EngineState, RunState
from keras_nalu.sweeps.engines.train import (
    ENGINES,
    batched_run,
    engine_class,
    engine_name,
    replica_run,
    train_batched,
    train_replicas,
    train_runs,
)
from keras_nalu.sweeps.engines.verdicts import Verdicts

__all__ = [
    "BACKUP_EVERY",
    "BACKUP_FORMAT",
    "ENGINES",
    "EngineState",
    "READABLE_FORMATS",
    "RECIPE_FIELDS",
    "NotVectorizableError",
    "ReplicaRun",
    "RunState",
    "TimeLimitReached",
    "TrainingLimits",
    "Verdicts",
    "backup_runs",
    "batched_run",
    "device_name",
    "engine_class",
    "engine_name",
    "read_backup",
    "recipe",
    "replica_run",
    "stop_at_interrupt",
    "stop_requested",
    "train_batched",
    "train_replicas",
    "train_runs",
    "vectorizable",
]
