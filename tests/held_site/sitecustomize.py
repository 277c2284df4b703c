"""Holds training runs at their evaluations while a file exists (tests only).

On the PYTHONPATH of a process a test starts (a sweep, the workers of a Ray
cluster), with `TESTS_HOLD_FILE` naming a file: a run that has just
evaluated (and written its backup, if one was due) and is not finished
waits there while that file exists and no stop was asked for (Ctrl-C, or
Ray's cancellation). A test that stops a sweep on its way (kills it,
interrupts it, loses its cluster) thus finds it still training however fast
the machine is, and deletes the file to let it go on. `TESTS_HOLD_AFTER`, if
set, names a file that must exist too (e.g. the results file: hold once a
chunk has finished). Python's own `sitecustomize`, if any, runs after this.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import time

HOLD = os.environ.get("TESTS_HOLD_FILE")
AFTER = os.environ.get("TESTS_HOLD_AFTER")
LOOP = "keras_nalu.sweeps.engines.loop"


def _holding() -> bool:
    return os.path.exists(HOLD) and (not AFTER or os.path.exists(AFTER))


def _hold_after_evaluations(loop) -> None:
    trained = loop.RunLoop.trained

    def trained_then_held(self, steps):
        evaluation = self.next_stop()
        trained(self, steps)
        if evaluation is None or self.run.step < evaluation or not self.next_stop():
            return  # between two evaluations, or finished
        while _holding() and not loop.stop_requested():
            time.sleep(0.02)

    loop.RunLoop.trained = trained_then_held


class _HoldOnImport(importlib.abc.MetaPathFinder):
    """Patches the training loop's module as it is imported."""

    def find_spec(self, name, path, target=None):
        if name != LOOP:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            execute = spec.loader.exec_module

            def execute_then_hold(module):
                execute(module)
                _hold_after_evaluations(module)

            spec.loader.exec_module = execute_then_hold
        return spec


def _next_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


if HOLD:
    sys.meta_path.insert(0, _HoldOnImport())
_next_sitecustomize()
