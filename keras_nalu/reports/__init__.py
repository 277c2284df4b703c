"""Reports on a results file: Madsen & Johansen's (2020) Table 2 and Fig. 3.

They only read a results CSV (`keras_nalu.sweeps.results`), whoever wrote
it: `summary` (`summarize`: each configuration's success rate, its
confidence interval, the step it was solved at, the sparsity error),
`tables` (the summaries as Markdown or LaTeX, `write_summary`) and `plots`
(the figure of a results file, `plot_results`); `progress` groups the
records of a sweep's backups by configuration (`keras-nalu progress`).
`keras-nalu summarize` and `keras-nalu plot` call them, and so do the
scripts under `benchmarks/` that write the committed summaries.
"""
