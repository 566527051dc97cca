"""``levels.TiedQueue`` against the tie rule taken literally: each time, of the participants
whose level is within a relative ``TIE`` of the lowest, the one listed first; with levels that
tie exactly (identical users), an ulp or two apart, just outside the tie, and pushes made while
the queue is being taken from (as the DRF and ETF loops do)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fairalloc.levels import TiedQueue

TIE = 1e-12
# relative offsets from a few base levels: exact ties, ulps, inside and just outside TIE
OFFSETS = (0.0, 0.0, 2.2e-16, 0.4e-12, 0.9e-12, 1.1e-12, 1.6e-12, 1e-3)
level = st.builds(lambda base, offset: base * (1 + offset),
                  st.sampled_from((0.0, 1.0, 2.0, 3.0)), st.sampled_from(OFFSETS))


def literal_order(entries: list[tuple[int, float]], pushes: list[float | None]) -> list[int]:
    """The rule by brute force: after the k-th participant taken, ``pushes[k]`` (if not None)
    puts it back at that level."""
    queued, out = dict(entries), []
    while queued:
        low = min(queued.values())
        i = min(j for j, v in queued.items() if v <= low * (1 + TIE))
        del queued[i]
        if len(out) < len(pushes) and pushes[len(out)] is not None:
            queued[i] = pushes[len(out)]
        out.append(i)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(level, min_size=1, max_size=12), st.lists(st.none() | level, max_size=30))
def test_taken_in_the_tie_rules_order(levels, pushes):
    entries = list(enumerate(levels))
    queue, out = TiedQueue(entries, TIE), []
    for i in queue:
        if len(out) < len(pushes) and pushes[len(out)] is not None:
            queue.push(pushes[len(out)], i)
        out.append(i)
    assert out == literal_order(entries, pushes)
