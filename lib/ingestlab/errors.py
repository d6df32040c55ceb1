"""The exceptions ingestlab raises, under one base class."""

from __future__ import annotations


class IngestlabError(Exception):
    """Raised when anything in ingestlab fails; the base of every lab error."""


class ConfigError(IngestlabError, ValueError):
    """Raised when a parameter, URL or setting is invalid, before any server starts.

    Parameters
    ----------
    name : str
        The parameter's name, as the user wrote it (``"N"``, ``"TARGET"``).
    value : object
        The value that was given. A URL in it (or in a list of them) is kept and shown with
        its password masked (:func:`ingestlab.conninfo.mask_url`): an error is printed, logged
        and written into run folders, and no caller has to remember to mask first.
    accepted : str
        What would have been accepted, in words (``"an integer > 0"``).

    Examples
    --------
    >>> str(ConfigError("ENGINES", "arangodb://root:hunter2@127.0.0.1:8529/db", "postgres or mysql"))
    "ENGINES='arangodb://root:***@127.0.0.1:8529/db' is not valid: expected postgres or mysql"
    """

    def __init__(self, name: str, value: object, accepted: str):
        self.name = name
        self.value = _masked(value)
        self.accepted = accepted
        super().__init__(f"{name}={self.value!r} is not valid: expected {accepted}")


def _masked(value: object) -> object:
    """``value`` with the password of every URL in it masked (a list or tuple item by item); other values as given.

    Examples
    --------
    >>> _masked(["mysql://u@h/db?passwd=pw", 3])
    ['mysql://u@h/db?passwd=***', 3]
    """
    if isinstance(value, (list, tuple)):
        return type(value)(_masked(item) for item in value)
    if not isinstance(value, str):
        return value
    from ingestlab.conninfo import is_url, mask_url  # here, not above: conninfo raises these errors

    if not is_url(value):
        return value
    try:
        return mask_url(value)
    except Exception:  # too malformed to parse: nothing after the scheme is shown
        return value.split("://", 1)[0] + "://***"


class EngineUnavailableError(IngestlabError):
    """Raised when an engine cannot be started or reached on this machine."""


class ServerError(IngestlabError):
    """Raised when a local server the lab manages fails to start, restart or stop."""


class ConnectionClosedError(IngestlabError):
    """Raised when a statement built for a connection is run after that connection was closed."""


class LoadError(IngestlabError):
    """Raised when a server rejects a bulk load (a Stream Load reply whose status is not success)."""


class UnsupportedOperationError(IngestlabError):
    """Raised when an engine is asked for something it does not support."""


class ProfileParseError(IngestlabError, ValueError):
    """Raised when a profile, EXPLAIN output or load reply cannot be parsed.

    Parameters
    ----------
    message : str
        What was wrong.
    line_no : int, optional
        The 1-based line number of the offending line, when known.
    line : str, optional
        The offending line's text.
    """

    def __init__(self, message: str, line_no: int | None = None, line: str | None = None):
        self.line_no = line_no
        self.line = line
        where = f" (line {line_no}: {line.strip()[:120]!r})" if line_no is not None else ""
        super().__init__(message + where)


class ConstraintError(IngestlabError):
    """Raised when a write would break a key constraint (an insert of a key that exists)."""


class DataLossError(IngestlabError):
    """Raised when a table or store holds a different number of rows or keys than were written."""


class WrongAnswerError(IngestlabError):
    """Raised when an engine's answer to a query differs from the one the data's generator knows."""


class ClientCrashError(IngestlabError):
    """Raised when a client process of the concurrency driver dies or fails before its run ends."""


class PreflightError(IngestlabError):
    """Raised when a target, the output folder or the disk fails the checks made before a notebook starts."""


class RunError(IngestlabError):
    """Raised when a notebook fails during a run: one line with the root cause, the traceback in a log.

    Parameters
    ----------
    notebook : str
        The notebook's name.
    cause : str
        The root cause in one line (``"OperationalError: server closed the connection"``).
    log : path
        The file holding the full traceback.
    exit_code : int
        The ``ingestlab`` exit code for this kind of failure (see ``ingestlab.cli``).
    """

    def __init__(self, notebook: str, cause: str, log, exit_code: int):
        self.notebook = notebook
        self.cause = cause
        self.log = log
        self.exit_code = exit_code
        super().__init__(f"{notebook} failed: {cause} (traceback: {log})")


class FitLeftOut(UserWarning):
    """A group of a fit had too few points for a line and was left out (the sentence says which).

    A warning, not an error: the notebook shows it and goes on (:mod:`ingestlab.models` raises it).
    """
