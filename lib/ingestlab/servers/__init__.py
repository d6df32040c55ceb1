"""Local database servers the lab starts itself, in private directories under ``.lab/``.

Each engine's server lives in its engine's folder (``engines/<name>/server.py``) and subclasses
:class:`~ingestlab.servers.base.LocalServer`, the generic part kept here. :func:`~ingestlab.servers.base.reap` stops any
server left running under a directory, which the batch runner calls after every run so that
an interrupted notebook leaves no process behind.
"""

from ingestlab.servers.base import LocalServer, reap

__all__ = ["LocalServer", "reap"]
