"""Random accelOS kernel mixes: ``random_spec`` and the preset ``fairalloc experiment accelos``,
in the spirit of section 7 of accelOS.

The paper runs 2-, 4- and 8-kernel mixes of the 25 Parboil OpenCL kernels on an NVIDIA K20m
(13 SMX) and an AMD R9 295X2 GPU (44 CUs per chip) and reports, against standard OpenCL, the
fairness improvement U_fcfs / U_X and the throughput speedup T_fcfs / T_X (section 7.4).
fairalloc has no GPU: mixes are drawn (with repetition, in random launch order) from
``KERNELS``, a table of *synthetic* Parboil-like kernels — the names say which benchmark each
imitates, the numbers are made up within the issue's ranges, not measured — and run under the
wave model of ``models.accelos``. Device totals are per-unit limits times the unit count.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np

from fairalloc import arguments as arg
from fairalloc.contract import Experiment, Parameter


@dataclass(frozen=True)
class KernelType:
    """One synthetic kernel: threads per group, local memory per group (bytes), registers per
    thread, NDRange in groups and the time one wave of groups takes."""

    name: str
    work_group_size: int
    local_memory_per_group: int
    registers_per_thread: int
    work_groups: int
    time_per_group: float


KIB = 1024
KERNELS: tuple[KernelType, ...] = (
    KernelType("bfs", 512, 6 * KIB, 20, 120, 4.0),
    KernelType("cutcp", 128, 4 * KIB, 32, 2_000, 1.5),
    KernelType("histo-prescan", 512, 4 * KIB, 18, 100, 0.3),
    KernelType("histo-intermediates", 256, 0, 24, 1_200, 0.6),
    KernelType("histo-main", 768, 24 * KIB, 30, 840, 2.0),
    KernelType("histo-final", 512, 0, 22, 420, 0.4),
    KernelType("lbm", 128, 0, 40, 9_000, 1.2),
    KernelType("mri-gridding-binning", 1024, 0, 16, 300, 0.5),
    KernelType("mri-gridding-scan", 1024, 16 * KIB, 24, 150, 0.3),
    KernelType("mri-gridding-reorder", 512, 0, 18, 600, 0.4),
    KernelType("mri-gridding-main", 64, 48 * KIB, 56, 3_000, 6.0),
    KernelType("mri-q-phimag", 512, 0, 16, 100, 0.2),
    KernelType("mri-q-computeq", 256, 8 * KIB, 28, 1_024, 8.0),
    KernelType("sad-calc-8", 64, 10 * KIB, 44, 8_000, 0.8),
    KernelType("sad-calc-16", 128, 0, 32, 2_000, 0.5),
    KernelType("sad-main", 96, 12 * KIB, 52, 4_000, 2.5),
    KernelType("sgemm", 128, 8 * KIB, 48, 2_400, 3.0),
    KernelType("spmv", 192, 0, 20, 3_500, 0.7),
    KernelType("stencil", 512, 16 * KIB, 24, 1_000, 1.0),
    KernelType("tpacf", 256, 40 * KIB, 36, 201, 20.0),
    KernelType("tpacf-hist", 1024, 32 * KIB, 20, 200, 1.0),
    KernelType("bfs-frontier", 256, 2 * KIB, 22, 5_000, 0.2),
    KernelType("cutcp-lattice", 256, 20 * KIB, 38, 700, 3.5),
    KernelType("lbm-collide", 320, 0, 64, 10_000, 0.9),
    KernelType("stencil-halo", 1024, 48 * KIB, 32, 400, 1.6),
)


@dataclass(frozen=True)
class Device:
    """A device profile: compute units and each unit's limits."""

    name: str
    units: int
    threads_per_unit: int
    local_memory_per_unit: int
    registers_per_unit: int

    def spec(self) -> dict:
        return {"threads": self.units * self.threads_per_unit,
                "local_memory": self.units * self.local_memory_per_unit,
                "registers": self.units * self.registers_per_unit}


DEVICES: dict[str, Device] = {
    "kepler": Device("kepler", 13, 2048, 48 * KIB, 65536),   # K20m-like: 13 SMX
    "gcn": Device("gcn", 44, 2560, 64 * KIB, 65536),         # one R9 295X2 chip: 44 CUs
}
METRICS = {"fairness_improvement": "fairness improvement over fcfs (ratio)",
           "throughput_speedup": "throughput speedup over fcfs (ratio)"}


def random_spec(seed: int, kernels: int = 8, device: str = "scaled") -> dict:
    """``kernels`` kernels drawn (with repetition, in launch order) from ``KERNELS``.

    ``device="scaled"``: a GCN-like device scaled to the mix — 44 compute units per 8 kernels
    (2560 threads, 64 KiB of local memory and 65536 registers each) — and shares 1, 2 or 0.5;
    a name in ``DEVICES`` (``kepler``, ``gcn``): that device and equal shares, as section 7
    runs its mixes. The same seed draws the same kernels on every device.

    >>> [k["share"] for k in random_spec(3, kernels=4)["kernels"]]
    [1.0, 0.5, 0.5, 2.0]
    >>> [k["id"] for k in random_spec(3, kernels=4, device="kepler")["kernels"]][:2]
    ['0:tpacf-hist', '1:histo-prescan']
    """
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(KERNELS), kernels).tolist()
    specs = [{"id": f"{slot}:{KERNELS[t].name}" if device in DEVICES else f"k{slot}",
              "work_group_size": KERNELS[t].work_group_size,
              "local_memory_per_group": KERNELS[t].local_memory_per_group,
              "registers_per_thread": KERNELS[t].registers_per_thread,
              "work_groups": KERNELS[t].work_groups,
              "time_per_group": KERNELS[t].time_per_group}
             for slot, t in enumerate(picks)]
    if device in DEVICES:
        return {"problem": "accelos", "name": f"mix on {device}",
                "device": DEVICES[device].spec(), "kernels": specs}
    if device != "scaled":
        raise ValueError(f"unknown device {device!r} (known: scaled, {', '.join(DEVICES)})")
    units = max(44, math.ceil(44 * kernels / 8))
    shares = rng.choice([1.0, 2.0, 0.5], kernels).tolist()
    for spec, share in zip(specs, shares):
        spec["share"] = share
    return {"problem": "accelos", "device": Device("scaled gcn", units, 2560, 64 * KIB,
                                                   65536).spec(), "kernels": specs}


def devices(text: str) -> list[str]:
    """An argparse type: comma-separated names of ``DEVICES``."""
    chosen = arg.names(text)
    unknown = [d for d in chosen if d not in DEVICES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown device(s) {', '.join(unknown)} (known: {', '.join(DEVICES)})")
    return chosen


def study(seed: int, kernels: int, mixes: int, devices: list[str]) -> dict:
    """The section 7.4 study: ``mixes`` random mixes on each device (the same mixes on every
    device), accelOS and the exact ILP, their improvement over fcfs
    (``specs/studies/accelos-section-7.json`` is its default as a file)."""
    return {"study": "accelos-section-7", "kind": "accelos",
            "summary": "section 7.4 of accelOS: fairness improvement and throughput speedup "
                       "over fcfs",
            "instances": {"generate": {"kernels": kernels}, "count": mixes},
            "grid": {"device": devices}, "methods": ["accelos", "ilp"], "seed": seed,
            "metrics": list(METRICS)}


def _title(seed: int, kernels: int, mixes: int, devices: list[str]) -> str:
    return (f"accelos: {kernels}-kernel mixes, {mixes} per device (seed {seed}): "
            "improvement over fcfs")


EXPERIMENT = Experiment(
    summary="section 7.4 of accelOS: fairness improvement and throughput speedup over fcfs",
    parameters=(
        Parameter("kernels", int, 4, "kernels per mix", choices=(2, 4, 8)),
        Parameter("mixes", arg.whole(1, 10**6), 100, "random mixes per device"),
        Parameter("devices", devices, ["kepler", "gcn"],
                  f"comma-separated device profiles ({', '.join(DEVICES)})"),
    ),
    study=study,
    values={f"metric.{key}": label for key, label in METRICS.items()},
    title=_title,
    groups=("device",),
    baseline=1.0,
    log=True,
)
