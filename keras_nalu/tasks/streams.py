"""A fast counter-based stream of uniform numbers for vectorized training data.

The JAX replica engine draws every replica's training batch inside its
compiled step. JAX's default generator (Threefry) costs far more than the
model's own step on a CPU at 100 replicas, so the engine uses this cheaper
generator instead. Element `e` of batch `b` of the stream keyed `(k₀, k₁)` is

    h = mix(k₀ ⊕ mix(k₁ ⊕ mix(b))),   bits = mix(h ⊕ mix(e ⊕ 0x9E3779B9)),
    u = (bits >> 9) · 2⁻²³ ∈ [0, 1),

where `mix` is the "triple32" integer hash (three xor-shift-multiply rounds,
an exact bijection of 32-bit words whose avalanche is within a few percent of
an ideal random permutation's; Wellons, "Prospecting for hash functions",
2018). `mix(e ⊕ 0x9E3779B9)` does not depend on the stream, so a compiled
step computes it once: one hash per number. The key `(k₀, k₁)` of a stream is
a Philox scramble of `(seed, stream)`, so neighbouring seeds are unrelated;
each batch gets its own 32-bit key `h`. Every number is a function of (key,
batch, element) only: a replica's stream is the same however many replicas
are drawn together, on any device. It is a generator for training data, not
for cryptography; `tests/tasks/test_streams.py` checks its uniformity and the
independence of neighbouring seeds, batches and elements.
"""

from __future__ import annotations

import numpy as np

from keras_nalu.tasks._philox import key_and_counter

_ELEMENT_SALT = 0x9E3779B9


def stream_key(seed: int, stream: int) -> np.ndarray:
    """The `(k₀, k₁)` uint32 key of stream `stream` of experiment `seed`.

    Example:

    >>> from keras_nalu.tasks.streams import stream_key
    >>> stream_key(0, 1).dtype, stream_key(0, 1).shape
    (dtype('uint32'), (2,))
    """
    key, _ = key_and_counter((int(seed), int(stream)))
    return np.array(key, np.uint32)


def _mix(x, xp):
    """The triple32 hash of uint32 words (Wellons 2018), elementwise."""
    x = x ^ (x >> xp.uint32(17))
    x = x * xp.uint32(0xED5AD4BB)
    x = x ^ (x >> xp.uint32(11))
    x = x * xp.uint32(0xAC4C1B51)
    x = x ^ (x >> xp.uint32(15))
    x = x * xp.uint32(0x31848BAB)
    return x ^ (x >> xp.uint32(14))


def counter_uniform(key, batch, shape, xp=np):
    """float32 numbers uniform in [0, 1): batch `batch` of the stream `key`.

    Args:
        key: the stream's `(k₀, k₁)` uint32 words (`stream_key`).
        batch: the batch index, an integer or integer scalar (traced in JAX).
        shape: the batch's shape.
        xp: the array module, NumPy or `jax.numpy`.

    Returns:
        A float32 array of `shape`.

    Example:

    >>> from keras_nalu.tasks.streams import counter_uniform, stream_key
    >>> u = counter_uniform(stream_key(3, 1), 0, (1000,))
    >>> bool(0 <= u.min() and u.max() < 1), round(float(u.mean()), 1)
    (True, 0.5)
    """
    # One-element arrays, not scalars: NumPy wraps array products silently.
    key = xp.asarray(key, dtype=xp.uint32).reshape(2, 1)
    batch = xp.asarray(batch).astype(xp.uint32).reshape(1)
    batch_key = _mix(key[0] ^ _mix(key[1] ^ _mix(batch, xp), xp), xp)
    size = int(np.prod(shape))
    element = xp.arange(size, dtype=xp.uint32) ^ xp.uint32(_ELEMENT_SALT)
    bits = _mix(batch_key ^ _mix(element, xp), xp)
    mantissa = (bits >> xp.uint32(9)) | xp.uint32(0x3F800000)
    return (mantissa.view(xp.float32) - xp.float32(1.0)).reshape(shape)
