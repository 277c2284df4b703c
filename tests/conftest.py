"""Fixtures for every test: float64 under JAX."""

import contextlib

import pytest

from tests.backend import BACKEND


@pytest.fixture(autouse=True)
def _float64_under_jax(request):
    """Enables float64 in JAX for tests marked `float64` (off by default there)."""
    if BACKEND != "jax" or request.node.get_closest_marker("float64") is None:
        context = contextlib.nullcontext()
    else:
        import jax

        context = jax.enable_x64(True)
    with context:
        yield
