"""Helpers shared by the test modules."""

import os
import subprocess
import sys
import textwrap


def run_in_fresh_python(code: str, *args, timeout: float = 300) -> str:
    """Runs `code` in a new interpreter of this environment; returns its stdout.

    The snippet sees `args` as `sys.argv[1:]`. Nothing of this process (imports,
    registered objects, the dtype policy) carries over, as in a deployment.
    """
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert completed.returncode == 0, (
        f"fresh process failed ({completed.returncode}):\n{completed.stderr[-4000:]}"
    )
    return completed.stdout
