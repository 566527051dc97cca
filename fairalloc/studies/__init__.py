"""Studies: many instances of one kind, each solved by several methods, stored and summarised.

* ``plan``: the study spec (``fairalloc new study``), checked and expanded into tasks;
* ``run``: the executors (in process, a local process pool, a Dask cluster) and the driver;
* ``store``: the DuckDB store, one row per (instance, method, repeat);
* ``summary``: statistics per grid point and method, with bootstrap confidence intervals.

Each kind's instance generators, preset experiments and simulations live in
``studies/<kind>.py``; the modules above name no kind.
"""
