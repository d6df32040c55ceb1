"""A toy two-process "cluster" for notebook 08's tests: a client and a private MariaDB, the link between them delayed."""

from .adapter import ToyLink

__all__ = ["ToyLink"]
