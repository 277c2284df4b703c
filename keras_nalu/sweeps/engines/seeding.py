"""Every replica's starting weights, drawn without building its model (why this
works, and how it is checked: docs/architecture.md)."""

from __future__ import annotations

import dataclasses
import random

import keras
import numpy as np

from keras_nalu.keras_utils import iter_layers

DRAWS = 64
"""How many of a seed's integers are searched for an initializer's seed."""

MAX_OFFSET = 16
"""An initializer may be seeded with a drawn integer plus a small offset
(`keras_nalu.initializers.clone_with_new_seed`); the largest searched."""


def default_seeds(seed: int, count: int = DRAWS) -> list[int]:
    """The first `count` integers Keras draws for unseeded initializers after
    `keras.utils.set_random_seed(seed)` (`random.randint(1, 10**9)`, Keras'
    private default-seed helper), from a generator of their own.

    Example:

    >>> import random, keras
    >>> keras.utils.set_random_seed(7)
    >>> initializer = keras.initializers.GlorotUniform()
    >>> initializer.seed == default_seeds(7)[0]
    True
    """
    generator = random.Random(seed)
    return [generator.randint(1, int(1e9)) for _ in range(count)]


@dataclasses.dataclass(frozen=True)
class Origin:
    """How one variable's starting value is drawn: by `initializer` (None
    for a seed generator's state) seeded with integer `draw` of
    `default_seeds` (None: the same for every seed, e.g. zeros) + `offset`."""

    initializer: keras.initializers.Initializer | None
    draw: int | None
    offset: int
    shape: tuple
    dtype: str

    def value(self, seeds: list[int]):
        """The value for a replica whose `default_seeds` are `seeds`."""
        seed = seeds[self.draw] + self.offset
        if self.initializer is None:
            return keras.random.SeedGenerator(seed=seed).state.value
        config = {**self.initializer.get_config(), "seed": seed}
        initializer = type(self.initializer).from_config(config)
        return initializer(shape=self.shape, dtype=self.dtype)


@dataclasses.dataclass
class SeedPlan:
    """One `Origin` per trainable (`weights`) and state variable (`state`),
    and the template's values (`fixed_*`) for those that draw nothing."""

    weights: list[Origin]
    state: list[Origin]
    fixed_weights: list[np.ndarray]
    fixed_state: list[np.ndarray]

    @classmethod
    def find(cls, model, seed: int, variables, state_variables) -> SeedPlan | None:
        """The plan of a model built after `set_random_seed(seed)`, or None
        where some variable's seed is not found (`DRAWS`, `MAX_OFFSET`)."""
        draws = default_seeds(seed)
        owners = _owners(model)
        origins = [
            _origin(v, owners.get(id(v)), draws) for v in [*variables, *state_variables]
        ]
        if None in origins:
            return None
        count = len(variables)
        return cls(
            weights=origins[:count],
            state=origins[count:],
            fixed_weights=[keras.ops.convert_to_numpy(v) for v in variables],
            fixed_state=[keras.ops.convert_to_numpy(v) for v in state_variables],
        )

    def draw(self, seeds) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each variable's starting values stacked over `seeds`: `[R, ...]`."""
        used = [o.draw for o in [*self.weights, *self.state] if o.draw is not None]
        integers = [default_seeds(seed, max(used, default=-1) + 1) for seed in seeds]

        def stacked(origins, fixed):
            # one array at a time: stacking R tensors would compile an R-way
            # concatenation for every new R
            return [
                np.stack([value] * len(integers))
                if origin.draw is None
                else np.stack(
                    [keras.ops.convert_to_numpy(origin.value(d)) for d in integers]
                )
                for origin, value in zip(origins, fixed)
            ]

        return (
            stacked(self.weights, self.fixed_weights),
            stacked(self.state, self.fixed_state),
        )


def _owners(model) -> dict[int, keras.layers.Layer]:
    """Each variable's layer (the innermost one whose weights hold it)."""
    owners = {}
    for layer in iter_layers(model):
        inner = {
            id(v)
            for sublayer in iter_layers(layer)
            if sublayer is not layer
            for v in sublayer.weights
        }
        for variable in layer.weights:
            if id(variable) not in inner:
                owners[id(variable)] = layer
    return owners


def _initializer_of(layer, variable):
    """The initializer `layer` drew `variable` with, or None if unknown."""
    if layer is None:
        return None
    found = None
    if hasattr(layer, "initializer_of"):  # the package's units remember theirs
        found = layer.initializer_of(variable)
    if found is None:  # Keras' convention: kernel_initializer, bias_initializer
        found = getattr(layer, f"{variable.name}_initializer", None)
    return found if isinstance(found, keras.initializers.Initializer) else None


def _position(integer: int, draws: list[int]) -> tuple[int, int] | None:
    for offset in range(MAX_OFFSET + 1):
        if integer - offset in draws:
            return draws.index(integer - offset), offset
    return None


def _origin(variable, layer, draws) -> Origin | None:
    shape, dtype = tuple(variable.shape), variable.dtype
    if variable.name == "seed_generator_state" and not variable.trainable:
        value = keras.ops.convert_to_numpy(variable)
        found = _position(int(value[0]), draws) if value[1] == 0 else None
        return None if found is None else Origin(None, *found, shape, dtype)
    initializer = _initializer_of(layer, variable)
    if initializer is None:
        return None
    if not hasattr(initializer, "seed"):  # draws nothing: zeros, a constant
        return Origin(initializer, None, 0, shape, dtype)
    if not isinstance(initializer.seed, int):  # a SeedGenerator: not replayed
        return None
    found = _position(initializer.seed, draws)
    return None if found is None else Origin(initializer, *found, shape, dtype)
