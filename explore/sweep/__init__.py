"""Design-space sweeps: many accelerator configurations planned (and optionally synthesized)
for one network, with resource checks against the device, Pareto fronts, plots and a summary.

`space` (what is swept) -> `driver` (cache, run, outputs) -> `runner` (local pool or Dask)
-> `evaluate` (one point: plan, `resources`, `synth_job`); `cache` keys and stores records;
`pareto`, `plots`, `summary` and `outputs` turn records into files. See docs/sweep.md.
"""
