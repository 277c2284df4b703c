"""How far the chunks of a sweep in training have got, by configuration."""

from __future__ import annotations

#: The fields that make one configuration of a backup's records: its runs
#: are judged together (one verdict, one threshold).
PROGRESS_KEYS = ("model", "operation", "iterations", "threshold")


def progress_by_configuration(records: list[dict]) -> list[list[dict]]:
    """The records of one backup, grouped by configuration, in order.

    A chunk of the JAX engine may hold several configurations: each gets
    its own group, never one verdict over runs of different tasks.

    Args:
        records: the per-seed records of a backup
            (`keras_nalu.sweeps.engines.read_backup`).

    Returns:
        One list of records per configuration (`PROGRESS_KEYS`), in the order
        of their first record.

    Example:

    >>> records = [
    ...     {"model": "nau", "operation": "add", "iterations": 10, "threshold": 1,
    ...      "seed": seed}
    ...     for seed in (0, 1)
    ... ] + [{"model": "nmu", "operation": "mul", "iterations": 10,
    ...       "threshold": 2, "seed": 0}]
    >>> [len(part) for part in progress_by_configuration(records)]
    [2, 1]
    """
    parts: dict[tuple, list[dict]] = {}
    for record in records:
        key = tuple(record[field] for field in PROGRESS_KEYS)
        parts.setdefault(key, []).append(record)
    return list(parts.values())
