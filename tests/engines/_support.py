"""Helpers of the engine tests: the real-output corpus, SQL rendering for sqlglot, local HTTP peers, hostile values,
an anatomy pass among samples."""

from __future__ import annotations

import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from ingestlab import datagen

#: ``<repo>/../shared/fixtures/real-output``; INGESTLAB_REAL_OUTPUT overrides it.
CORPUS = Path(os.environ.get("INGESTLAB_REAL_OUTPUT")
              or Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "real-output")
MARKER = "# ---- verbatim sample below this line ----"


#: Text a naive escaping breaks: quotes of both kinds, backslashes (one before a quote, one at the end),
#: placeholders, a percent sign, a tab, a newline, non-ASCII, nothing.
HOSTILE = ["it's", 'say "hi"', "back\\slash\\", "\\'", "?", "%s", "100%", "tab\tnew\nline", "naïve ✓", ""]


def hostile_rows(start: int = 0) -> list[tuple]:
    """A row per :data:`HOSTILE` text, NULLs among the others, and a row of NULLs but its id."""
    seed = datagen.study_rows(len(HOSTILE), seed=start)
    rows = [(start + i, text, None if i % 2 else seed[i][2], None if i % 3 else seed[i][3])
            for i, text in enumerate(HOSTILE)]
    return rows + [(start + len(HOSTILE), None, None, None)]


def corpus_body(category: str, name: str) -> str:
    """The verbatim body of a corpus file (after the first marker line); skip when absent."""
    path = CORPUS / category / name
    if not path.is_file():
        pytest.skip(f"real-output sample {category}/{name} not found under {CORPUS}")
    text = path.read_text(encoding="utf-8")
    head, sep, body = text.partition(MARKER + "\n")
    assert sep, f"{path}: no marker line"
    return body


def corpus_files(category: str) -> list[Path]:
    """Every sample of a corpus category (empty when the corpus is absent)."""
    folder = CORPUS / category
    return sorted(folder.glob("*.txt")) if folder.is_dir() else []


def render(sql: str, params=None) -> str:
    """``sql`` with its ``%s`` parameters as PyMySQL would send them (client-side interpolation)."""
    from pymysql.converters import escape_item

    if params is None:
        return sql
    return sql % tuple(escape_item(p, "utf8mb4") for p in params)


def parse_sql(sql: str, dialect: str) -> exp.Expression:
    """``sql`` parsed by sqlglot's ``dialect``, failing the test on any parse error."""
    return sqlglot.parse_one(sql, read=dialect, error_level=sqlglot.ErrorLevel.RAISE)


def table_names(tree: exp.Expression) -> list[str]:
    """The names of the tables a parsed statement names, in order."""
    return [t.name for t in tree.find_all(exp.Table)]


class Peer:
    """One HTTP server on 127.0.0.1 that records every request and answers as told."""

    def __init__(self, respond):
        self.requests: list[dict] = []
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # so that ``Expect: 100-continue`` is answered

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                peer.requests.append({"method": self.command, "path": self.path,
                                      "headers": dict(self.headers.items()), "body": body})
                status, headers, payload = respond(self)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_PUT = do_GET = _handle

            def log_message(self, *args):  # keep the test output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class FrontendAndBackend:
    """An FE that redirects every Stream Load to a BE on another host name, and that BE.

    The BE is reached as ``localhost`` while the client talks to the FE as ``127.0.0.1``:
    to ``requests`` that is another host, for which it drops the Authorization header.
    """

    def __init__(self, reply: str, profile_text: str = "Summary:\n  - Profile ID: x\n  - Total: 5ms\n"):
        self.reply = reply
        self.profile_text = profile_text
        self.backend = Peer(lambda h: (200, {"Content-Type": "application/json"}, self.reply.encode()))
        self.frontend = Peer(self._frontend)

    def _frontend(self, handler):
        if handler.command == "GET":
            return 200, {"Content-Type": "text/plain"}, self.profile_text.encode()
        location = f"http://localhost:{self.backend.port}{handler.path}"
        return 307, {"Location": location}, b""

    def close(self) -> None:
        self.frontend.close()
        self.backend.close()


class SQLValidator:
    """One-line SQL checks in the dialect of an engine class (sqlglot's ``Validator``, with the dialect from the adapter).

    ``class TestDorisSQL(SQLValidator): engine_class = Doris`` and each case is one call:
    ``self.validate(doris.tables.ddl(...)[0], tables=["t"])``.
    """

    engine_class = None

    @property
    def dialect(self) -> str:
        """The sqlglot dialect of the adapter under test (its ``SQLGLOT_DIALECT``)."""
        return self.engine_class.WIRE.sqlglot_dialect

    def validate(self, sql: str, *, tables: list[str] | None = None) -> exp.Expression:
        """``sql`` parsed in :attr:`dialect` (a parse error fails the test); its tables checked when given."""
        tree = parse_sql(sql, self.dialect)
        assert not isinstance(tree, exp.Command), f"sqlglot's {self.dialect} dialect did not parse it: {sql}"
        if tables is not None:
            assert table_names(tree) == tables, sql
        return tree


def anatomy_among_samples(eng, table: str, *, observed: int = 6, block: int = 40, samples: int = 300):
    """An anatomy pass between two runs of single-row INSERT samples timed as notebook 01 times them.

    The samples are ``statement_call`` + :func:`ingestlab.timing.time_calls` of the same
    single-row INSERT into the same table, ``samples`` before the pass and as many after it (the
    first 20 of each run left out, as warm-up). Returns the anatomy's frame and the samples' median (ms).
    """
    import pandas as pd

    from ingestlab import timing
    from ingestlab.engines.base import STUDY_COLUMNS

    cols = [c for c, _ in STUDY_COLUMNS]
    eng.tables.reset(table, STUDY_COLUMNS)
    insert = eng.sql.insert_sql(table, cols, 1)

    def run(start: int) -> pd.Series:
        calls = [eng.sender.statement_call(insert, r) for r in datagen.study_rows(samples, start_id=start, seed=start % 97)]
        return timing.time_calls(calls, rows=[1] * samples, bytes_=[0] * samples)["elapsed_s"].iloc[20:] * 1e3

    before = run(10**6)
    frame = eng.capability("profiled_statement").anatomy(table, cols, datagen.study_rows(observed, start_id=1, seed=1), warm_up=False,
                                  unobserved_rows=datagen.study_rows(observed * block, start_id=10**4, seed=2))
    after = run(2 * 10**6)
    return frame, float(pd.concat([before, after]).median())
