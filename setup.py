"""The one thing pyproject.toml does not say: the C half of ``ingestlab.timing``.

``ingestlab._timing`` runs the per-statement loop with the GIL released, so the harness costs
per statement what pgbench and mariadb-slap cost. Optional: where no C compiler is found the
install goes on, the lab times in Python and labels every sample so (``timer`` = ``python``).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("ingestlab._timing", ["lib/ingestlab/_timing.c"], optional=True)])
