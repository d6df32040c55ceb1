"""Where a synchronous commit that stalls is held: the primary's walsender or its standby, read every 20 ms.

    python bench/walsender_stalls.py [--statements 20000] [--mode remote_write] [--major 18]

One client sends single-row autocommit INSERTs to the lab's replicated PostgreSQL (a primary and one
standby, ``postgres_replicated``) under ``synchronous_commit = MODE``; ``--major 15`` runs Debian's
PostgreSQL 15 binaries in the same server class. A thread reads the primary's flushed WAL position and
``pg_stat_replication``, and the standby's ``pg_stat_wal_receiver``, every 20 ms. For every statement
slower than 0.2 s it prints the first, middle and last readings taken during it; at the end, the number
of such stalls and their lengths. Run it alone (under ``flock /tmp/ingestlab-quiet.lock``); what it
found is in ``lib/ingestlab/engines/postgres_replicated/README.md``.
"""

from __future__ import annotations

import argparse
import collections
import threading

import psycopg2

from ingestlab import timing
from ingestlab.engines.postgres.server import DebianPostgresServer
from ingestlab.engines.postgres_replicated.adapter import PostgresReplicated
from ingestlab.engines.postgres_replicated.server import ReplicatedPostgresServer

#: A statement at least this slow (seconds) is a stall.
STALL_S = 0.2
#: Seconds between two readings of both nodes.
READ_EVERY_S = 0.02
PRIMARY = ("SELECT pg_current_wal_flush_lsn()::text, sent_lsn::text, write_lsn::text, flush_lsn::text, "
           "(SELECT wait_event FROM pg_stat_activity WHERE backend_type = 'walsender') FROM pg_stat_replication")
STANDBY = "SELECT written_lsn::text, flushed_lsn::text FROM pg_stat_wal_receiver"


class _DebianReplicated(ReplicatedPostgresServer):
    """The replicated server on Debian's binaries of :attr:`MAJOR` (as :class:`DebianPostgresServer`)."""

    bin_dir = DebianPostgresServer.bin_dir
    _prepare_binaries = DebianPostgresServer._prepare_binaries


def _read(primary, standby, readings: collections.deque, stop: threading.Event) -> None:
    with primary.cursor() as p, standby.cursor() as s:
        while not stop.wait(READ_EVERY_S):
            p.execute(PRIMARY)
            s.execute(STANDBY)
            readings.append((timing.now_ns(), p.fetchone(), s.fetchone()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", type=int, default=20000)
    parser.add_argument("--mode", default="remote_write", choices=["local", "remote_write", "on", "remote_apply"])
    parser.add_argument("--major", default="18", help="18: the embedded wheel; another: Debian's binaries")
    args = parser.parse_args()
    engine = PostgresReplicated()
    if args.major != "18":
        engine.server = type("DebianReplicated", (_DebianReplicated,), {"MAJOR": args.major})(standbys=1)
    engine.start()
    readers, stop, readings, reader = [], threading.Event(), collections.deque(maxlen=5000), None
    try:
        server = engine.server
        print(engine.execute("SELECT version()")[0][0].split(" on ")[0], f"synchronous_commit = {args.mode}")
        for kwargs in (server.connect_kwargs(), server.standby_connect_kwargs(server.standbys[0])):
            readers.append(psycopg2.connect(**kwargs))
            readers[-1].autocommit = True
        reader = threading.Thread(target=_read, args=(*readers, readings, stop), daemon=True)
        reader.start()
        client = psycopg2.connect(**server.connect_kwargs())
        client.autocommit = True
        stalls = []
        with client.cursor() as cur:
            cur.execute("DROP TABLE IF EXISTS stall_probe; CREATE TABLE stall_probe (i int)")
            cur.execute(f"SET synchronous_commit = {args.mode}")
            for i in range(args.statements):
                started = timing.now_ns()
                cur.execute("INSERT INTO stall_probe VALUES (%s)", [i])
                took = (timing.now_ns() - started) / 1e9
                if took < STALL_S:
                    continue
                stalls.append(took)
                during = [r for r in list(readings) if started <= r[0]]
                print(f"statement {i}: {took:.3f} s, {len(during)} readings")
                for at, (flushed, sent, written, synced, waits), (received, received_flushed) in (
                        during[:1] + during[len(during) // 2:len(during) // 2 + 1] + during[-1:]):
                    print(f"  +{(at - started) / 1e9:6.3f} s  primary flushed {flushed} sent {sent}, standby "
                          f"reported write {written} flush {synced}; standby wrote {received} flushed "
                          f"{received_flushed}; walsender waits on {waits}")
        client.close()
        print(f"{len(stalls)} stalls in {args.statements} statements:", ", ".join(f"{s:.2f}" for s in stalls))
    finally:
        stop.set()
        if reader is not None:
            reader.join()
        for conn in readers:
            conn.close()
        engine.close()


if __name__ == "__main__":
    main()
