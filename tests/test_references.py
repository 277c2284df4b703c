"""Every dotted name written in backticks in the docs and docstrings exists.

Read: the docstrings of keras_nalu (modules, classes, functions), the pages
under docs/, README.md and CONTRIBUTING.md (fenced code blocks left out, as
the doctests and tests/test_code_blocks.py run those). A reference is a
backticked dotted name, `a.b.c`, alone or called, `a.b(...)`; it is checked
when its first part names

- the package, `keras_nalu...`: imported and read attribute by attribute;
- a module of the package by its last parts (`engines.loop.train_loop`,
  `tasks.streams`, `registry.COMMANDS`): any module so named;
- a class, function or constant defined at the top of a module of the
  package (`ReplicaRun.restore_backup`, `Range.parse`): any one so named;
- Keras (`keras.`, `ops.` for `keras.ops`), NumPy (`np.`), TensorFlow
  (`tf.`) or JAX (`jax.`, `jnp.`), where installed, or a module of Python's
  standard library (`dataclasses.replace`): read from the library.

An attribute of a class counts when the class or a base has it, declares it
(a dataclass field, an annotation) or assigns it to `self` in its source (a
weight made in `build`). Anything else (`model.fit`, `config.name`, file
names such as `result.json`) is a variable or a file, not checked.
"""

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path

import pytest

from tests.package_source import (
    ROOT,
    module_files,
    parse,
    place,
)

REFERENCE = re.compile(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\([^`]*\))?`")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)

#: The last part of a file name, not an attribute.
FILE_SUFFIXES = frozenset(
    "py md json csv cff toml yml yaml keras tar lock tex png npz onnx txt pb "
    "html cfg ini sh gz zip h5 pkl svg pdf log".split()
)

#: Libraries' usual short names; checked where the library is installed.
LIBRARIES = {
    "keras": "keras",
    "ops": "keras.ops",
    "np": "numpy",
    "numpy": "numpy",
    "tf": "tensorflow",
    "tensorflow": "tensorflow",
    "jax": "jax",
    "jnp": "jax.numpy",
}

MODULES = module_files()


def sources() -> dict[str, list[str]]:
    """Each file read, by its place, with the text it is checked in."""
    texts = {}
    for path in MODULES.values():
        docstrings = []
        for node in ast.walk(parse(path)):
            if isinstance(
                node,
                ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef,
            ):
                docstring = ast.get_docstring(node, clean=False)
                if docstring:
                    docstrings.append(docstring)
        texts[place(path)] = docstrings
    pages = sorted((ROOT / "docs").rglob("*.md"))
    for path in [*pages, ROOT / "README.md", ROOT / "CONTRIBUTING.md"]:
        texts[place(path)] = [FENCE.sub("", path.read_text(encoding="utf-8"))]
    return texts


def references(texts: list[str]) -> list[str]:
    found = []
    for text in texts:
        for match in REFERENCE.finditer(text):
            if match.group(1) not in found:
                found.append(match.group(1))
    return found


def _top_level_names() -> dict[str, list[str]]:
    """Each name a module of the package defines at its top, with the modules."""
    names = {}
    for module, path in MODULES.items():
        for node in parse(path).body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                defined = [node.name]
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = (
                    node.targets if isinstance(node, ast.Assign) else [node.target]
                )
                defined = [t.id for t in targets if isinstance(t, ast.Name)]
            else:
                continue
            for name in defined:
                names.setdefault(name, []).append(module)
    return names


TOP_LEVEL = _top_level_names()

MISSING = object()


def _self_attributes(cls) -> set[str]:
    """The attributes a class of the package (or a base) assigns to `self`."""
    names = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("keras_nalu"):
            continue
        path = Path(inspect.getsourcefile(klass))
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.ClassDef) and node.name == klass.__name__:
                names.update(
                    target.attr
                    for target in ast.walk(node)
                    if isinstance(target, ast.Attribute)
                    and isinstance(target.ctx, ast.Store)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                )
    return names


def _attribute(obj, name: str):
    """`obj.name`, a submodule, a declared or assigned attribute, or MISSING."""
    try:
        return getattr(obj, name)
    except AttributeError:
        pass
    if inspect.ismodule(obj):
        try:
            return importlib.import_module(f"{obj.__name__}.{name}")
        except ImportError:
            return MISSING
    if inspect.isclass(obj):
        declared = (
            {field.name for field in dataclasses.fields(obj)}
            if dataclasses.is_dataclass(obj)
            else set()
        )
        for klass in obj.__mro__:
            declared.update(getattr(klass, "__annotations__", {}))
        if name in declared or name in _self_attributes(obj):
            return None  # an instance attribute: nothing further to read
    return MISSING


def _resolves(obj, parts: list[str]) -> bool:
    for name in parts:
        if obj is None:  # past an instance attribute: not checked further
            return True
        obj = _attribute(obj, name)
        if obj is MISSING:
            return False
    return True


def _module_candidates(parts: list[str]):
    """(module, the parts after its name) for each module the parts start with."""
    for length in range(len(parts), 0, -1):
        tail = ".".join(parts[:length])
        for module in MODULES:
            if module == tail or module.endswith(f".{tail}"):
                yield module, parts[length:]


def check(reference: str) -> bool | None:
    """True: it exists; False: it does not; None: not a reference checked."""
    parts = reference.split(".")
    if parts[-1] in FILE_SUFFIXES:
        return None
    first = parts[0]
    if first in LIBRARIES:
        library = LIBRARIES[first]
        if importlib.util.find_spec(library.split(".")[0]) is None:
            return None
        return _resolves(importlib.import_module(library), parts[1:])
    candidates = list(_module_candidates(parts))
    if candidates:
        return any(
            _resolves(importlib.import_module(module), rest)
            for module, rest in candidates
        )
    if first in TOP_LEVEL:
        return any(
            _resolves(getattr(importlib.import_module(module), first), parts[1:])
            for module in TOP_LEVEL[first]
        )
    if first in sys.stdlib_module_names:
        return _resolves(importlib.import_module(first), parts[1:])
    return None


SOURCES = sources()


def unresolved(source: str) -> list[str]:
    return [
        f"{source}: {reference}"
        for reference in references(SOURCES[source])
        if check(reference) is False
    ]


def test_the_rules_check_what_they_should():
    assert check("keras_nalu.layers.NAU") and check("keras_nalu.tasks.streams")
    assert check("registry.COMMANDS") and check("ops.clip")
    assert check("ArithmeticTask.train_batches") and check("Explanation.trees")
    assert check("NAU.kernel")  # made in build
    assert check("keras_nalu.layers.NAUU") is False
    assert check("Range.parse_it") is False and check("np.nope") is False
    assert check("model.fit") is None and check("result.json") is None


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_reference_resolves(source):
    missing = unresolved(source)
    assert not missing, missing
