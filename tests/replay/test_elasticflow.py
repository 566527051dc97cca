"""The shipped production trace (Microsoft's ITP clusters, ElasticFlow artifact): its jobs as
the source has them, and its seeded hetero types."""

from __future__ import annotations

from collections import Counter
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from fairalloc.errors import ArgumentError
from fairalloc.replay.elasticflow import CLUSTERS, elasticflow
from fairalloc.replay.hetero_trace import assign_types

# jobs per cluster, counted in the source CSVs (rows after the header)
JOBS = {"cluster01": 1595, "cluster02": 5778, "cluster03": 3011, "cluster04": 15802,
        "cluster05": 3629, "cluster06": 2396, "cluster07": 12699, "cluster08": 13047,
        "cluster09": 11134, "cluster10": 260}


def test_every_cluster_has_its_jobs():
    trace = elasticflow()
    assert trace.n == 69_351 == sum(JOBS.values())
    assert Counter(trace.columns["cluster"].tolist()) == JOBS
    for cluster, n in JOBS.items():
        part = elasticflow(cluster)
        assert part.n == n and set(part.columns["cluster"]) == {cluster}
        assert part.ids[0].startswith(f"{cluster}-")


def test_the_jobs_are_the_sources_facts():
    trace = elasticflow()
    assert len(set(trace.ids)) == trace.n and np.all(np.diff(trace.arrival) >= 0)
    gpus = Counter(trace.columns["num_gpu"].tolist())
    assert gpus == {1: 57682, 2: 1483, 4: 2371, 8: 7009, 16: 381, 32: 354, 64: 71}
    assert set(elasticflow("cluster09").columns["num_gpu"]) == {1}
    assert trace.columns["duration"].min() == 600
    gpu_hours = (trace.columns["duration"] * trace.columns["num_gpu"]).sum() / 3600
    assert gpu_hours == pytest.approx(1_632_719.74, abs=0.01)
    first = elasticflow("cluster01")
    assert (first.ids[0], first.arrival[0], first.columns["duration"][0],
            first.columns["num_gpu"][0]) == ("cluster01-00001", 1932025, 2429, 64)


def test_the_trace_is_shared_read_only_and_a_cluster_is_named():
    with pytest.raises(ValueError):
        elasticflow().arrival[0] = 1.0
    with pytest.raises(ArgumentError, match="clusters: cluster01"):
        elasticflow("cluster11")
    assert CLUSTERS == tuple(JOBS)


def test_the_data_ships_with_its_license_and_readme():
    folder = resources.files("fairalloc").joinpath("data", "elasticflow")
    assert "MIT License" in folder.joinpath("LICENSE").read_text()
    assert "commit 277ed24" in folder.joinpath("README.md").read_text()
    assert len(folder.joinpath("traces.parquet").read_bytes()) < 300_000
    project = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert '"data/elasticflow/*"' in project.partition("[tool.setuptools.package-data]")[2]


def test_its_types_are_drawn_the_same_for_the_same_seed():
    trace = elasticflow("cluster02")
    typed, dropped = assign_types(trace, 1, larger="drop")
    again, _ = assign_types(trace, 1, larger="drop")
    assert typed.columns["model"].tolist() == again.columns["model"].tolist()
    big = trace.columns["num_gpu"] > 8
    assert dropped == tuple(np.asarray(trace.ids)[big]) and typed.n == trace.n - big.sum()
    whole, _ = assign_types(elasticflow(), 1, larger="drop")
    assert whole.n == 69_351 - 806
