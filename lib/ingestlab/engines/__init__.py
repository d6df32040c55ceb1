"""Engine adapters: one folder per engine, registered through the ``ingestlab.engines`` entry point group.

An engine is one folder, ``engines/<name>/``, with the same file names in every folder:
``__init__.py`` (exports the adapter class in ``__all__``), ``adapter.py`` (the class over
:class:`~ingestlab.engines.base.Engine`, with its URL schemes and its figure identity,
``STYLE``), ``sql.py`` (its dialect's SQL builder, if it writes SQL of its own), ``server.py``
(how its local server starts, if it has one), ``profile.py`` (its profile or counter reader,
if it has one), ``reader.py`` (notebook 06's CSV reader on this engine, if it has one: loaded by
file in the scan's child process, so it imports only the engine's library) and ``README.md`` (its docs). An adapter subclasses its nearest relative and
overrides only what differs (``YugabyteDB(Postgres)``, ``MariaDB(MySQL)``); a child's folder
may import its parent's. Code shared by a family and by no one engine stays here: ``base.py``
(the contract, ``Engine``, and ``EngineStyle``), ``registry.py`` (finding adapters),
``drivers.py`` (which Python driver measures), ``steps.py`` (the steps an engine may lack),
``bound.py`` (the base of the small objects bound to one engine: ``engine.sender``, ``engine.tables``, the capabilities),
``sql/`` (the builders' base), ``mysql_protocol.py`` (the MySQL wire protocol's family) and
``stream_load_client.py`` (the Stream Load client of StarRocks and Doris). Nothing outside
an engine's folder names the engine: general code asks the registry.

Adapters are found through the entry point group ``ingestlab.engines`` (name = the engine's
``NAME``, value = ``module:Class``; the lab's own engines are listed in ``pyproject.toml``), so a
package of your own adds an engine without editing this one. Folders named by
``$INGESTLAB_ENGINES`` (``os.pathsep``-separated) are imported by their location: the rule is
that the folder's ``__init__.py`` lists its adapter class(es) in ``__all__``. From a source tree
that was never installed (no distribution metadata) the folders here are read instead, and the
log says so once.

Adding an engine: copy a sibling folder, edit it, add its line to
``[project.entry-points."ingestlab.engines"]`` and ``tests/engines/test_<name>.py`` subclassing
the shared contract test. ``tests/engines/test_engine_folders.py`` writes a whole engine (SQLite,
through the standard library) into a temporary folder and runs notebook 01 on it: the example
to copy.

Examples
--------
>>> from ingestlab import engines
>>> name = engines.names()[0]
>>> engines.class_of(name).NAME == name
True
"""

from ingestlab.engines.base import Engine, EngineStyle, mask_url
from ingestlab.engines.registry import class_of, classes, from_url, get, names, resolve, versions

__all__ = ["Engine", "EngineStyle", "class_of", "classes", "from_url", "get", "mask_url", "names", "resolve",
           "versions"]
