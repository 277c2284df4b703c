"""Madsen & Johansen's (2020) Table 6 ordering on ×, + and −: every preset, 20 seeds.

    python benchmarks/table6.py                  # the rows below, 20 seeds
    python benchmarks/table6.py --summarize      # only print the table
    python benchmarks/table6.py --rows nac_mul_nmu:mul --iterations 2000000

The same protocol as `table2.py` (default arithmetic task, each preset's
Table 4 settings, `--iterations` steps, vectorized replicas through
`run_sweep`; the iNALU, whose callbacks act on one model at a time, trains
seed by seed). The rows Table 2 already ran at 100 seeds are not trained
again: `benchmarks/results/table2/results.csv` joins the table, so every
(model, operation) of Madsen & Johansen's (2020) Table 6 appears once, with its own
seed count and budget in the `n` and `max_iterations` columns.

Writes `benchmarks/results/table6/results.csv` and `summary.md`.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from table2 import OUT as TABLE_2_OUT  # noqa: E402
from table2 import parser, run_table  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "table6"
ROWS = ",".join(
    [
        # the presets of Madsen & Johansen's (2020) Table 6 on + and −, where Table 2
        # has no row
        "nac:add,nac:sub,nac_mul:add,nac_mul:sub",
        "nac_mul_sigma:add,nac_mul_sigma:sub,nac_mul_nmu:add,nac_mul_nmu:sub",
        "gated_nau_nmu:add,gated_nau_nmu:sub,nmu:add,nmu:sub",
        "relu6:add,relu6:sub",
        # ... and on × (the multiplicative units need ~2·10⁶ steps: see README)
        "relu6:mul,nau:mul,nac:mul,gated_nau_nmu:mul",
        "nac_mul:mul,nac_mul_sigma:mul,nac_mul_nmu:mul",
        # presets beyond Table 6
        "nalu_separate:add,nalu_separate:sub,nalu_separate:mul",
        "nalu_shared:add,nalu_shared:sub,nalu_shared:mul",
        "npu:add,npu:sub,npu:mul,real_npu:add,real_npu:sub,real_npu:mul",
        "nau_sparse:add,nau_sparse:sub,nau_sparse:mul",
        "inalu:add,inalu:sub,inalu:mul",
    ]
)


def main(argv=None) -> int:
    options = parser(__doc__.splitlines()[0], ROWS)
    options.set_defaults(seeds="0-19", chunk_size=20, out=str(OUT))
    run_table(options.parse_args(argv), reuse=[TABLE_2_OUT / "results.csv"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
