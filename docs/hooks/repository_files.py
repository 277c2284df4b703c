"""MkDocs hook: puts the benchmarks' and examples' own files on the site.

- The figures live beside the results they draw (`benchmarks/results/**.png`);
  each one is added to the site as `benchmark-results/<path>`, so the Results
  page shows them without a copy in `docs/`.
- `examples/README.md` and `benchmarks/README.md` describe their folders'
  scripts and runs; they become the pages `examples.md` and `benchmarks.md`,
  so each text is written once.

`mkdocs build --strict` then checks every link to them.
"""

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
PAGES = {
    "examples.md": ROOT / "examples" / "README.md",
    "benchmarks.md": ROOT / "benchmarks" / "README.md",
}


def on_files(files, config):
    for path in sorted(RESULTS.rglob("*.png")):
        uri = "benchmark-results/" + path.relative_to(RESULTS).as_posix()
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    for uri, path in PAGES.items():
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files
