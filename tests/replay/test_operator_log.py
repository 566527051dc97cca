"""An operator's own log as a replay's trace (issue 33, section 2): a table's type and rule
errors reported together."""

from __future__ import annotations

import pytest

from fairalloc.errors import SpecError
from fairalloc.replay.document import load

HETERO = {"replay": "log", "kind": "hetero", "cluster": {"workers": {"v100": 1}},
          "mechanism": {"name": "ideal"}, "measure": {"finish_time_fairness": False}}
A3C = "A3C"


def write(tmp_path, text: str, name: str = "jobs.csv") -> str:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return name


def refusal(tmp_path, data: dict) -> str:
    with pytest.raises(SpecError) as caught:
        load(data, tmp_path)
    return caught.value.report()


# --- all of a table's errors at once ------------------------------------------------------

def test_a_tables_type_errors_and_rule_errors_are_reported_together(tmp_path):
    write(tmp_path, f"id,arrival,model,scale_factor,steps\na,0,{A3C},1,-5\nb,x,{A3C},1,9\n"
                    f"c,0,{A3C},3,9\nd,0,{A3C},1,y\n")
    report = refusal(tmp_path, {**HETERO, "trace": {"table": "jobs.csv"}})
    assert "line 2, column 'steps': -5 is not above 0" in report, report
    assert "line 3, column 'arrival': 'x' is not a number" in report, report
    assert "line 4, column 'scale_factor'" in report, report
    # a cell not of its type is named once, never judged again as the 0 left in its place
    assert [line for line in report.splitlines() if "line 5" in line] == \
        ["  line 5, column 'steps': 'y' is not a number (steps is a number)"], report
