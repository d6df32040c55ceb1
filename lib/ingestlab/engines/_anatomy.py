"""The tidy frame every ``statement_anatomy`` returns, built from per-statement parts."""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

#: A part of one statement: (component, ms, source).
Part = tuple[str, float, str]
#: A measure of one statement that is not a part of its time: (component, ms, count, source).
Extra = tuple[str, float, float, str]


def anatomy_frame(pass_name: str, client_ms: Sequence[float], parts: Sequence[Sequence[Part]], *,
                  extras: Sequence[Sequence[Extra]] | None = None, counters: dict[str, tuple[float, str]] | None = None,
                  remainder: str = "other") -> pd.DataFrame:
    """Per-statement rows and their means, in the shape of :meth:`Engine.statement_anatomy`.

    Pass ``pass_name`` has, per statement: ``client_total`` (the client's wall clock), each
    part (repeated names summed), ``remainder`` = client total − sum of the parts, and the
    extras (measures that are not parts of the time: counts, or a time inside a part).
    Statement 0 is flagged ``warmup`` when there are more: right after ``CREATE TABLE`` it
    also opens the table. Pass ``stats`` (``statement_no = -1``) has the mean over the other
    statements of ``client_total``, every part and the remainder, so its ``ms`` rows other
    than ``client_total`` add up to it, then one ``count`` row per counter (ms NaN).

    Examples
    --------
    >>> f = anatomy_frame("stages", [1.0, 0.5, 0.7], [[("commit", 0.6, "s")], [("commit", 0.2, "s")],
    ...                                               [("commit", 0.4, "s")]])
    >>> f[f["pass"] == "stats"].set_index("component")["ms"].round(3).to_dict()
    {'client_total': 0.6, 'commit': 0.3, 'other': 0.3}
    """
    rows = []
    for i, total in enumerate(client_ms):
        summed: dict[str, list] = {}
        for name, ms, source in parts[i]:
            entry = summed.setdefault(name, [0.0, source])
            entry[0] += ms
        rows.append({"pass": pass_name, "statement_no": i, "component": "client_total", "ms": total,
                     "source": "client perf_counter_ns"})
        rows += [{"pass": pass_name, "statement_no": i, "component": k, "ms": v, "source": src}
                 for k, (v, src) in summed.items()]
        rows.append({"pass": pass_name, "statement_no": i, "component": remainder,
                     "ms": total - sum(v for v, _ in summed.values()), "source": "client_total - sum of the parts"})
        for name, ms, count, source in (extras[i] if extras else ()):
            rows.append({"pass": pass_name, "statement_no": i, "component": name, "ms": ms, "count": count,
                         "source": source, "extra": True})
    frame = pd.DataFrame(rows)
    if "extra" not in frame.columns:
        frame["extra"] = False
    frame["extra"] = frame["extra"].astype("boolean").fillna(False).astype(bool)
    frame["warmup"] = (frame["statement_no"] == 0) & (len(client_ms) > 1)
    timed = frame[~frame["warmup"] & ~frame["extra"]]
    wide = timed.pivot_table(index="statement_no", columns="component", values="ms", aggfunc="sum", sort=False)
    means = wide.fillna(0.0).mean()  # a part a statement skipped took 0 ms in it
    sources = timed.drop_duplicates("component").set_index("component")["source"]
    stats = [{"pass": "stats", "statement_no": -1, "component": c, "ms": float(means[c]), "warmup": False,
              "source": f"mean over {len(wide)} statements of {sources[c]}"} for c in wide.columns]
    stats += [{"pass": "stats", "statement_no": -1, "component": name, "ms": math.nan, "count": value,
               "warmup": False, "source": source} for name, (value, source) in (counters or {}).items()]
    out = pd.concat([frame.drop(columns="extra"), pd.DataFrame(stats)], ignore_index=True)
    if "count" not in out.columns:
        out["count"] = math.nan
    return out[["pass", "statement_no", "component", "ms", "count", "source", "warmup"]]
