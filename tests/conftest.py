"""Fixtures for every test: float64 under JAX, none under PyTorch."""

import pytest

from tests.backend import BACKEND, enable_float64, float64_arithmetic


def pytest_collection_modifyitems(items):
    """Skips the tests marked `float64` under PyTorch (`float64_arithmetic`)."""
    if BACKEND != "torch":
        return
    for item in items:
        if item.get_closest_marker("float64") is not None:
            item.add_marker(float64_arithmetic)


@pytest.fixture(autouse=True)
def _float64_under_jax(request):
    """Enables float64 in JAX for tests marked `float64` (off by default there)."""
    if request.node.get_closest_marker("float64") is None:
        yield
    else:
        with enable_float64():
            yield
