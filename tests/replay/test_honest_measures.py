"""Honest measures (issue 33 §3): what a replay's measures are taken over, and what a verdict
over the jobs' lives may claim."""

from __future__ import annotations

import re

import pytest
from clitools import ROOT
from test_fairshare import two_tenants

from fairalloc import api


def section(page: str, heading: str) -> str:
    """The text of a docs page's section under ``heading`` (to the next heading)."""
    text = (ROOT / "docs" / page).read_text()
    found = re.search(rf"^#+ {re.escape(heading)}\n(.*?)(?=^#)", text, re.S | re.M)
    assert found, f"no section {heading!r} in docs/{page}"
    return " ".join(found.group(1).split())


def test_a_vanishing_half_life_is_not_half_life_0_and_the_docs_say_so():
    """U_t is normalised by every tenant's usage, so a half-life of 1e-9 s discounts tenant x
    (which held everything before b arrived) exactly as an hour does: b ends at 175 s, as
    with 3600 s, not at 200 s as with the plain policy (half-life 0)."""
    tiny = api.replay(two_tenants(1e-9))
    hour = api.replay(two_tenants(3600.0))
    plain = api.replay(two_tenants(0.0))
    assert tiny.jobs["finish"].tolist() == pytest.approx(hour.jobs["finish"].tolist())
    assert tiny.jobs["finish"].tolist() != pytest.approx(plain.jobs["finish"].tolist())
    text = section("replay.md", "decayed fair share")
    assert "not continuous at 0" in text
    assert "only `half_life_s: 0` is the plain method" in text
