"""The README's Python snippets run, in order, in one namespace."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_readme_snippets_run(monkeypatch):
    assert len(BLOCKS) >= 4
    monkeypatch.chdir(ROOT)
    namespace = {}
    for index, block in enumerate(BLOCKS):
        code = compile(block, f"README.md python block {index}", "exec")
        exec(code, namespace)  # a failure names the block in its traceback
