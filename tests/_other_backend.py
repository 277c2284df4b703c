"""One fresh process's part of tests/test_backend_parity.py, under another backend.

`python -m tests._other_backend FOLDER`, with KERAS_BACKEND set, imports Keras
and its backend once and, in turn:

1. runs the scenarios of tests/_parity.py (`FOLDER/parity-<backend>.json`);
2. saves its `.keras` file (tests/_keras_files.py: `FOLDER/<backend>.keras`);
3. reads every other backend's file already in FOLDER;
4. writes `FOLDER/<backend>.waiting` and waits until its input ends, then
   reads the files saved since by a process the test started after it.

The test runs this under each backend but its own, one after the other,
each started once the one before it waits. Under JAX or PyTorch the process
runs without TensorFlow, as a user of those backends may: Keras would import
it on the first save only to look for TensorFlow types (4 to 9 CPU seconds).
"""

import os
import sys
from pathlib import Path

if __name__ == "__main__" and os.environ["KERAS_BACKEND"] != "tensorflow":
    sys.modules["tensorflow"] = None  # `import tensorflow` raises ImportError

import keras  # noqa: E402

from tests import _keras_files, _parity  # noqa: E402


def waiting_marker(folder: Path, backend: str) -> Path:
    """The file that says `backend`'s process has done all but step 4."""
    return folder / f"{backend}.waiting"


def main(folder: Path) -> None:
    _parity.write(folder)
    _keras_files.save(folder)
    _keras_files.load(folder)
    waiting_marker(folder, keras.backend.backend()).touch()
    sys.stdin.read()
    _keras_files.load(folder)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
