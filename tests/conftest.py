"""Fixtures for every test: float64 under JAX."""

import pytest

from tests.backend import enable_float64


@pytest.fixture(autouse=True)
def _float64_under_jax(request):
    """Enables float64 in JAX for tests marked `float64` (off by default there)."""
    if request.node.get_closest_marker("float64") is None:
        yield
    else:
        with enable_float64():
            yield
