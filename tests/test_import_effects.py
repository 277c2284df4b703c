"""`import keras_nalu` changes nothing of the process beyond what Keras' import does.

Importing Keras sets a few environment variables of its backend's libraries
(TensorFlow's `TF2_BEHAVIOR`, ...); importing the package must add nothing to
them: no environment variable (not `KERAS_BACKEND`, not
`TF_CPP_MIN_LOG_LEVEL`), no change to `sys.argv`, no signal handler, no
redirection of file descriptor 2, not even for a while, and no TensorFlow
where Keras runs on JAX. The `keras-nalu` command's start-up is its own
(`keras_nalu.cli.startup`, tested in tests/cli/test_startup.py).
"""

import json

import pytest

from keras_nalu._optional import installed
from tests.helpers import run_in_fresh_python

# Runs in a fresh interpreter: the process as seen before and after
# `sys.argv[1]` (an import), and whether anything moved file descriptor 2.
SNAPSHOT = r"""
import json, os, signal, sys

def snapshot():
    handlers = {}
    for number in signal.valid_signals():
        try:
            handlers[int(number)] = repr(signal.getsignal(number))
        except (OSError, ValueError):
            pass
    stat = os.fstat(2)
    return {
        "environ": dict(os.environ),
        "argv": list(sys.argv),
        "signals": handlers,
        "fd 2": [stat.st_dev, stat.st_ino],
    }

moved = []
real_dup2 = os.dup2
def dup2(fd, fd2, *args, **kwargs):
    if fd2 == 2:
        moved.append(fd)
    return real_dup2(fd, fd2, *args, **kwargs)
os.dup2 = dup2

before = snapshot()
exec(sys.argv[1])
after = snapshot()
changed = {
    key: sorted(
        name for name in {*before[key], *after[key]}
        if before[key].get(name) != after[key].get(name)
    ) if isinstance(before[key], dict) else before[key] != after[key]
    for key in before
}
print(json.dumps({
    "changed": changed,
    "fd 2 moved": bool(moved),
    "tensorflow": "tensorflow" in sys.modules,
}))
"""

#: What importing Keras alone does, against what importing the package does.
KERAS_ALONE = "import keras; keras.backend.backend()"
PACKAGE = "import keras_nalu; keras_nalu.layers.NAU"


def effects(code: str, backend: str) -> dict:
    # TF_CPP_MIN_LOG_LEVEL set: the package once took it as a request to
    # import TensorFlow with file descriptor 2 silenced.
    env = {"KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "2"}
    stdout = run_in_fresh_python(SNAPSHOT, code, env=env)
    return json.loads(stdout.strip().splitlines()[-1])


BACKENDS = [
    pytest.param(
        name, marks=pytest.mark.skipif(not installed(name), reason=f"needs {name}")
    )
    for name in ("tensorflow", "jax")
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_importing_the_package_does_what_importing_keras_does(backend):
    package = effects(PACKAGE, backend)
    assert package == effects(KERAS_ALONE, backend)
    assert not package["fd 2 moved"]
    assert not package["changed"]["argv"] and not package["changed"]["signals"]
    assert "KERAS_BACKEND" not in package["changed"]["environ"]
    assert package["tensorflow"] == (backend == "tensorflow")
