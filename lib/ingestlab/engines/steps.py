"""The contract's steps that an engine may lack, and how a step is marked missing."""

from __future__ import annotations

from typing import Any, Callable

from ingestlab.errors import UnsupportedOperationError

#: The contract's steps that an engine may lack (see ``Engine.has``).
STEPS: tuple[str, ...] = (
    "execute", "quote", "table_ddl", "reset_table", "insert_sql", "upsert_sql", "insert_select_sql",
    "count_rows", "data_bytes", "settle",
    "set_session", "statement_call",
    "group_commit_interval_sql",
    "generate_rows_sql", "prepare_insert",
)
#: Steps that are text of the engine's SQL dialect: its :class:`~ingestlab.engines.sql.SQLBuilder` writes them.
SQL_STEPS: tuple[str, ...] = ("quote", "table_ddl", "insert_sql", "upsert_sql", "insert_select_sql",
                              "generate_rows_sql", "group_commit_interval_sql")
#: Steps an adapter implements as a private hook (``engine.tables`` and the timed loops call them): step → hook.
HOOKS: dict[str, str] = {step: "_" + step for step in ("table_ddl", "reset_table", "count_rows", "data_bytes", "settle",
                                                        "prepare_insert", "statement_call")}
#: Steps that exist when another one does (they are implemented over it).
BUILT_ON: dict[str, str] = {"upsert_sql": "upsert_clause",
                            "prepare_insert": "execute", "statement_call": "execute"}


def unsupported(reason: str) -> Callable:
    """Mark a default step of a base class as missing until a subclass implements it."""
    def mark(method: Callable) -> Callable:
        method.__unsupported__ = reason
        return method
    return mark


def switched_off(step: str, reason: str) -> Callable:
    """A method that raises for a step an engine declares in ``Engine.UNSUPPORTED``."""
    def method(self, *args: Any, **kwargs: Any):
        raise UnsupportedOperationError(f"{self.NAME}: no {step}: {reason}")
    method.__name__ = step
    method.__doc__ = f"Not available on this engine: {reason}."
    method.__unsupported__ = reason
    return method


def missing_reason(owner: Any, name: str) -> str | None:
    """Why ``owner``'s method ``name`` is missing (its mark), or None when it is there."""
    return getattr(getattr(owner, name, None), "__unsupported__", None)


def hook(step: str) -> str:
    """The engine attribute that implements ``step`` (a private hook of :data:`HOOKS`, else the step's own name).

    Examples
    --------
    >>> hook("count_rows"), hook("execute")
    ('_count_rows', 'execute')
    """
    return HOOKS.get(step, step)
