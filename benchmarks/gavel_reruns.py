"""tests/paper/gavel_figure9_reruns.json: the window averages of Gavel's own simulator re-run on
this machine (``run_point.py`` of the project's shared tools, one output file a point), with
their provenance, as reference numbers beside Gavel's printed ones.

    python benchmarks/gavel_reruns.py GAVEL_GIT_DIR RUN.json... > OUT.json

(OUT.json: tests/paper/gavel_figure9_reruns.json for the figure 9 runs.)

Each RUN.json is ``{"summary": {"policy", "rate", "window", ...}, "jct_s": {job id: JCT s}}``;
the point's date is the file's modification time (when the run ended), Gavel's commit the
HEAD of GAVEL_GIT_DIR (the copy the simulator was set up from). A later file for the same
policy and rate replaces an earlier one.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

COMMAND = ("DEST/venv/bin/python run_point.py DEST POLICY RATE 4000 5000 1 OUT.json 0 "
           "(DEST made by setup.sh from Gavel's repository)")


def point(path: Path) -> tuple[str, float, dict]:
    """A run's policy, rate and window measures: the average JCT (h) of the window's finished
    jobs, how many finished, and the run's cost and date."""
    data = json.loads(path.read_text())
    s = data["summary"]
    start, end = s["window"]
    window = [v for k, v in data["jct_s"].items() if start <= int(k) < end]
    ended = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc)
    return s["policy"], float(s["rate"]), {
        "hours": round(sum(window) / len(window) / 3600, 4) if window else None,
        "finished": len(window), "window_jobs": end - start,
        "cpu_s": s["cpu_s"], "date": ended.strftime("%Y-%m-%d %H:%M UTC")}


def collect(git_dir: str, paths: list[Path]) -> dict:
    """Every run's point by Gavel policy and rate, with how they were made."""
    commit = subprocess.run(["git", f"--git-dir={git_dir}", "rev-parse", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()
    points: dict[str, dict[str, dict]] = {}
    for path in sorted(paths, key=lambda p: p.stat().st_mtime):
        policy, rate, measured = point(path)
        points.setdefault(policy, {})[f"{rate:g}"] = measured
    return {"source": "Gavel's simulator (stanford-futuredata/gavel, MIT), run unchanged",
            "gavel_commit": commit, "command": COMMAND,
            "window": "jobs 4000-4999, multi-GPU (Philly's scale factors), seed 0, "
                      "36 V100 + 36 P100 + 36 K80, rounds of 360 s, solver ECOS",
            "points": {p: dict(sorted(v.items(), key=lambda kv: float(kv[0])))
                       for p, v in sorted(points.items())}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("git_dir", help="the git directory of Gavel's repository")
    parser.add_argument("runs", nargs="+", type=Path, help="run_point.py output files")
    args = parser.parse_args(argv)
    json.dump(collect(args.git_dir, args.runs), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
