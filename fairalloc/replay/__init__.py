"""Replays: a kind's policy over time on a trace of arriving jobs (``fairalloc replay``).

Shared code: it names no kind; a kind takes part through its ``Kind.replay`` record.
"""
