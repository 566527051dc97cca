"""The production trace shipped with fairalloc: Microsoft's ITP GPU clusters (ElasticFlow).

69,351 jobs of 10 clusters over two months (fairalloc/data/elasticflow, MIT): when each job
was submitted, how long it ran and how many GPUs it used; no model, user or cluster size. Read
as a generic trace (``arrival`` = submission time in seconds since the start of collection,
the same clock for every cluster; ``duration`` in seconds; ``num_gpu``; ``cluster``); a kind's
replay gives the jobs what else it needs (hetero: ``fairalloc.replay.hetero_trace``).
Shared code: it names no kind.
"""

from __future__ import annotations

import functools
from importlib import resources

import numpy as np

from fairalloc import startup
from fairalloc.errors import ArgumentError
from fairalloc.replay.trace import Trace

CLUSTERS = tuple(f"cluster{i:02d}" for i in range(1, 11))


def elasticflow(cluster: str | None = None) -> Trace:
    """The jobs of one cluster (``cluster01`` … ``cluster10``), or of all ten when None, in
    arrival order; a job's id is its cluster and its 1-based row in that cluster's file
    (``cluster04-00017``).

    >>> t = elasticflow("cluster10")
    >>> t.n, t.ids[0], sorted(t.columns)
    (260, 'cluster10-00001', ['cluster', 'duration', 'num_gpu'])
    """
    trace = _all_clusters()
    if cluster is None:
        return trace
    if cluster not in CLUSTERS:
        raise ArgumentError("cluster", f"no cluster {cluster!r} in the ElasticFlow trace "
                            f"(clusters: {', '.join(CLUSTERS)})")
    return trace.take(trace.columns["cluster"] == cluster)


@functools.cache
def _all_clusters() -> Trace:
    """The shipped table as one trace, read once (its arrays read-only, so shared safely)."""
    duckdb = startup.duckdb()  # lazy: heavy, only reading a table needs it

    path = resources.files("fairalloc").joinpath("data", "elasticflow", "traces.parquet")
    with resources.as_file(path) as file, duckdb.connect() as con:
        data = con.execute("SELECT cluster, submission_time, duration, num_gpu "
                           "FROM read_parquet(?)", [str(file)]).fetchnumpy()
    cluster = np.asarray(data["cluster"], dtype=object)
    ids = [f"{c}-{row:05d}" for c, row in zip(cluster.tolist(), _rows_within(cluster))]
    trace = Trace.of(ids, data["submission_time"].astype(float), {
        "duration": data["duration"].astype(float),
        "num_gpu": data["num_gpu"].astype(np.int64),
        "cluster": cluster}, source="elasticflow")
    for values in (trace.arrival, *trace.columns.values()):
        values.flags.writeable = False
    return trace


def _rows_within(groups: np.ndarray) -> list[int]:
    """Each row's 1-based position among the rows of its group, for rows stored group by
    group."""
    starts = np.r_[0, np.flatnonzero(groups[1:] != groups[:-1]) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, len(groups)]))
    return (np.arange(len(groups)) - first + 1).tolist()
