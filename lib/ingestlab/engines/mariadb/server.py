"""MariaDB from the machine's own installation, in a private data directory under ``.lab/``."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import ClassVar

from ingestlab.errors import EngineUnavailableError, ServerError
from ingestlab.polling import poll_or_error
from ingestlab.servers.base import PID_FILE, LocalServer, _terminate, free_port
from ingestlab.servers.templates import Template, build_identity

#: Environment variable naming the one directory that holds ``mariadbd`` and ``mariadb-install-db``
#: (a MariaDB tarball's ``bin``); unset, they are looked up on PATH and in /usr/sbin.
BIN_DIR_ENV = "INGESTLAB_MARIADB_BIN_DIR"
#: How to get the binaries, for the error raised when they are missing.
INSTALL_HINT = ("install MariaDB 10.11 (Debian/Ubuntu: `apt-get install -y mariadb-server mariadb-client`, "
                f"no service needs to run) or point ${BIN_DIR_ENV} at the directory holding mariadbd; "
                "or use a running server through its URL, e.g. mariadb://root@127.0.0.1:3306/ingestlab "
                "(compose/mariadb.yml)")

# Option names are passed as ``--name=value``; MariaDB reads ``-`` and ``_`` alike.
_SETTING_NAME = re.compile(r"^[a-z][a-z0-9_]*(?:[-.][a-z0-9_]+)*$")
_SERVER_BINARIES = ("mariadbd", "mariadb-install-db")
_ACCESS_DENIED = 1045


def find_binary(name: str) -> Path:
    """The path of MariaDB program ``name`` (``mariadbd``, ``mariadb-slap``...).

    Raises
    ------
    EngineUnavailableError
        When it is not installed, saying how to install it.
    """
    bin_dir = os.environ.get(BIN_DIR_ENV)
    # Debian installs mariadbd in /usr/sbin, which a non-root PATH usually lacks
    search = bin_dir if bin_dir else os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])
    found = shutil.which(name, path=search)
    if found is None:
        where = f"in ${BIN_DIR_ENV}={bin_dir}" if bin_dir else "on PATH or in /usr/sbin"
        raise EngineUnavailableError(f"MariaDB's {name} is not installed ({where}): {INSTALL_HINT}")
    return Path(found)


class MariaDBServer(LocalServer):
    """A private ``mariadbd``: its own data directory and private socket, root with a random password.

    The data directory is created once with ``mariadb-install-db``; the server then runs
    with ``--no-defaults`` (no ``/etc/mysql`` file is read) as the OS user ``mysql`` when the
    lab runs as root, listens only on a socket in its private 0700 directory
    (``--skip-networking``; ``tcp=True`` adds a free port on 127.0.0.1 for a client that
    needs TCP), accepts only ``root@localhost`` with :attr:`password`, and logs (0600) to
    ``mariadbd.err`` in the server directory. Settings are command-line options ``--name=value``,
    so :meth:`restart` is a stop and a start with the new options, and
    ``information_schema.SYSTEM_VARIABLES.GLOBAL_VALUE_ORIGIN`` reads ``COMMAND-LINE`` for
    each. The server runs as a child of this process in its own session; ``server.pid``
    holds its pid for :func:`~ingestlab.servers.base.reap`; SIGTERM shuts it down cleanly.
    """

    KIND = "mariadb"
    SYSTEM_USER = "mysql"  # Debian's package creates it
    #: Database created on first start; :meth:`connect_kwargs` selects it.
    DATABASE: ClassVar[str] = "ingestlab"
    #: Seconds to wait for the server to accept connections, and for it to exit on SIGTERM.
    START_TIMEOUT_S: ClassVar[float] = 60.0
    STOP_TIMEOUT_S: ClassVar[float] = 60.0
    #: Seconds a ``mariadbd`` stopped while it starts (not yet accepting a login) has to act on SIGTERM before
    #: SIGKILL: one still initialising left it pending past the 60 s above (2 of 6 and 1 of 6 stops 1 s into a
    #: start, 2026-11-30), and it has nothing to flush yet that a crash recovery would not redo.
    STARTING_STOP_S: ClassVar[float] = 3.0
    #: Options the lab sets itself; a setting may not override them.
    RESERVED: ClassVar[frozenset[str]] = frozenset({
        "datadir", "socket", "port", "bind_address", "user", "pid_file", "log_error", "basedir",
        "defaults_file", "defaults_extra_file", "no_defaults", "skip_networking", "skip_grant_tables",
    })

    @property
    def installed(self) -> bool:
        """Whether ``mariadb-install-db`` has made the data directory (its system tables' folder is there)."""
        return (self.datadir / "mysql").is_dir()

    def __init__(self, directory=None, *, keep: bool = False, tcp: bool = False):
        super().__init__(directory, keep=keep)
        self.binaries = {name: find_binary(name) for name in _SERVER_BINARIES}
        self.tcp = tcp
        self.port: int | None = None
        self._proc: subprocess.Popen | None = None

    # -- paths -----------------------------------------------------------------------------
    @property
    def datadir(self) -> Path:
        """The server's data directory."""
        return self.directory / "data"

    @property
    def socket_path(self) -> Path:
        """The server's Unix socket (in its private socket directory, made on first use)."""
        return self.private_socket_dir() / "mariadb.sock"

    @property
    def log_file(self) -> Path:
        """The server's error log."""
        return self.directory / "mariadbd.err"

    def log_tail(self, n_chars: int = 2000) -> str:
        """The end of the error log (for error messages)."""
        try:
            return self.log_file.read_text(errors="replace")[-n_chars:]
        except OSError:
            return "(no log written)"

    # -- lifecycle ---------------------------------------------------------------------------
    def _start(self) -> None:
        _check_settings(self.settings, self.RESERVED)
        self.private_socket_dir()
        first = not self.installed
        if first:
            self._install()
        self._launch()
        if first:
            self._secure()

    def _install(self) -> None:
        """The data folder: a copy of this build's template, else ``mariadb-install-db`` (then kept as the template).

        Either holds only ``root@localhost`` without a password, reachable on the private socket alone,
        until :meth:`_secure` runs on the first start.
        """
        self.private_file(self.log_file)
        options = ["--no-defaults", "--auth-root-authentication-method=normal", "--skip-test-db", *self._user_option()]
        template = Template("mariadb", [*build_identity(*self.binaries.values()), *options])
        if template.copy_into(self.datadir):
            return
        log = self.private_file(self.directory / "install.log")
        args = [str(self.binaries["mariadb-install-db"]), *options, f"--datadir={self.datadir}",
                f"--tmpdir={self.tmpdir}"]
        try:
            with open(log, "wb") as out:
                subprocess.run(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                               check=True, timeout=120, env=_private_umask())
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            raise ServerError(f"mariadb-install-db failed: {exc}\n{log.read_text(errors='replace')[-2000:]}") from exc
        template.keep(self.datadir, "")

    def _secure(self) -> None:
        """Leave one account, ``root@localhost`` with :attr:`password`, and create the database."""
        import pymysql

        with pymysql.connect(unix_socket=str(self.socket_path), user="root", password="") as conn, \
                conn.cursor() as cur:
            cur.execute("SELECT User, Host FROM mysql.global_priv WHERE User <> 'mariadb.sys' "
                        "AND NOT (User = 'root' AND Host = 'localhost')")
            for user, host in cur.fetchall():
                cur.execute("DROP USER %s@%s", (user, host))
            cur.execute("ALTER USER root@localhost IDENTIFIED BY %s", (self.password,))
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{self.DATABASE}`")

    def _user_option(self) -> list[str]:
        user = self.system_user()
        if user is not None:
            return [f"--user={user.pw_name}"]
        return ["--user=root"] if os.geteuid() == 0 else []  # mariadbd refuses root without it

    @property
    def tmpdir(self) -> Path:
        """The server's own temporary folder: with ``/tmp``, two servers starting together collide on the
        names of their temporary tables (``#sql-temptable-…``) and one's install fails."""
        path = self.private_socket_dir() / "tmp"  # under /tmp: the server's user can reach it from any checkout
        if not path.exists():
            path.mkdir()
            self.give(path, 0o700)
        return path

    def command(self) -> list[str]:
        """The ``mariadbd`` command line for the current :attr:`settings`."""
        network = [f"--port={self.port}", "--bind-address=127.0.0.1"] if self.tcp else ["--skip-networking"]
        args = [str(self.binaries["mariadbd"]), "--no-defaults", f"--datadir={self.datadir}",
                f"--socket={self.socket_path}", *network, f"--pid-file={self.directory / 'mariadbd.pid'}",
                f"--log-error={self.log_file}", f"--tmpdir={self.tmpdir}", *self._user_option()]
        return args + [f"--{name}={value}" for name, value in self.settings.items()]

    def _launch(self) -> None:
        if self.tcp and self.port is None:
            self.port = free_port()
        with open(self.private_file(self.log_file), "ab") as log:
            self._proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=log, start_new_session=True, env=_private_umask())
        (self.directory / PID_FILE).write_text(f"{self._proc.pid}\n")
        self._wait_ready()

    def _wait_ready(self) -> None:
        """Poll the socket with a real login until it works, the process exits, or time is up."""
        import pymysql

        def accepts_login() -> bool:
            if self._proc.poll() is not None:
                raise ServerError(f"mariadbd exited with code {self._proc.returncode} while starting; "
                                  f"log {self.log_file}:\n{self.log_tail()}")
            if not self.socket_path.exists():
                return False
            try:
                pymysql.connect(**self._login_kwargs(), connect_timeout=2).close()
            except pymysql.err.OperationalError as exc:
                if exc.args and exc.args[0] == _ACCESS_DENIED:  # up, before _secure set the password
                    return True
                raise
            return True

        accepted, last = poll_or_error(accepts_login, timeout_s=self.START_TIMEOUT_S, interval_s=0.02,
                                       retry_on=pymysql.err.MySQLError)
        if accepted:
            return
        raise ServerError(f"mariadbd did not accept connections within {self.START_TIMEOUT_S:.0f} s "
                          f"(last error: {last}); log {self.log_file}:\n{self.log_tail()}") from last

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # mariadbd shuts down cleanly on SIGTERM
                try:
                    proc.wait(timeout=self.STOP_TIMEOUT_S if self.running else self.STARTING_STOP_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        else:  # started by another object or process: only the pid file is left
            pid = self.pid()
            if pid is not None:
                _terminate(pid, self.STOP_TIMEOUT_S)
        (self.directory / PID_FILE).unlink(missing_ok=True)

    def restart(self, settings: dict[str, str]) -> None:
        """Stop and start with exactly ``settings`` as ``--name=value`` options (``{}`` resets them)."""
        settings = {k: str(v) for k, v in settings.items()}
        _check_settings(settings, self.RESERVED)  # before stopping: a bad name leaves the server up
        self.settings = settings
        if not self.running:
            return
        self._stop()
        self._launch()

    def connect_kwargs(self) -> dict:
        """PyMySQL ``connect()`` arguments: the private socket, ``root`` and its password, database ``ingestlab``."""
        return {**self._login_kwargs(), "database": self.DATABASE}

    def _login_kwargs(self) -> dict:
        return {"unix_socket": str(self.socket_path), "user": "root", "password": self.password}


def unavailable_reason() -> str | None:
    """Why the lab cannot start MariaDB here (binaries missing, with how to install), or None."""
    try:
        find_binary("mariadbd")
        find_binary("mariadb-install-db")
    except EngineUnavailableError as exc:
        return str(exc)
    return None


def _check_settings(settings: dict[str, str], reserved: frozenset[str]) -> None:
    for name, value in settings.items():
        if not _SETTING_NAME.match(name):
            raise ServerError(f"not a MariaDB setting name: {name!r} (lower-case letters, digits, '_', '-')")
        if name.replace("-", "_") in reserved:
            raise ServerError(f"setting name {name!r} is reserved: the lab sets --{name} itself")
        if "\n" in str(value) or "\0" in str(value):
            raise ServerError(f"value of {name} holds a newline or NUL: {value!r}")


def _private_umask() -> dict[str, str]:
    """The environment with mariadbd's own umask variables set so it creates files 0600, folders 0700."""
    return {**os.environ, "UMASK": "0600", "UMASK_DIR": "0700"}
