"""TensorFlow's stateless uniform numbers, computed in NumPy.

`tf.random.stateless_uniform(shape, seed)` on the CPU is Philox-4x32-10
(Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011) with
a key and counter scrambled from the seed pair, one 32-bit word per float32
(its low 23 bits as the mantissa of a number in [1, 2), minus 1). This module
computes the same words in NumPy, so the fixed validation and test sets of the
tasks are the same with or without TensorFlow installed, on every engine:
`philox_uniform(shape, (s, 0))` equals
`tf.random.stateless_uniform(shape, (s, 0))` bit for bit, and
`fold_in(seed, b)` equals `tf.random.experimental.stateless_fold_in(seed, b)`
for an int64 `b` (`tests/tasks/test_ranges.py` and
`tests/tasks/test_arithmetic.py` check both against TensorFlow).
"""

from __future__ import annotations

import math

import numpy as np

_MULTIPLIERS = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
_SCRAMBLE_KEY = (0x3EC8F720, 0x02461E29)
_LOW = np.uint64(0xFFFFFFFF)
_HIGH = np.uint64(32)


_BLOCK = 1 << 14
"""Counters transformed at a time: small enough for the CPU's cache (the
whole draw at once is several times slower on large shapes)."""


def _rounds(c0, c1, c2, c3, key: tuple[int, int]):
    """Ten Philox-4x32 rounds of the words `c0..c3` (uint64 arrays of 32-bit
    values) under a 64-bit key."""
    k0, k1 = key
    for _ in range(10):
        product0 = _MULTIPLIERS[0] * c0
        product1 = _MULTIPLIERS[1] * c2
        c0, c1, c2, c3 = (
            (product1 >> _HIGH) ^ c1 ^ np.uint64(k0),
            product1 & _LOW,
            (product0 >> _HIGH) ^ c3 ^ np.uint64(k1),
            product0 & _LOW,
        )
        k0 = (k0 + _KEY_STEPS[0]) & 0xFFFFFFFF
        k1 = (k1 + _KEY_STEPS[1]) & 0xFFFFFFFF
    return c0, c1, c2, c3


def _philox(counter: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Ten Philox-4x32 rounds of `counter` (4, n) uint32 under a 64-bit key."""
    words = _rounds(*(word.astype(np.uint64) for word in counter), key)
    return np.stack(words).astype(np.uint32)


def _words(seed: int) -> list[int]:
    """A 64-bit seed as two 32-bit words, low first (two's complement)."""
    value = int(seed) % 2**64
    return [value & 0xFFFFFFFF, value >> 32]


def key_and_counter(seed) -> tuple[tuple[int, int], int]:
    """The Philox key and 128-bit start counter TensorFlow derives from a seed."""
    counter = np.array([*_words(seed[0]), *_words(seed[1])], np.uint32)[:, None]
    mixed = [int(word) for word in _philox(counter, _SCRAMBLE_KEY)[:, 0]]
    key = (mixed[0], mixed[1])
    start = (mixed[2] << 64) | (mixed[3] << 96)
    return key, start


def _signed64(value: int) -> int:
    return value - 2**64 if value >= 2**63 else value


def fold_in(seed, data: int) -> tuple[int, int]:
    """TensorFlow's `stateless_fold_in(seed, data)` for an int64 `data`.

    TensorFlow draws one full-range int64 from `seed` (Philox words w₀, w₁ of
    the seed's first counter, read as w₁·2³² + w₀) and pairs it with `data`;
    so the first element depends on `seed` only.

    Args:
        seed: a pair of integers.
        data: the integer folded in.

    Returns:
        The new seed pair `(drawn, data)`.

    Example:

    >>> from keras_nalu.tasks._philox import fold_in
    >>> fold_in((0, 1), 5)[1]
    5
    """
    key, start = key_and_counter(seed)
    counter = np.array(
        [(start >> shift) & 0xFFFFFFFF for shift in (0, 32, 64, 96)], np.uint32
    )[:, None]
    words = _philox(counter, key)[:, 0]
    return _signed64((int(words[1]) << 32) | int(words[0])), int(data)


def philox_uniform(shape, seed, minval=0.0, maxval=1.0) -> np.ndarray:
    """float32 numbers uniform in [minval, maxval), as TensorFlow draws them.

    Args:
        shape: the output shape.
        seed: a pair of integers `(s0, s1)` (an integer s reads as `(s, 0)`).
        minval: the lower bound.
        maxval: the upper bound (excluded, up to float32 rounding).

    Returns:
        A float32 array equal to `tf.random.stateless_uniform(shape, seed,
        minval, maxval)`.

    Example:

    >>> from keras_nalu.tasks._philox import philox_uniform
    >>> [round(float(u), 4) for u in philox_uniform((3,), 0)]
    [0.211, 0.706, 0.8001]
    """
    if isinstance(seed, int | np.integer):
        seed = (int(seed), 0)
    shape = tuple(int(n) for n in shape)
    size = math.prod(shape)
    key, start = key_and_counter(seed)
    groups = -(-size // 4)
    # The 128-bit counter of group g is start + g; only its low 64 bits move
    # unless they overflow, which the carry below handles.
    low_start, high_start = np.uint64(start & (2**64 - 1)), np.uint64(start >> 64)
    bits = np.empty((groups, 4), np.uint32)
    for first in range(0, groups, _BLOCK):
        index = np.arange(first, min(first + _BLOCK, groups), dtype=np.uint64)
        low = low_start + index
        high = high_start + (low < index).astype(np.uint64)
        counter = (low & _LOW, low >> _HIGH, high & _LOW, high >> _HIGH)
        for column, word in enumerate(_rounds(*counter, key)):
            bits[first : first + len(index), column] = word
    bits = bits.reshape(-1)[:size]
    mantissa = (bits & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)
    unit = mantissa.view(np.float32) - np.float32(1.0)
    minval, maxval = np.float32(minval), np.float32(maxval)
    return (unit * (maxval - minval) + minval).reshape(shape)
