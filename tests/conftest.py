"""Fixtures for every test: float64 under JAX, none under PyTorch, a
threshold cache of the session's own, and Python's own Ctrl-C handler."""

import os
import shutil
import signal
import tempfile
import warnings

import pytest

# tests.backend (Keras and its backend) is imported where it is used, in the
# test workers: the xdist controller that starts them then does not import
# Keras at all (on a fresh clone, with byte code still to compile, that took
# as long as a worker's whole start).

#: The environment variable of the threshold cache (`cache_dir`).
CACHE_VARIABLE = "KERAS_NALU_CACHE_DIR"
#: The session's cache folder and the variable's value before it.
_SESSION_CACHE = pytest.StashKey[tuple[str, str | None]]()


def pytest_configure(config):
    """Points the threshold cache at an empty folder of this session's own.

    No test reads or writes the user's cache (`~/.cache/keras_nalu`, or the
    folder their `KERAS_NALU_CACHE_DIR` names): a value cached there would
    decide what a test sees, and a test would fill it. The folder is made
    once, by the session that runs first (the xdist controller); its workers
    and every command a test starts inherit the variable. A test that sets
    its own folder (`monkeypatch.setenv`) gets this one back afterwards.
    """
    if hasattr(config, "workerinput"):  # an xdist worker: the controller's folder
        return
    folder = tempfile.mkdtemp(prefix="keras-nalu-test-cache-")
    config.stash[_SESSION_CACHE] = folder, os.environ.get(CACHE_VARIABLE)
    os.environ[CACHE_VARIABLE] = folder


def pytest_unconfigure(config):
    """Removes the session's threshold cache and restores the variable."""
    folder, before = config.stash.get(_SESSION_CACHE, (None, None))
    if folder is None:
        return
    shutil.rmtree(folder, ignore_errors=True)
    if before is None:
        os.environ.pop(CACHE_VARIABLE, None)
    else:
        os.environ[CACHE_VARIABLE] = before


def pytest_collection_modifyitems(items):
    """Skips the tests marked `float64` under PyTorch (`float64_arithmetic`)."""
    from tests.backend import BACKEND, float64_arithmetic

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
        from tests.backend import enable_float64

        with enable_float64():
            yield


@pytest.fixture(autouse=True)
def _python_ctrl_c():
    """Each test starts with Python's own SIGINT handler, whatever ran before.

    A test of Ctrl-C checks that the handler is given back, and the commands a
    test starts inherit an ignored SIGINT: a handler left by an earlier test
    in the same worker (a library that ignores SIGINT, e.g. while it starts a
    cluster) would decide the outcome. One left changed is named in a warning.
    """
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        warnings.warn(
            f"SIGINT's handler left as {signal.getsignal(signal.SIGINT)!r}",
            stacklevel=1,
        )
