"""Gavel's printed figure 8 values, which the paper test, the replay benchmark and the figure
script compare against (papers' printed numbers live here, never in library code)."""

# Gavel's figure 8 (continuous single-GPU jobs, 36 V100 + 36 P100 + 36 K80, rounds of 360 s):
# average JCT in hours of jobs 4000-5000 by input rate (jobs/hour), seed 0, as printed in
# scheduler/notebooks/figures/evaluation/continuous_jobs.ipynb ("max_min_fairness" is LAS,
# "max_min_fairness_perf" Gavel's heterogeneity-aware LAS); at 6.0 LAS did not finish
FIGURE_8_RATES = (0.4, 0.8, 1.2, 1.6, 2.0, 2.4, 2.8, 3.2, 3.6, 4.0, 4.4, 4.8, 5.2, 5.6)
FIGURE_8 = {
    "agnostic-max-min": dict(zip(FIGURE_8_RATES, (
        23.26, 23.33, 23.51, 23.57, 23.47, 23.43, 23.59, 23.59, 23.57, 23.49, 23.81, 35.79,
        63.78, 95.99))),
    "max-min": dict(zip(FIGURE_8_RATES, (
        17.58, 17.64, 17.67, 17.48, 16.95, 16.39, 16.04, 16.08, 16.38, 16.82, 17.48, 18.97,
        22.02, 28.96))),
}

# Gavel's finish-time fairness for figure 8 (continuous_jobs.ipynb, cell 11, the first plot):
# the mean over jobs 4000-5000 of JCT / the job's JCT under Gavel's isolated policy on the same
# trace, by input rate, as printed ("max_min_fairness" is LAS, "max_min_fairness_perf" the
# aware LAS)
FIGURE_8_RHO = {
    "agnostic-max-min": dict(zip(FIGURE_8_RATES, (
        1.00, 1.00, 1.00, 1.00, 1.01, 1.01, 1.00, 1.00, 1.01, 1.00, 1.00, 1.05, 0.92, 0.96))),
    "max-min": dict(zip(FIGURE_8_RATES, (
        0.84, 0.84, 0.84, 0.83, 0.80, 0.78, 0.73, 0.72, 0.73, 0.75, 0.75, 0.64, 0.41, 0.37))),
}

# The same figure's finish-time fairness panel (the notebook's cell 10, its third plot):
# Gavel's FTF agnostic of heterogeneity ("finish_time_fairness") and aware of it
# ("finish_time_fairness_perf", fairalloc's finish-time); 6.0 jobs/hour printed too
FIGURE_8_FTF = {
    "agnostic-finish-time": dict(zip(FIGURE_8_RATES, (
        23.26, 23.33, 23.51, 23.58, 23.47, 23.38, 23.51, 23.58, 23.50, 23.43, 23.75, 34.93,
        64.46, 85.54))),
    "finish-time": dict(zip(FIGURE_8_RATES, (
        17.58, 17.64, 17.67, 17.51, 17.07, 16.58, 16.41, 16.57, 16.99, 17.57, 18.62, 20.43,
        23.38, 30.47))),
}
