"""Replicated PostgreSQL's capabilities: what a commit waits for, the wait for the standby in the anatomy, tables a standby holds."""

from __future__ import annotations

import math
import statistics
from typing import ClassVar

from ingestlab.engines.capabilities import LinkDelay, Watch
from ingestlab.engines.postgres.capabilities import (
    PostgresCommitVariants,
    PostgresLoadSettings,
    PostgresProfiledStatement,
    PostgresTableModels,
    _StatsRecorder,
)
from ingestlab.engines.postgres_replicated.replication import replication_rows


class ReplicatedCommitVariants(PostgresCommitVariants):
    """``synchronous_commit``: what a commit waits for, from nothing to the standby having applied it."""

    #: From the least waited for to the most: ``off`` (not even the local WAL flush), ``local``
    #: (the local flush), ``remote_write`` (a standby wrote it to its OS), ``on`` (a standby
    #: flushed it to disk), ``remote_apply`` (a standby replayed it: its readers see it).
    VARIANTS: ClassVar[dict[str, dict[str, str]]] = {
        "sync_off": {"synchronous_commit": "off"},
        "sync_local": {"synchronous_commit": "local"},
        "sync_remote_write": {"synchronous_commit": "remote_write"},
        "sync_on": {"synchronous_commit": "on"},
        "sync_remote_apply": {"synchronous_commit": "remote_apply"},
    }


class ReplicatedWatch(Watch):
    """The primary's :class:`~ingestlab.engines.postgres_replicated.replication.SyncWatch`: the standby it stopped waiting for."""

    def cause(self) -> str | None:
        watch = self.engine._watch
        return None if watch is None or watch.cause is None else f"{self.engine.label}: {watch.cause}"


class ReplicatedLinkDelay(LinkDelay):
    """Each standby's replication stream through its own proxy in front of the primary's loopback port.

    The delay is on both directions of the stream: WAL to the standby and its replies (write,
    flush, apply positions) back, so a synchronous commit pays one round trip of it.
    """

    #: ``synchronous_commit = on``, the server's default: a commit waits for the standby's flush.
    WAITING_VARIANT = "sync_on"


class ReplicatedTableModels(PostgresTableModels):
    """PostgreSQL's keyed and unkeyed heap tables; no UNLOGGED one (a standby never receives its rows)."""

    MODELS: ClassVar[dict[str, str]] = {k: v for k, v in PostgresTableModels.MODELS.items() if k != "unlogged"}
    COMMIT_FREE_MODELS: ClassVar[tuple[str, ...]] = ()


class ReplicatedLoadSettings(PostgresLoadSettings):
    """PostgreSQL's load settings but the UNLOGGED table, which is not replicated (its rows would be lost on failover)."""

    SETTINGS = {k: v for k, v in PostgresLoadSettings.SETTINGS.items() if k != "unlogged"}


#: ``synchronous_commit`` → the ``pg_stat_replication`` lag its commits wait for.
LAG_OF = {"remote_write": "write_lag_ms", "on": "flush_lag_ms", "remote_apply": "replay_lag_ms"}


class _SyncRepRecorder(_StatsRecorder):
    """PostgreSQL's parts of a statement (:class:`~ingestlab.engines.postgres.capabilities._StatsRecorder`) plus its wait for a standby.

    * ``sync_rep_wait`` — the standby's share of the commit, from the primary's own lag
      tracker: ``pg_stat_replication``'s ``write_lag`` (``remote_write``), ``flush_lag`` (``on``)
      or ``replay_lag`` (``remote_apply``), read right after the statement from the observer
      connection. The walsender stamps each piece of WAL when it sends it and, when a reply
      confirms it, stores the time since: the confirmation of the statement's own commit,
      which is the reply that released its ``SyncRep`` wait. With several standbys (``ANY 1``)
      the first to confirm releases it: the least lag. It leaves out the walsender's wake-up
      after the local flush and the backend's after the reply (both in ``unexplained``).
      Commits that wait for no standby (``off``, ``local``, no ``synchronous_standby_names``)
      get 0. NaN (not measured) where the primary had already forgotten the lag: it clears it
      when a standby reports having replayed everything in two replies in a row (about one
      observed statement in six on this machine). Unobserved statements get the median over the blocks of the lag read after each
      block's last statement (the lag is a last value, not a cumulative counter), and, where
      they wait for a standby, their block's mean WAL flush (not the mean plus their own excess:
      what varies is the standby's reply as much as the flush).
    """

    ORDER = (*_StatsRecorder.ORDER, "sync_rep_wait")

    def begin(self) -> None:
        super().begin()
        mode = self.engine.execute("SHOW synchronous_commit")[0][0]
        names = self.engine.execute("SHOW synchronous_standby_names")[0][0]
        self.lag_key = LAG_OF.get(mode) if names.strip() else None
        # a commit's time varies with the standby's reply more than with the local flush: no statement's
        # excess over its block's mean is the flush's (each gets the block's mean flush)
        self.flush_varies = self.lag_key is None
        self.why_none = f"synchronous_commit = {mode}" if names.strip() else "no synchronous_standby_names"
        self.block_lags: list[float] = []

    def _lag_ms(self) -> float:
        """The least lag of the standbys the primary waits for (NaN: none measured), 0 when commits wait for none."""
        if self.lag_key is None:
            return 0.0
        rows = replication_rows(lambda sql: self.execute(sql, conn=self.observer))
        lags = [float(r[self.lag_key]) for r in rows if r["sync_state"] in ("sync", "quorum") and r[self.lag_key] is not None]
        return min(lags) if lags else math.nan

    def _source(self) -> str:
        if self.lag_key is None:
            return f"{self.why_none}: commits wait for no standby"
        return f"pg_stat_replication.{self.lag_key[:-3]} of the first standby to confirm (least over the quorum)"

    def statement(self, result, row) -> None:
        lag = self._lag_ms()  # before the ladder's probes commit and move it
        super().statement(result, row)
        self.parts[-1].append(("sync_rep_wait", lag, self._source()))

    def block(self, client_ms) -> None:
        self.block_lags.append(self._lag_ms())
        super().block(client_ms)

    def end(self) -> None:
        super().end()
        if self.blocks:
            lags = [lag for lag in self.block_lags if not math.isnan(lag)]
            part = ("sync_rep_wait", statistics.median(lags) if lags else math.nan,
                    f"{self._source()}, median over {len(lags)} blocks of the value after their last statement")
            self.unobserved_parts = [[*parts, part] for parts in self.unobserved_parts]


class ReplicatedProfiledStatement(PostgresProfiledStatement):
    """PostgreSQL's statistics views around each statement, its ladder of probes, and the wait for the standby."""

    RECORDER = _SyncRepRecorder
