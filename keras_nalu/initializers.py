"""Initializers that give each unit the moments its paper derives."""

import math

import keras
from scipy import optimize

from keras_nalu._api import export
from keras_nalu._validation import check_positive_int


def _fans(shape) -> tuple[int, int]:
    if len(shape) < 2:
        raise ValueError(
            f"Arithmetic-unit initializers need a kernel of rank >= 2 "
            f"(inputs, units). Received: shape={tuple(shape)}"
        )
    return int(shape[-2]), int(shape[-1])


def nac_weight_variance(r: float) -> float:
    """Var[tanh(Ŵ)·σ(M̂)] for Ŵ, M̂ ~ U[-r, r] (Madsen & Johansen 2020, App. B.2, eq.
    38)."""
    return (1.0 - math.tanh(r) / r) * (r - math.tanh(r / 2.0)) / (2.0 * r)


def nac_uniform_limit(fan_in: int, fan_out: int, min_fan_sum: int = 5) -> float:
    """The r at which Var[W] of the NAC construction equals 2 / max(I + O, 5).

    Var[W], as a function of r, rises from 0 towards 1/2, so the Glorot target
    2/(I+O) has a root only when I + O > 4; like the reference code we floor
    the fan sum at `min_fan_sum` (5), which keeps the target at most 0.4.
    """
    target = 2.0 / max(fan_in + fan_out, min_fan_sum)
    return optimize.brentq(lambda r: nac_weight_variance(r) - target, 1e-6, 1e4)


@export
class NACUniform(keras.initializers.RandomUniform):
    """U[-r, r] for the NAC's Ŵ and M̂, r chosen so that Var[W] = 2/(I+O).

    W = tanh(Ŵ)·σ(M̂) has Var[W] = (1 - tanh(r)/r)(r - tanh(r/2)) / (2r) when
    Ŵ, M̂ ~ U[-r, r]; `r` is found by root bracketing so that Var[W] equals
    the Glorot variance 2 / max(I + O, `min_fan_sum`).

    Args:
        min_fan_sum: floor on I + O (the reference code uses 5).
        seed: an integer or `keras.random.SeedGenerator`, as for Keras'
            random initializers.

    Example:

    >>> import keras_nalu, numpy as np
    >>> values = keras_nalu.initializers.NACUniform(seed=1)(shape=(100, 2))
    >>> r = keras_nalu.initializers.nac_uniform_limit(100, 2)
    >>> bool(np.abs(values).max() <= r), round(r, 3)
    (True, 0.504)

    Reference: Madsen & Johansen (2020), App. B.1.2 and B.2.
    """

    def __init__(self, min_fan_sum: int = 5, seed=None):
        self.min_fan_sum = check_positive_int("NACUniform", "min_fan_sum", min_fan_sum)
        super().__init__(minval=-1.0, maxval=1.0, seed=seed)

    def __call__(self, shape, dtype=None):
        r = nac_uniform_limit(*_fans(shape), min_fan_sum=self.min_fan_sum)
        return keras.random.uniform(
            shape, minval=-r, maxval=r, seed=self.seed, dtype=dtype
        )

    def get_config(self):
        return {"min_fan_sum": self.min_fan_sum, "seed": super().get_config()["seed"]}


@export
class NAUUniform(keras.initializers.RandomUniform):
    """U[-r, r] with r = min(0.5, √3·√(2/(I+O))): Glorot, capped at ½.

    The cap keeps every initial weight on the near side of ±0.5, the point
    past which the sparsity regularizer pulls a weight to ±1 rather than 0.

    Example:

    >>> import keras_nalu, numpy as np
    >>> values = keras_nalu.initializers.NAUUniform(seed=1)(shape=(100, 2))
    >>> bool(np.abs(values).max() <= (3 * 2 / 102) ** 0.5)  # r = √3·√(2/(I+O))
    True
    >>> wide = keras_nalu.initializers.NAUUniform(seed=1)(shape=(2, 2))
    >>> bool(np.abs(wide).max() <= 0.5)  # √3·√(2/4) ≈ 1.22, capped at ½
    True

    Reference: Madsen & Johansen (2020), §2.6; the 0.5 cap follows the
    reference code.
    """

    def __init__(self, seed=None):
        super().__init__(minval=-0.5, maxval=0.5, seed=seed)

    def __call__(self, shape, dtype=None):
        fan_in, fan_out = _fans(shape)
        r = min(0.5, math.sqrt(3.0) * math.sqrt(2.0 / (fan_in + fan_out)))
        return keras.random.uniform(
            shape, minval=-r, maxval=r, seed=self.seed, dtype=dtype
        )

    def get_config(self):
        return {"seed": super().get_config()["seed"]}


@export
class NMUUniform(keras.initializers.RandomUniform):
    """U[0.25, 0.75]: E[W] = ½ and Var[W] = 1/48 ≈ 0.021.

    Madsen & Johansen (2020), §2.6 argues for Var[W] = ¼ but its reference code draws
    from U[0.25, 0.75] (variance 1/48); this package follows the code.

    Example:

    >>> import keras_nalu, numpy as np
    >>> values = np.asarray(keras_nalu.initializers.NMUUniform(seed=1)((100, 2)))
    >>> bool(values.min() >= 0.25 and values.max() <= 0.75)
    True

    Reference: Madsen & Johansen (2020), §2.6 and App. B.4.
    """

    def __init__(self, seed=None):
        super().__init__(minval=0.25, maxval=0.75, seed=seed)

    def get_config(self):
        return {"seed": super().get_config()["seed"]}


def clone_with_new_seed(initializer, offset: int = 1):
    """A copy of `initializer` that draws different values.

    Keras initializers with an integer seed return the same values on every
    call; a layer with two weights of one shape (the NAC's Ŵ and M̂) would get
    Ŵ = M̂. The copy keeps determinism by shifting an integer seed by
    `offset` (use distinct offsets for more than one copy). An initializer
    seeded with a `keras.random.SeedGenerator` is returned as it is: its
    generator advances at every call, whereas a copy would restart it and
    repeat the first draw.
    """
    if isinstance(getattr(initializer, "seed", None), keras.random.SeedGenerator):
        return initializer
    config = initializer.get_config()
    seed = config.get("seed")
    if isinstance(seed, int):
        config["seed"] = seed + offset
    return initializer.__class__.from_config(config)


ALIASES = {
    "nac_uniform": NACUniform,
    "nau_uniform": NAUUniform,
    "nmu_uniform": NMUUniform,
}


def get(identifier):
    """Like `keras.initializers.get`, also knowing this package's short names."""
    if isinstance(identifier, str) and identifier in ALIASES:
        return ALIASES[identifier]()
    return keras.initializers.get(identifier)
