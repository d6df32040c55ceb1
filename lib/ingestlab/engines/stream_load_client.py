"""Stream Load, the HTTP bulk path of StarRocks and Doris: a PUT to the FE, redirected to a backend."""

from __future__ import annotations

import base64
import dataclasses
import re
import uuid
from typing import Any, Iterable, Sequence
from urllib.parse import quote, urljoin, urlsplit

from ingestlab import timing
from ingestlab.errors import ConfigError, LoadError, ProfileParseError

#: What the ``column_separator`` header says (StarRocks and Doris read ``\xNN`` as one byte),
#: and the byte itself: a control character no text value of the lab holds.
COLUMN_SEPARATOR_HEADER = "\\x01"
COLUMN_SEPARATOR = "\x01"
#: Stream Load's CSV spelling of NULL.
NULL = "\\N"
#: Reply statuses of a load whose data is committed (``Publish Timeout``: visible shortly).
COMMITTED = ("Success", "Publish Timeout")
_REDIRECTS = (301, 302, 303, 307, 308)
_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclasses.dataclass(frozen=True)
class StreamLoadResult:
    """One Stream Load as the client saw it.

    Attributes
    ----------
    table : str
        The table loaded into.
    label : str or None
        The label sent (None when the server chose it, e.g. for a Doris group commit).
    http_status : int
        Status of the final HTTP response.
    urls : tuple of str
        The FE URL, then every redirect target (the backend that took the data).
    reply : dict
        The reply object, as the server wrote it.
    summary : dict
        The reply parsed by ``ingestlab.profiles`` (``status``, ``loaded_rows``,
        ``load_time_ms`` and its parts...).
    client_ms : float
        Client wall clock from the first request to the last reply.
    """

    table: str
    label: str | None
    http_status: int
    urls: tuple[str, ...]
    reply: dict
    summary: dict
    client_ms: float

    @property
    def status(self) -> str | None:
        """The reply's ``Status``."""
        return self.summary.get("status")


class StreamLoadClient:
    """PUT ``http://<fe>:<http_port>/api/{db}/{table}/_stream_load``, following the FE's redirect.

    The FE answers a Stream Load with ``307 Temporary Redirect`` to a backend's HTTP port;
    the data and the credentials must go there too (curl's ``--location-trusted``).
    ``requests`` drops the ``Authorization`` header when a redirect leaves the host, so the
    client follows redirects itself and sends the same headers, basic auth included, to
    every hop (at most ``max_redirects``). ``requests`` cannot wait for ``100 Continue``,
    so the body also goes to the FE, which answers the redirect after the headers; for the
    lab's loads (kilobytes to megabytes on a LAN) that costs one extra transfer. The
    session ignores the environment (no proxy, no ``.netrc`` that could replace the auth
    header).

    Parameters
    ----------
    host : str
        The FE's host.
    http_port : int
        The FE's HTTP port (StarRocks and Doris default: 8030).
    database : str
        The database (the ``{db}`` of the path).
    user, password : str
        Basic-auth credentials (the SQL user).
    timeout_s : float
        Timeout of each HTTP request.
    max_redirects : int
        How many redirects to follow.
    """

    def __init__(self, host: str, http_port: int, database: str, user: str, password: str | None = None, *,
                 timeout_s: float = 600.0, max_redirects: int = 3):
        import requests

        if not database:
            raise ConfigError("TARGET", f"{host}:{http_port}", "a URL with a database (…/ingestlab): "
                              "Stream Load needs /api/{db}/{table}")
        self.host, self.http_port, self.database = host, int(http_port), database
        self.timeout_s, self.max_redirects = timeout_s, max_redirects
        token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
        self._auth = f"Basic {token}"
        self.session = requests.Session()
        self.session.trust_env = False

    def __repr__(self) -> str:
        return f"StreamLoadClient(http://{self.host}:{self.http_port}, database={self.database!r})"

    def close(self) -> None:
        """Close the HTTP session."""
        self.session.close()

    def url(self, table: str) -> str:
        """The FE's Stream Load URL for ``table``.

        Examples
        --------
        >>> StreamLoadClient("127.0.0.1", 8030, "ingestlab", "root").url("my table")
        'http://127.0.0.1:8030/api/ingestlab/my%20table/_stream_load'
        """
        return (f"http://{self.host}:{self.http_port}/api/{quote(self.database, safe='')}/"
                f"{quote(table, safe='')}/_stream_load")

    def headers(self, columns: Sequence[str], *, label: str | None = None,
                extra: dict[str, str] | None = None) -> dict[str, str]:
        """The request headers: auth, ``Expect: 100-continue``, CSV format, separator, columns, label.

        Examples
        --------
        >>> h = StreamLoadClient("h", 8030, "db", "root").headers(["id", "name"], label="l1")
        >>> h["columns"], h["column_separator"], h["label"], h["Expect"]
        ('id,name', '\\\\x01', 'l1', '100-continue')
        """
        for column in columns:
            if not _COLUMN.match(column):
                raise ConfigError("columns", column, "column names of letters, digits and '_' (the columns header "
                                  "is a comma-separated list)")
        headers = {"Authorization": self._auth, "Expect": "100-continue", "format": "csv",
                   "column_separator": COLUMN_SEPARATOR_HEADER, "columns": ",".join(columns)}
        if label is not None:
            headers["label"] = label
        headers.update(extra or {})
        return headers

    def load(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], *,
             label: str | None = "auto", extra_headers: dict[str, str] | None = None) -> StreamLoadResult:
        """Load ``rows`` into ``table``; raise :class:`LoadError` unless the data is committed.

        ``label="auto"`` makes a fresh label (:func:`make_label`); ``None`` sends none.
        """
        if label == "auto":
            label = make_label(table)
        result = self.put(table, encode_rows(rows), self.headers(columns, label=label, extra=extra_headers))
        if result.status not in COMMITTED:
            message = result.summary.get("message") or result.reply
            error_url = result.summary.get("error_url")
            raise LoadError(f"Stream Load into {self.database}.{table} (label {result.label}) failed: "
                            f"{result.status}: {message}" + (f"; rows rejected: {error_url}" if error_url else ""))
        return result

    def put(self, table: str, body: bytes, headers: dict[str, str]) -> StreamLoadResult:
        """PUT ``body`` with ``headers``, following redirects with the same headers; parse the reply."""
        import requests

        url = self.url(table)
        urls = [url]
        with timing.Stopwatch() as clock:
            try:
                for _ in range(self.max_redirects + 1):
                    response = self.session.put(url, data=body, headers=headers, allow_redirects=False,
                                                timeout=self.timeout_s)
                    location = response.headers.get("Location")
                    if response.status_code not in _REDIRECTS or not location:
                        break
                    url = urljoin(url, location)
                    if urlsplit(url).scheme not in ("http", "https"):
                        raise LoadError(f"Stream Load redirected to a non-HTTP URL: {url}")
                    urls.append(url)
                else:
                    raise LoadError(f"Stream Load into {table}: more than {self.max_redirects} redirects: {urls}")
            except requests.RequestException as exc:
                raise LoadError(f"Stream Load into {table} at {url}: {exc}") from exc
        client_ms = clock.elapsed_ns / 1e6
        reply, summary = parse_reply(response.text, response.status_code, url)
        return StreamLoadResult(table=table, label=headers.get("label"), http_status=response.status_code,
                                urls=tuple(urls), reply=reply, summary=summary, client_ms=client_ms)

    def get_text(self, path: str, params: dict[str, str] | None = None) -> str:
        """GET ``path`` on the FE's HTTP API with the same credentials (Doris's profile API)."""
        import requests

        url = f"http://{self.host}:{self.http_port}{path}"
        try:
            response = self.session.get(url, params=params, headers={"Authorization": self._auth},
                                        timeout=self.timeout_s)
        except requests.RequestException as exc:
            raise LoadError(f"GET {url}: {exc}") from exc
        if response.status_code != 200:
            raise LoadError(f"GET {url}: HTTP {response.status_code}: {response.text[:300]}")
        return response.text


def parse_reply(text: str, http_status: int = 200, url: str = "") -> tuple[dict, dict]:
    """The last reply object in ``text`` and its summary (``ingestlab.profiles`` stream-load parser).

    Raises
    ------
    LoadError
        When the response holds no reply (an HTML error page, an empty body).
    """
    from ingestlab.profiles import stream_load

    try:
        summary = stream_load.parse(text).summary
        reply = stream_load.replies(text)[-1][1]
    except ProfileParseError as exc:
        raise LoadError(f"HTTP {http_status} from {url}: not a Stream Load reply ({exc}): {text[:300]!r}") from exc
    return reply, summary


def encode_rows(rows: Iterable[Sequence[Any]]) -> bytes:
    r"""Rows as Stream Load CSV: fields joined by ``\x01``, rows by ``\n``, NULL as ``\N``.

    Examples
    --------
    >>> encode_rows([(1, "a", None)])
    b'1\x01a\x01\\N\n'
    """
    lines = []
    for row in rows:
        fields = []
        for value in row:
            text = NULL if value is None else str(value)
            if COLUMN_SEPARATOR in text or "\n" in text or "\r" in text:
                raise ConfigError("rows", text[:40], "values without \\x01 or line breaks (Stream Load CSV)")
            fields.append(text)
        lines.append(COLUMN_SEPARATOR.join(fields) + "\n")
    return "".join(lines).encode("utf-8")


def make_label(table: str) -> str:
    """A fresh Stream Load label: ``ingestlab_<table>_<random hex>`` (letters, digits, ``_``, ``-``).

    Examples
    --------
    >>> make_label("my table").startswith("ingestlab_my_table_")
    True
    """
    return f"ingestlab_{re.sub(r'[^A-Za-z0-9_-]', '_', table)[:64]}_{uuid.uuid4().hex[:16]}"

