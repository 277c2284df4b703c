"""The grid of a sweep (syntax: docs/sweeps.md), its configurations, its seeds."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from keras_nalu._validation import check_seeds, parse_ranges
from keras_nalu.errors import ArgumentError
from keras_nalu.experiments import ExperimentConfig

_DEFAULTS = {
    field.name: (field.default, str(field.type))
    for field in dataclasses.fields(ExperimentConfig)
}


# A comma outside brackets: 'U[1,2],U[2,6]' is two values.
_VALUE_COMMA = re.compile(r",(?![^\[(]*[\])])")


def _convert(key: str, value):
    """A grid value in the type of the `ExperimentConfig` field `key`."""
    if not isinstance(value, str):
        return value
    default, annotation = _DEFAULTS[key]
    kind = type(default)
    if default is None:  # an optional field: its annotation names the type
        kind = int if "int" in annotation else float
    text = value.strip()
    if default is None and text.lower() in ("none", "null", ""):
        return None
    try:
        if kind is bool:
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
        return kind(text)
    except ValueError:
        raise ValueError(
            f"sweep grid: {key} expects {kind.__name__} values. "
            f"Received: {key}={value!r}"
        ) from None


def parse_grid(items: Iterable[str]) -> dict[tuple[str, ...], list[tuple]]:
    """Reads `--grid` items, `KEY=V1,V2` and `KEY1:KEY2=A1:B1,A2:B2`, into a
    grid: `{(key, ...): [(value, ...), ...]}` of typed values.

    Example:

    >>> parse_grid(["model=nmu,nau", "hidden_size=2"])
    {('model',): [('nmu',), ('nau',)], ('hidden_size',): [(2,)]}
    """
    grid, given = {}, {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"sweep grid: expected KEY=V1,V2,... Received: {item!r}")
        keys_text, values_text = item.split("=", 1)
        keys = tuple(key.strip() for key in keys_text.split(":"))
        for key in keys:
            if key in given:
                raise ValueError(
                    f"sweep grid: {key} is given twice ({given[key]!r} and "
                    f"{item!r}); give all its values in one item, e.g. "
                    f"{key}=V1,V2"
                )
            given[key] = item
        rows = []
        for value in map(str.strip, _VALUE_COMMA.split(values_text)):
            parts = value.split(":")
            if len(keys) > 1 and len(parts) != len(keys):
                raise ValueError(
                    f"sweep grid: {keys_text} takes {len(keys)} values joined by "
                    f"':'. Received: {value!r}"
                )
            rows.append(tuple(parts) if len(keys) > 1 else (value,))
        grid[keys] = rows
    return normalize_grid(grid)


def normalize_grid(grid: Mapping) -> dict[tuple[str, ...], list[tuple]]:
    """Checks and types a grid given as `{key or "k1:k2" or (k1, k2): values}`.

    Example:

    >>> normalize_grid({"model": ["nmu"], "sparsity_start:sparsity_end":
    ...                 [[10, 20]]})
    {('model',): [('nmu',)], ('sparsity_start', 'sparsity_end'): [(10, 20)]}
    """
    normalized = {}
    for keys, values in grid.items():
        keys = tuple(keys.split(":")) if isinstance(keys, str) else tuple(keys)
        for key in keys:
            if key == "seed":
                raise ValueError(
                    "sweep grid: give seeds with --seeds / seeds=, not in the grid. "
                    "Received: seed"
                )
            if key not in _DEFAULTS:
                raise ValueError(
                    f"sweep grid: unknown field {key!r}. Expected ExperimentConfig "
                    f"fields: {[name for name in _DEFAULTS if name != 'seed']}"
                )
        if isinstance(values, str | int | float | bool) or values is None:
            values = [values]
        rows = []
        for value in values:
            # A 1-tuple is an already normalized entry of a single field.
            single = isinstance(value, tuple) and len(value) == 1
            parts = list(value) if len(keys) > 1 or single else [value]
            if len(parts) != len(keys):
                raise ValueError(
                    f"sweep grid: {':'.join(keys)} takes {len(keys)} values per "
                    f"entry. Received: {value!r}"
                )
            rows.append(tuple(_convert(k, v) for k, v in zip(keys, parts)))
        if not rows:
            raise ValueError(f"sweep grid: {':'.join(keys)} has no values")
        normalized[keys] = rows
    seen = [key for keys in normalized for key in keys]
    repeated = sorted({key for key in seen if seen.count(key) > 1})
    if repeated:
        raise ValueError(f"sweep grid: fields given twice: {repeated}")
    return normalized


def load_grid_file(path: str | os.PathLike) -> dict[tuple[str, ...], list[tuple]]:
    """A grid from a JSON file: `{"model": ["nmu", "nau"], ...}`."""
    path = Path(path)
    try:
        grid = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read the grid file {path}: {error}") from None
    if not isinstance(grid, dict):
        raise ValueError(f"grid file {path}: expected a JSON object of fields")
    return normalize_grid(grid)


MAX_SEEDS = 1_000_000
"""The most seeds one seed list may name (not a typo's 0-1000000000)."""


def parse_seeds(spec: str | Iterable[int], owner: str = "sweep") -> list[int]:
    """Seeds from `"0-99"`, `"0,3,7-9"` or a list of integers, in the order
    given; `owner` (`"sweep"`, `"mnist"`) is who asks, in the messages.

    Raises:
        ValueError: a malformed list, a seed below 0 or twice, an empty
            range such as 3-1, or more than `MAX_SEEDS` seeds.

    Example:

    >>> parse_seeds("0-2,10")
    [0, 1, 2, 10]
    """
    if isinstance(spec, str):
        spec = parse_ranges(owner, "seeds", spec, limit=MAX_SEEDS)
    return check_seeds(owner, spec)


def grid_configs(grid: Mapping) -> list[ExperimentConfig]:
    """Every configuration of the grid (seed 0), validated now.

    Example:

    >>> [c.model for c in grid_configs({"model": ["nmu", "nau"]})]
    ['nmu', 'nau']
    """
    grid = normalize_grid(grid)
    configs = []
    for combination in itertools.product(*grid.values()):
        fields = {}
        for keys, values in zip(grid, combination):
            fields.update(zip(keys, values))
        try:
            configs.append(ExperimentConfig(**fields))
        except (TypeError, ValueError) as error:
            told = error.in_words({}) if isinstance(error, ArgumentError) else error
            raise ValueError(f"sweep grid: invalid configuration: {told}") from None
    return configs


__all__ = [
    "MAX_SEEDS",
    "grid_configs",
    "load_grid_file",
    "normalize_grid",
    "parse_grid",
    "parse_seeds",
]
