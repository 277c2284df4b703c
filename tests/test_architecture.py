"""The levels of docs/architecture.md: no module imports a level above its own."""

import ast
from pathlib import Path

import keras_nalu

ROOT = Path(keras_nalu.__file__).parent

# Lowest first; a module may import its own level and the levels below.
LEVELS = (
    (
        "helpers",
        "keras_nalu._validation keras_nalu._api keras_nalu._files "
        "keras_nalu._optional keras_nalu._ops keras_nalu._startup "
        "keras_nalu._backend_check keras_nalu.keras_utils keras_nalu.errors",
    ),
    (
        "units",
        "keras_nalu.initializers keras_nalu.constraints keras_nalu.regularizers "
        "keras_nalu.layers",
    ),
    ("callbacks", "keras_nalu.callbacks"),
    ("tasks", "keras_nalu.tasks"),
    ("evaluation", "keras_nalu.evaluation"),
    ("presets", "keras_nalu.presets"),
    (
        "runs",
        "keras_nalu.experiments keras_nalu.explain keras_nalu.export "
        "keras_nalu.tf_distribute_patches",
    ),
    ("engines", "keras_nalu.sweeps.engines"),
    ("sweeps", "keras_nalu.sweeps"),
    ("reports", "keras_nalu.reports"),
    ("cli", "keras_nalu.cli keras_nalu.__main__"),
)


def _level(module: str) -> int | None:
    """The level of a dotted module name (its longest matching prefix)."""
    best, length = None, -1
    for index, (_, prefixes) in enumerate(LEVELS):
        for prefix in prefixes.split():
            if (module == prefix or module.startswith(prefix + ".")) and len(
                prefix
            ) > length:
                best, length = index, len(prefix)
    return best


def _imports(tree: ast.Module) -> list[tuple[str, int]]:
    """Every keras_nalu module imported anywhere in a file (lazy ones too)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "keras_nalu"
        ):
            if node.module == "keras_nalu":  # from keras_nalu import layers
                found += [(f"keras_nalu.{a.name}", node.lineno) for a in node.names]
            else:
                found.append((node.module, node.lineno))
        elif isinstance(node, ast.Import):
            found += [
                (a.name, node.lineno)
                for a in node.names
                if a.name.startswith("keras_nalu")
            ]
    return found


def test_every_module_has_a_level():
    for path in ROOT.rglob("*.py"):
        module = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        if module != "keras_nalu":
            assert _level(module) is not None, module


def test_no_module_imports_a_level_above_its_own():
    upward = []
    for path in ROOT.rglob("*.py"):
        module = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        if module == "keras_nalu":
            continue
        own = _level(module)
        if own is None:  # test_every_module_has_a_level names it
            continue
        for target, line in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            level = _level(target)
            if level is not None and level > own:
                upward.append(
                    f"{module} ({LEVELS[own][0]}) imports {target} "
                    f"({LEVELS[level][0]}), line {line}"
                )
    assert not upward, upward


def test_the_map_of_docs_architecture_names_every_module():
    page = (ROOT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = page.index("```text")
    layout = page[start : page.index("```", start + 3)]
    unnamed = [
        str(path.relative_to(ROOT.parent))
        for path in sorted(ROOT.rglob("*.py"))
        if path.name != "__init__.py" and path.name not in layout
    ]
    assert not unnamed, f"modules missing from docs/architecture.md: {unnamed}"


def _module_imports() -> dict[str, set[str]]:
    """Each module's imports of other modules (lazy ones too), packages aside.

    A package's `__init__` only gathers its modules' names, so an import
    through it is not followed: what is left is which module needs which.
    """
    modules = {
        ".".join(path.relative_to(ROOT.parent).with_suffix("").parts): path
        for path in ROOT.rglob("*.py")
        if path.name != "__init__.py"
    }
    graph = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                named.add(node.module)
                named.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                named.update(alias.name for alias in node.names)
        graph[module] = {name for name in named if name in modules} - {module}
    return graph


def test_no_module_imports_itself_through_others():
    graph = _module_imports()
    cycles = []
    for start in sorted(graph):
        seen, frontier = set(), [(start, (start,))]
        while frontier:
            module, path = frontier.pop()
            for target in sorted(graph[module]):
                if target == start:
                    cycles.append(" -> ".join((*path, start)))
                elif target not in seen:
                    seen.add(target)
                    frontier.append((target, (*path, target)))
    assert not cycles, cycles
