"""An underscored name is used only in the module that defines it.

A name another module of keras_nalu uses is not private: it loses its
underscore (and stays out of `__all__`, which lists what users import).
Found by reading every module's source (lazy imports in functions too):

- `from keras_nalu.x import _y` in a module other than `keras_nalu.x`;
- `x._y`, where `x` names a module of the package or an object imported
  from one (`SubsetSumTask._reduce_steps`);
- `something._y`, other than on `self`, `cls` or `super()`, where `_y` is
  defined in another module of the package (a function, a class, an
  attribute assigned there) and not in this one: an underscored attribute
  of an object made elsewhere (`explanation._trees`).

Dunder names (`__version__`, `__init__`) are not private names, and the
package's helper modules (`keras_nalu._files`, ...) are modules, imported
anywhere in the package.
"""

import ast

import pytest

from tests.package_source import module_files, parse

MODULES = module_files()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined(tree: ast.Module) -> set[str]:
    """The underscored names a module defines, at any depth."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return {name for name in names if _private(name)}


DEFINED = {module: _defined(parse(path)) for module, path in MODULES.items()}


def _imported(module: str, tree: ast.Module) -> dict[str, str]:
    """Each local name bound to another module of the package, or to an
    object imported from one: its dotted source."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level:
            source = node.module or ""
            if source.split(".")[0] != "keras_nalu" or source == module:
                continue
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "keras_nalu" and alias.name != module:
                    bound[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else "keras_nalu"
                    )
    return bound


def _dotted(node: ast.expr) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"], or None for any other expression."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _on_self(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "super"
    )


def findings(module: str, tree: ast.Module) -> set[str]:
    """What `module`, of source `tree`, uses of other modules' underscored names."""
    bound = _imported(module, tree)
    own = _defined(tree)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level:
            source = node.module or ""
            if source.split(".")[0] == "keras_nalu" and source != module:
                found.update(
                    f"{module}: {source}.{alias.name}"
                    for alias in node.names
                    if _private(alias.name)
                    and f"{source}.{alias.name}" not in MODULES  # a helper module
                )
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            dotted = _dotted(node.value)
            if dotted and dotted[0] in bound:
                source = ".".join([bound[dotted[0]], *dotted[1:]])
                if source != module and not source.startswith(f"{module}."):
                    found.add(f"{module}: {source}.{node.attr}")
            elif not _on_self(node.value) and node.attr not in own:
                owners = [m for m, names in DEFINED.items() if node.attr in names]
                if owners:
                    found.add(f"{module}: .{node.attr} of {', '.join(sorted(owners))}")
    return found


FINDINGS = {module: findings(module, parse(path)) for module, path in MODULES.items()}


def test_the_reading_finds_each_kind_of_use():
    source = (
        "from keras_nalu.explain.readers import _round, UnsupportedLayerError\n"
        "from keras_nalu.tasks import subset_sum\n"
        "import keras_nalu.tasks.ranges as ranges\n"
        "def f(self, thing, _arg):\n"
        "    subset_sum._x, UnsupportedLayerError._y, ranges._z, thing._round\n"
        "    self._mine, super()._theirs, thing.__class__, _arg\n"
    )
    module = "keras_nalu.example"
    assert findings(module, ast.parse(source)) == {
        f"{module}: keras_nalu.explain.readers._round",
        f"{module}: keras_nalu.tasks.subset_sum._x",
        f"{module}: keras_nalu.explain.readers.UnsupportedLayerError._y",
        f"{module}: keras_nalu.tasks.ranges._z",
        f"{module}: ._round of keras_nalu.explain.readers",
    }


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_uses_another_modules_underscored_names(module):
    assert not FINDINGS[module], sorted(FINDINGS[module])
