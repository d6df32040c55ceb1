"""Notebook 07's analysis: the comparison's notes as text and its headline counts (the statistics are in compare.py)."""

from __future__ import annotations

import pandas as pd

from ingestlab.compare import VERDICTS


def describe_runs(table: pd.DataFrame) -> str:
    """What was compared with what: the comparison's notes (hosts, revisions, load, unmatched quantities), as a list."""
    notes = table.attrs.get("notes") or ["nothing to say about the two runs"]
    return "\n".join(f"- {note}" for note in notes)


def headline(table: pd.DataFrame) -> dict[str, int]:
    """How many quantities were compared, how many got each verdict, and how many the raw samples alone would call changed.

    Examples
    --------
    >>> headline(pd.DataFrame({"verdict": ["same", "slower", "same"], "samples_verdict": ["same", "slower", "faster"]}))
    {'quantities': 3, 'slower': 1, 'faster': 0, 'higher': 0, 'lower': 0, 'same': 2, 'unsure': 0, 'changed_by_samples_alone': 2}
    """
    counts = table["verdict"].value_counts() if "verdict" in table else pd.Series(dtype=int)
    out = {"quantities": int(len(table)), **{v: int(counts.get(v, 0)) for v in VERDICTS}}
    if "samples_verdict" in table:
        out["changed_by_samples_alone"] = int(table["samples_verdict"].isin(["slower", "faster", "higher", "lower"]).sum())
    return out
