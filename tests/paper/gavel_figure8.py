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

# The same figure's finish-time fairness panel (the notebook's cell 10, its third plot):
# Gavel's FTF agnostic of heterogeneity ("finish_time_fairness"); 6.0 jobs/hour printed too
FIGURE_8_FTF = {
    "agnostic-finish-time": dict(zip(FIGURE_8_RATES, (
        23.26, 23.33, 23.51, 23.58, 23.47, 23.38, 23.51, 23.58, 23.50, 23.43, 23.75, 34.93,
        64.46, 85.54))),
}
