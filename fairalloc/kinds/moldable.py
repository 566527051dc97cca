"""The moldable kind: its record in the kind contract (``fairalloc.contract``)."""

from __future__ import annotations

from fairalloc.checks import schedule
from fairalloc.contract import Kind
from fairalloc.models import moldable as model
from fairalloc.plots import moldable as plots
from fairalloc.solvers import moldable as solvers
from fairalloc.studies import moldable as studies

KIND = Kind(
    name="moldable",
    summary="Makespan of moldable jobs with serial host-to-accelerator offload",
    from_spec=model.MoldableProblem.from_spec,
    methods={"gpusched1-star": solvers.gpusched1_star,
             "gpusched1": solvers.gpusched1,
             "gpusched2": solvers.gpusched2,
             "work-conserving": solvers.work_conserving,
             "offload-then-list": solvers.offload_then_list,
             "impl-b": solvers.impl_b,
             "exact": solvers.exact},
    default="gpusched1-star",
    exact="exact",
    sense="min",                      # the makespan
    checks=(schedule.feasibility, schedule.no_unforced_idle, schedule.claimed_bounds),
    random_spec=studies.random_spec,
    experiment=studies.EXPERIMENT,
    metrics=model.metrics,
    sweep_metrics=("makespan", "lower_bound", "makespan_over_bound"),
    units={"objective": "makespan (time units)", "makespan": "time (time units)",
           "lower_bound": "time (time units)", "bound:*": "time (time units)",
           "makespan_over_bound": "makespan ÷ lower bound (ratio)",
           "*utilization": "utilization (share)",
           "alpha": "α (share of the processors)", "processors": "processors (count)"},
    plot=plots.gantt,
    bound=model.lower_bound,
    reference=("Jinghao Sun, Jing Li, Zhishan Guo, An Zou, Xuan Zhang, Kunal Agrawal and Sanjoy "
              "Baruah. *Real-Time Scheduling upon a Host-Centric Acceleration Architecture with "
              "Data Offloading.* RTAS 2020 (IEEE Real-Time and Embedded Technology and "
              "Applications Symposium). https://doi.org/10.1109/RTAS48715.2020.00-17"),
)
