"""Local database servers the lab starts itself, in private directories under ``.lab/``.

Each server lives in its own module (``postgres.py``, ``mariadb.py``) and subclasses
:class:`~ingestlab.servers.base.LocalServer`. :func:`~ingestlab.servers.base.reap` stops any
server left running under a directory, which the batch runner calls after every run so that
an interrupted notebook leaves no process behind.
"""

from ingestlab.servers.base import LocalServer, reap

__all__ = ["LocalServer", "reap"]
