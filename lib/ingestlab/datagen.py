"""Deterministic test data: the seed's INSERT rows and the upsert study's documents."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np

_BASE_DATE = dt.date(2024, 1, 15)


def seed_rows(n: int, *, start_id: int = 0, seed: int = 0) -> list[tuple]:
    """``n`` rows for the seed's table ``(id BIGINT, name VARCHAR(100), amount DECIMAL(10,2), dt DATE)``.

    Ids are ``start_id … start_id + n − 1``; names, amounts and dates come from ``seed``.

    Examples
    --------
    >>> seed_rows(2, start_id=10, seed=1)[0][0], len(seed_rows(2)[1])
    (10, 4)
    """
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype="S1")
    lengths = rng.integers(4, 21, n)
    cents = rng.integers(0, 10_000_000, n)
    days = rng.integers(0, 365, n)
    rows = []
    for i in range(n):
        name = b"".join(rng.choice(letters, lengths[i])).decode()
        rows.append((start_id + i, name, Decimal(int(cents[i])).scaleb(-2), _BASE_DATE + dt.timedelta(days=int(days[i]))))
    return rows


def row_bytes(row: tuple) -> int:
    """Payload bytes of a row as text (what a CSV line of it would carry, without separators)."""
    return sum(len(str(v)) for v in row)
