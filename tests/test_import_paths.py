"""One import path per public name.

The rule, checked over every module of `keras_nalu`:

- A public name (one that some module lists in its `__all__`) is defined in
  exactly one module: a `def`, a `class` or an assignment at its top level.
  That module is the name's home.
- Besides its home, at most one module lists the name in its `__all__`:
  the `__init__` of the package that holds the home module, exporting its
  own submodule's name (`keras_nalu.layers` exports `NAU` of
  `keras_nalu.layers.nau`). No other package re-exports it (not a package
  further up, not the top-level `keras_nalu`), and no module exists only to
  re-export others' names.
- The exported object is the home's object.

So every public name has one import path: its package's, where the package
exports it, else its home module's. A package may also list its own
submodules in `__all__` (`keras_nalu` lists `layers`, `callbacks`, ...).
"""

import ast
import importlib
import pkgutil
from pathlib import Path

import keras_nalu

PACKAGE_ROOT = Path(keras_nalu.__file__).parent


def _modules() -> dict[str, Path]:
    """Every module of keras_nalu by dotted name, with its source file."""
    modules = {"keras_nalu": PACKAGE_ROOT / "__init__.py"}
    for info in pkgutil.walk_packages([str(PACKAGE_ROOT)], prefix="keras_nalu."):
        relative = Path(*info.name.split(".")[1:])
        if info.ispkg:
            modules[info.name] = PACKAGE_ROOT / relative / "__init__.py"
        else:
            modules[info.name] = PACKAGE_ROOT / relative.with_suffix(".py")
    return modules


def _top_level_definitions(tree: ast.Module) -> set[str]:
    """Names a module binds itself (not by import) at its top level."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _listed(tree: ast.Module) -> list[str]:
    """The names a module lists in its `__all__` (a literal list or tuple)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            try:
                return list(ast.literal_eval(node.value))
            except ValueError:  # computed, e.g. another module's __all__
                return ["<a computed __all__>"]
    return []


def _imported_from(tree: ast.Module) -> dict[str, str]:
    """Each name a module imports by `from X import name`, with X."""
    sources = {}
    body = list(tree.body)
    for node in body:
        if isinstance(node, ast.If | ast.Try):  # `if not running_cli(): ...`
            body.extend(node.body)
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                sources[alias.asname or alias.name] = node.module
    return sources


def _survey():
    """Every module's definitions, exports and imports, parsed once."""
    parsed = {}
    for name, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parsed[name] = {
            "package": path.name == "__init__.py",
            "defines": _top_level_definitions(tree) - {"__all__"},
            "exports": _listed(tree),
            "imports": _imported_from(tree),
        }
    return parsed


MODULES = _survey()


def _submodules(module: str) -> set[str]:
    return {
        name.rsplit(".", 1)[1]
        for name in MODULES
        if name.rsplit(".", 1)[0] == module and name != module
    }


def _home(module: str, symbol: str) -> str | None:
    """The module an export comes from: the exporter itself, or its source."""
    if symbol in MODULES[module]["defines"]:
        return module
    return MODULES[module]["imports"].get(symbol)


def _exports():
    """(exporter, name, home) for every name in every `__all__`."""
    for module, info in MODULES.items():
        for symbol in info["exports"]:
            if symbol not in _submodules(module):
                yield module, symbol, _home(module, symbol)


def test_the_walk_finds_the_package():
    assert {"keras_nalu.layers.nau", "keras_nalu.sweeps.engines.run"} <= set(MODULES)
    assert sum(1 for _ in _exports()) > 100


def test_each_export_is_defined_in_its_home_module():
    wrong = [
        (exporter, symbol, home)
        for exporter, symbol, home in _exports()
        if home not in MODULES or symbol not in MODULES[home]["defines"]
    ]
    assert not wrong, f"exported names not defined where they come from: {wrong}"


def test_only_a_package_exports_others_names_and_only_its_own_submodules():
    wrong = [
        f"{exporter} exports {symbol} of {home}"
        for exporter, symbol, home in _exports()
        if home != exporter
        and not (MODULES[exporter]["package"] and home.rsplit(".", 1)[0] == exporter)
    ]
    assert not wrong, wrong


def test_each_name_has_one_import_path():
    paths = {}
    for exporter, symbol, home in _exports():
        paths.setdefault((home, symbol), set()).add(exporter)
    # The home's own `__all__` and its package's are one path: the package's.
    twice = {
        key: sorted(exporters)
        for key, exporters in paths.items()
        if len(exporters - {key[0]}) > 1
    }
    assert not twice, f"names exported by more than one package: {twice}"


def test_exported_objects_are_their_homes_objects():
    for exporter, symbol, home in _exports():
        value = getattr(importlib.import_module(home), symbol)
        assert getattr(importlib.import_module(exporter), symbol) is value


def test_no_value_is_defined_twice():
    """A public constant or helper is written once and imported elsewhere."""
    places = {}
    for module, info in MODULES.items():
        for symbol in info["defines"]:
            if not symbol.startswith("_"):
                places.setdefault(symbol, []).append(module)
    copies = []
    for symbol, modules in places.items():
        values = [getattr(importlib.import_module(m), symbol) for m in modules]
        for i, first in enumerate(values):
            for j in range(i + 1, len(values)):
                try:
                    same = bool(first == values[j])
                except Exception:  # noqa: BLE001 - arrays, frames: not constants
                    same = False
                if same and isinstance(first, tuple | frozenset | str | int | float):
                    copies.append((symbol, modules[i], modules[j]))
    assert not copies, f"values defined twice: {copies}"
