"""Every replica's starting weights, drawn without building its model.

A replica starts from the weights `run_experiment` would start from: those
of the model `build_experiment_model` builds after
`keras.utils.set_random_seed(seed)`. Building a Keras model per seed takes
about 10 ms on a CPU, minutes at 10,000 replicas. A model's starting weights
depend on its seed only through the integers that Keras draws from Python's
`random` for each initializer (and `keras.random.SeedGenerator`) left
unseeded, `random.randint(1, 10**9)` after `random.seed(seed)`. So one
built model, the template, says for each variable which initializer draws it
and which of those integers seeds it (`SeedPlan.find`); `SeedPlan.draw` then
calls the same initializers with each replica's integers.

The plan is an observation of Keras, not a promise of it:
`ReplicaSetup.build` checks it against the template and against one more
replica built in full, and builds every replica's model where it fails.
"""

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
    """The first `count` integers Keras draws for unseeded initializers.

    An initializer made without a seed takes `random.randint(1, 10**9)`
    from Python's global generator (Keras' private default-seed helper, not
    a public API); these are its draws, call after call, after
    `keras.utils.set_random_seed(seed)`, which seeds that generator with
    `seed`. They are drawn here from a generator of their own, so Python's
    global one is left as it is.

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
    """How one variable's starting value is drawn.

    Attributes:
        initializer: the template's initializer, or None for a seed
            generator's state.
        draw: the position of the variable's seed among a seed's
            `default_seeds`, or None where the value is the same for every
            seed (an initializer that draws nothing, e.g. zeros).
        offset: added to that integer.
        shape, dtype: the variable's.
    """

    initializer: keras.initializers.Initializer | None
    draw: int | None
    offset: int
    shape: tuple
    dtype: str

    def value(self, seeds: list[int]):
        """The starting value of a replica whose Keras integers are `seeds`
        (`default_seeds` of its seed); for an origin with a `draw`."""
        seed = seeds[self.draw] + self.offset
        if self.initializer is None:
            return keras.random.SeedGenerator(seed=seed).state.value
        config = {**self.initializer.get_config(), "seed": seed}
        initializer = type(self.initializer).from_config(config)
        return initializer(shape=self.shape, dtype=self.dtype)


@dataclasses.dataclass
class SeedPlan:
    """Where each of a template's variables gets its starting value.

    Attributes:
        weights: one `Origin` per trainable variable, in order.
        state: one `Origin` per state variable, in order.
        fixed_weights, fixed_state: the template's values, used for
            variables that draw nothing.
    """

    weights: list[Origin]
    state: list[Origin]
    fixed_weights: list[np.ndarray]
    fixed_state: list[np.ndarray]

    @classmethod
    def find(cls, model, seed: int, variables, state_variables) -> SeedPlan | None:
        """The plan of a model built after `set_random_seed(seed)`, or None.

        None where a variable's initializer cannot be found, is seeded by
        a `SeedGenerator`, or draws from an integer that is not among the
        seed's first `DRAWS` (plus up to `MAX_OFFSET`).
        """
        draws = default_seeds(seed)
        owners = _owners(model)
        origins = []
        for variable in [*variables, *state_variables]:
            origin = _origin(variable, owners.get(id(variable)), draws)
            if origin is None:
                return None
            origins.append(origin)
        count = len(variables)
        return cls(
            weights=origins[:count],
            state=origins[count:],
            fixed_weights=[keras.ops.convert_to_numpy(v) for v in variables],
            fixed_state=[keras.ops.convert_to_numpy(v) for v in state_variables],
        )

    def draw(self, seeds) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each variable's starting values stacked over `seeds`: `[R, ...]`."""
        integers = [default_seeds(seed, self._count()) for seed in seeds]

        def stacked(origins, fixed):
            result = []
            for origin, value in zip(origins, fixed):
                if origin.draw is None:
                    result.append(np.stack([value] * len(integers)))
                    continue
                # one array at a time: stacking R tensors would compile an
                # R-way concatenation for every new R
                values = [
                    keras.ops.convert_to_numpy(origin.value(drawn))
                    for drawn in integers
                ]
                result.append(np.stack(values))
            return result

        return (
            stacked(self.weights, self.fixed_weights),
            stacked(self.state, self.fixed_state),
        )

    def _count(self) -> int:
        used = [o.draw for o in [*self.weights, *self.state] if o.draw is not None]
        return max(used, default=-1) + 1


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
