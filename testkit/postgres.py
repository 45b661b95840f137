"""A throwaway PostgreSQL cluster: for the tests' session (`tests/support/postgres.py`
wraps it in fixtures) and for the benches that measure against a real server.

The server binaries come from BIAS_TEST_PG_BIN (scripts/test sets it, through
scripts/postgres, which installs Debian's `postgresql` package when it is missing),
else /usr/lib/postgresql/*/bin (newest first), else `initdb` on PATH: `find_bin_dir()`.

The cluster: `initdb` into a fresh temporary folder, run by an unprivileged user (the
current one; as root, the system user `biastest`, created when missing, or Debian's
`postgres` when it cannot be), listening on 127.0.0.1 only, on a free port, with its
unix socket in that folder (0700). Unix-socket connections are trusted; TCP ones need
the superuser's password, random per session and part of every URL: with `trust` on
127.0.0.1 every local account could connect as superuser and run programs as the
cluster's user. Durability is off (fsync, synchronous_commit, full_page_writes): the
cluster is thrown away. A cluster left behind by a killed session is stopped and
removed by the next one.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from testkit.servers import free_port

SEARCH = "/usr/lib/postgresql/*/bin"
TOOLS = ("initdb", "pg_ctl", "postgres", "psql")
HOST = "127.0.0.1"
PREFIX = "bias-pg-"
OWNER_FILE = "owner.pid"
# As root: the cluster's user, created when missing (or Debian's own, when it cannot be).
SYSTEM_USER = "biastest"
FALLBACK_USER = "postgres"
SETTINGS = {
    "listen_addresses": HOST,
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}
_BIND_FAILED = re.compile(r"could not (bind|create listen socket)|already in use", re.I)


def _has_server(folder: Path) -> bool:
    return all(os.access(folder / tool, os.X_OK) for tool in TOOLS)


def _version_key(folder: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", folder.parent.name))


def find_bin_dir(env: Mapping[str, str] = os.environ, search: str = SEARCH) -> Path | None:
    """The folder holding initdb, pg_ctl, postgres and psql, or None."""
    if env.get("BIAS_TEST_PG_BIN"):
        folder = Path(env["BIAS_TEST_PG_BIN"])
        return folder if _has_server(folder) else None
    for folder in sorted(map(Path, glob.glob(search)), key=_version_key, reverse=True):
        if _has_server(folder):
            return folder
    found = shutil.which("initdb", path=env.get("PATH", os.defpath))
    if found:
        folder = Path(found).resolve().parent
        if _has_server(folder):
            return folder
    return None


def _clean_env() -> dict[str, str]:
    """This process's environment without PG* variables, which could redirect the tools."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"
    return env


def _system_user() -> pwd.struct_passwd:
    """As root: the unprivileged user to run the cluster as, created when missing."""
    for attempt in range(2):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(SYSTEM_USER)
        if attempt == 0 and shutil.which("useradd"):
            # A concurrent session may create it first: look again either way.
            _run(
                [
                    *("useradd", "--system", "--no-create-home", "--user-group"),
                    *("--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", SYSTEM_USER),
                ]
            )
    try:
        return pwd.getpwnam(FALLBACK_USER)
    except KeyError:
        raise RuntimeError(
            f"running as root, and neither user {SYSTEM_USER!r} (useradd failed) nor "
            f"{FALLBACK_USER!r} exists to run the PostgreSQL test cluster as"
        ) from None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class PgCluster:
    """A running throwaway cluster. `url(name)` is a database's URL in it."""

    bin_dir: Path
    root: Path  # the temporary folder: data/, the unix socket, the server log
    port: int
    user: str  # the superuser, named after the OS user the cluster runs as
    password: str
    os_uid: int
    os_gid: int
    server_version_num: int = 0
    start_seconds: float = 0.0
    _names: Iterator[int] = field(default_factory=itertools.count, repr=False)
    _stopped: bool = field(default=False, repr=False)

    host = HOST

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log_file(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/{database}"

    def psql(self, *commands: str, database: str = "postgres") -> str:
        """Run SQL commands (each its own transaction) as the superuser, over the socket."""
        argv = [str(self.bin_dir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"]
        argv += ["-h", str(self.root), "-p", str(self.port), "-U", self.user, "-d", database]
        for command in commands:
            argv += ["-c", command]
        done = _run(argv, cwd=self.root, uid=self.os_uid, gid=self.os_gid)
        if done.returncode != 0:
            raise RuntimeError(f"psql {commands!r} failed: {done.stderr.strip()}")
        return done.stdout.strip()

    def create_database(self, name: str | None = None) -> str:
        """Create a database (a unique name unless given) and return its name."""
        name = name or f"t_{os.getpid()}_{next(self._names)}_{secrets.token_hex(3)}"
        self.psql(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        """Drop a database, terminating its connections first."""
        if self.server_version_num >= 130000:
            self.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            return
        terminate = (
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        )
        self.psql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false', terminate)
        self.psql(f'DROP DATABASE IF EXISTS "{name}"')

    def postmaster_pid(self) -> int:
        return int((self.data_dir / "postmaster.pid").read_text().split()[0])

    def halt(self) -> None:
        """Stop the server (fast shutdown: sessions are ended), keeping its data."""
        _stop_server(self.bin_dir, self.data_dir, self.os_uid, self.os_gid)

    def resume(self) -> None:
        """Start the halted server again on its port."""
        pg_ctl = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-l", str(self.log_file)]
        pg_ctl += ["-o", f"-p {self.port}", "-w", "-t", "60", "-s", "start"]
        _check(_run(pg_ctl, cwd=self.root, uid=self.os_uid, gid=self.os_gid))

    def stop(self) -> None:
        """Stop the server and remove its folder; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        try:
            _stop_server(self.bin_dir, self.data_dir, self.os_uid, self.os_gid)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _run(
    argv: list[str], *, cwd: Path | None = None, uid: int | None = None, gid: int | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a command, its output captured, without PG* variables; as root, as uid:gid."""
    switch = os.geteuid() == 0 and uid not in (None, 0)
    return subprocess.run(
        argv,
        env={**_clean_env(), "PGCONNECT_TIMEOUT": "10"},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        user=uid if switch else None,
        group=gid if switch else None,
        extra_groups=[] if switch else None,
    )


def _check(done: subprocess.CompletedProcess[str], detail: str = "") -> None:
    if done.returncode != 0:
        name = Path(str(done.args[0])).name
        raise RuntimeError(
            f"{name} failed ({done.returncode}):\n{done.stdout}{done.stderr}{detail}"
        )


def _stop_server(bin_dir: Path, data_dir: Path, uid: int, gid: int) -> None:
    if not (data_dir / "postmaster.pid").exists():
        return
    for mode in ("fast", "immediate"):
        pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(data_dir), "-m", mode, "-w", "-t", "30"]
        if _run([*pg_ctl, "stop"], cwd=data_dir.parent, uid=uid, gid=gid).returncode == 0:
            return


def sweep_stale(bin_dir: Path, tmp: Path | None = None) -> None:
    """Stop and remove the clusters of sessions that died without cleaning up."""
    for root in Path(tmp or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        if root.is_symlink() or not root.is_dir():
            continue
        try:
            owner = int((root / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue  # not ours, or still being set up
        if _pid_alive(owner):
            continue
        info = root.stat()
        if os.geteuid() not in (0, info.st_uid):
            continue
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            _stop_server(bin_dir, root / "data", info.st_uid, info.st_gid)
        shutil.rmtree(root, ignore_errors=True)


def start_cluster(bin_dir: Path, *, attempts: int = 5) -> PgCluster:
    """initdb and start a throwaway cluster; the caller must stop() it."""
    began = time.monotonic()
    sweep_stale(bin_dir)
    if os.geteuid() == 0:
        account = _system_user()
        uid, gid, user = account.pw_uid, account.pw_gid, account.pw_name
    else:
        uid, gid = os.geteuid(), os.getegid()
        user = pwd.getpwuid(uid).pw_name
    root = Path(tempfile.mkdtemp(prefix=PREFIX))
    (root / OWNER_FILE).write_text(str(os.getpid()))
    os.chown(root, uid, gid)  # mkdtemp made it 0700
    password = secrets.token_urlsafe(24)
    cluster = PgCluster(bin_dir, root, 0, user, password, uid, gid)
    try:
        pwfile = root / "pwfile"
        pwfile.write_text(password + "\n")
        os.chown(pwfile, uid, gid)
        pwfile.chmod(0o600)
        initdb = [str(bin_dir / "initdb"), "-D", str(cluster.data_dir), "-U", user]
        initdb += [f"--pwfile={pwfile}", "--auth-local=trust", "--auth-host=scram-sha-256"]
        initdb += ["--encoding=UTF8", "--locale=C", "--no-sync"]
        _check(_run(initdb, cwd=root, uid=uid, gid=gid))
        pwfile.unlink()
        settings = {**SETTINGS, "unix_socket_directories": str(root)}
        with (cluster.data_dir / "postgresql.conf").open("a") as conf:
            conf.write("\n# testkit/postgres.py: a throwaway cluster\n")
            conf.writelines(f"{key} = '{value}'\n" for key, value in settings.items())
        for attempt in range(attempts):
            cluster.port = free_port()
            pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(cluster.data_dir)]
            pg_ctl += ["-l", str(cluster.log_file), "-o", f"-p {cluster.port}", "-w", "-t", "60"]
            done = _run([*pg_ctl, "-s", "start"], cwd=root, uid=uid, gid=gid)
            if done.returncode == 0:
                break
            log = cluster.log_file.read_text(errors="replace") if cluster.log_file.exists() else ""
            if attempt + 1 < attempts and _BIND_FAILED.search(log):
                continue  # someone took the port between free_port() and the bind
            _check(done, f"\nthe server log:\n{log[-2000:]}")
        cluster.server_version_num = int(cluster.psql("SHOW server_version_num"))
    except BaseException:
        cluster.stop()
        raise
    cluster.start_seconds = time.monotonic() - began
    return cluster
