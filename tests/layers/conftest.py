"""Fixtures for the unit tests in tests/layers (the contract: contract.py)."""

import pytest


@pytest.fixture
def mixed_float16():
    """Runs the test under the "mixed_float16" global policy, then restores it."""
    import keras  # here, not at the top: the xdist controller loads this file

    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)
    assert keras.mixed_precision.global_policy().name == previous.name
