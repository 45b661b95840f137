"""The PostgreSQL test harness (tests/support/postgres.py, scripts/postgres) does what it says:
a real server, fresh isolated databases, an unprivileged owner, loopback only."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg
import pytest

from testkit.postgres import PgCluster, find_bin_dir
from tests.support import resources
from tests.support.apt_scripts import run_script, stub_tools
from tests.support.postgres import databases, unavailable

ROOT = Path(__file__).resolve().parents[1]


async def test_a_fresh_database_takes_a_table(pg_url: str) -> None:
    conn = await asyncpg.connect(pg_url)
    try:
        assert (await conn.fetchval("SELECT version()")).startswith("PostgreSQL ")
        await conn.execute("CREATE TABLE scores (id text PRIMARY KEY, score real NOT NULL)")
        await conn.executemany("INSERT INTO scores VALUES ($1, $2)", [("a", 0.25), ("b", 0.75)])
        rows = await conn.fetch("SELECT id, score FROM scores ORDER BY id")
        assert [tuple(row) for row in rows] == [("a", 0.25), ("b", 0.75)]
    finally:
        await conn.close()


async def test_databases_from_the_factory_are_isolated(make_pg_url: Callable[[], str]) -> None:
    first, second = make_pg_url(), make_pg_url()
    assert first != second
    one, two = await asyncpg.connect(first), await asyncpg.connect(second)
    try:
        names = {await conn.fetchval("SELECT current_database()") for conn in (one, two)}
        assert len(names) == 2
        await one.execute("CREATE TABLE only_here (x int)")
        await one.execute("INSERT INTO only_here VALUES (1)")
        assert await two.fetchval("SELECT to_regclass('only_here')") is None
        await two.execute("CREATE TABLE only_here (x int)")  # no clash: its own namespace
        assert await two.fetchval("SELECT count(*) FROM only_here") == 0
    finally:
        await one.close()
        await two.close()


async def test_the_databases_are_dropped_even_while_in_use(pg_cluster: PgCluster) -> None:
    def exists(name: str) -> bool:
        return pg_cluster.psql(f"SELECT count(*) FROM pg_database WHERE datname = '{name}'") == "1"

    with databases(pg_cluster) as make:
        urls = [make(), make()]
        names = [url.rsplit("/", 1)[1] for url in urls]
        assert all(map(exists, names))
        held = await asyncpg.connect(urls[0])  # still open when the factory drops it
    try:
        assert not any(map(exists, names))
        # Terminated by the drop: the server's FATAL, or the closed socket, whichever is seen.
        with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError)):
            await held.fetchval("SELECT 1")
    finally:
        held.terminate()
    pg_cluster.drop_database(names[0])  # gone already: no error


def test_the_cluster_runs_as_an_unprivileged_user(pg_cluster: PgCluster) -> None:
    data_directory = pg_cluster.psql("SELECT current_setting('data_directory')")
    assert os.stat(data_directory).st_uid == pg_cluster.os_uid != 0
    status = Path(f"/proc/{pg_cluster.postmaster_pid()}/status").read_text()
    uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
    assert {int(uid) for uid in uids} == {pg_cluster.os_uid}  # real, effective, saved, fs
    assert (pg_cluster.root.stat().st_mode & 0o777) == 0o700  # the unix socket's folder


def _listeners(port: int) -> set[str]:
    """The addresses with a TCP socket listening on `port`, from /proc/net."""
    if not Path("/proc/net/tcp").exists():
        pytest.skip("no /proc/net/tcp to read the listening sockets from")
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if fields[3] == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


async def test_the_cluster_listens_on_loopback_only(pg_cluster: PgCluster) -> None:
    assert _listeners(pg_cluster.port) == {"0100007F"}  # 127.0.0.1, nothing on IPv6
    conn = await asyncpg.connect(pg_cluster.url())
    try:
        assert await conn.fetchval("SHOW listen_addresses") == "127.0.0.1"
        assert str(await conn.fetchval("SELECT inet_server_addr()")) == "127.0.0.1"
    finally:
        await conn.close()


async def test_tcp_connections_need_the_password(pg_cluster: PgCluster) -> None:
    anonymous = f"postgresql://{pg_cluster.user}@127.0.0.1:{pg_cluster.port}/postgres"
    with pytest.raises(
        (asyncpg.InvalidPasswordError, asyncpg.InvalidAuthorizationSpecificationError)
    ):
        await asyncpg.connect(anonymous, password="wrong")


def test_durability_is_off_for_speed(pg_cluster: PgCluster) -> None:
    shown = pg_cluster.psql("SHOW fsync", "SHOW synchronous_commit", "SHOW full_page_writes")
    assert shown.split() == ["off", "off", "off"]


# Where the binaries are missing: skip on a workstation, fail where the run requires them.


def test_a_missing_server_skips_unless_the_run_requires_it(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "BIAS_TEST_PG_SKIP": "no server here"}
    assert find_bin_dir(env, search=str(tmp_path / "*" / "bin")) is None
    with pytest.raises(pytest.skip.Exception, match="no server here"), _requiring(set()):
        unavailable(env)


def test_a_missing_server_fails_where_the_run_requires_it() -> None:
    failed = pytest.raises(pytest.fail.Exception, match=r"no server here .*--require postgres")
    with failed, _requiring({"postgres", "browser"}):
        unavailable({"BIAS_TEST_PG_SKIP": "no server here"})


@contextlib.contextmanager
def _requiring(names: set[str]) -> Iterator[None]:
    saved = set(resources._required)
    resources._required.clear()
    resources._required.update(names)
    try:
        yield
    finally:
        resources._required.clear()
        resources._required.update(saved)


def test_the_newest_server_is_found_first(tmp_path: Path) -> None:
    for version in ("9.6", "15", "13"):
        folder = tmp_path / version / "bin"
        folder.mkdir(parents=True)
        for tool in ("initdb", "pg_ctl", "postgres", "psql"):
            (folder / tool).write_text("#!/bin/sh\n")
            (folder / tool).chmod(0o755)
    search = str(tmp_path / "*" / "bin")
    assert find_bin_dir({"PATH": ""}, search=search) == tmp_path / "15" / "bin"
    chosen = {"BIAS_TEST_PG_BIN": str(tmp_path / "13" / "bin")}
    assert find_bin_dir(chosen, search=search) == tmp_path / "13" / "bin"


def _script(
    tmp_path: Path, *, root: bool = False, apt: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    """Run scripts/postgres with nothing on PATH but the tools it uses, and stubs of
    `id` (root or not) and, when `apt` is given, `apt-get` (that shell code, args logged)."""
    tools = Path(tempfile.mkdtemp(dir=tmp_path, prefix="tools-"))
    uses = ("sort", "dirname", "readlink", "tail", "mktemp")
    stub_tools(tools, uses, root=root, apt=apt, log=tmp_path / "apt.log")
    search = str(tmp_path / "lib" / "*" / "bin")
    return run_script(
        "postgres",
        "bin",
        tools=tools,
        tmp_path=tmp_path,
        env={"BIAS_TEST_PG_SEARCH": search, **env},
    )


def _fake_server(folder: Path) -> str:
    """Shell code that makes a fake server in folder (what installing the package does)."""
    tools = " ".join(str(folder / tool) for tool in ("initdb", "pg_ctl", "postgres", "psql"))
    mkdir, touch, chmod = (shutil.which(name) for name in ("mkdir", "touch", "chmod"))
    return f"{mkdir} -p {folder} && {touch} {tools} && {chmod} +x {tools}"


def test_the_script_installs_the_server_when_root_with_apt(tmp_path: Path) -> None:
    folder = tmp_path / "lib" / "15" / "bin"
    installs = f'case "$1" in install) {_fake_server(folder)};; esac'
    done = _script(tmp_path, root=True, apt=installs)
    assert (done.returncode, done.stdout.strip()) == (0, str(folder))
    assert done.stderr.count("\n") == 1  # one line: what it does, and where the log is
    assert "installing PostgreSQL from Debian's packages" in done.stderr
    assert (tmp_path / "apt.log").read_text().splitlines() == [
        "update -qq []",
        "install -y -qq --no-install-recommends postgresql [noninteractive]",
    ]


def test_a_failed_install_is_an_error_even_outside_ci(tmp_path: Path) -> None:
    done = _script(tmp_path, root=True, apt='echo "E: Unable to locate package"; exit 100')
    assert done.returncode == 1
    assert "apt-get install postgresql failed" in done.stderr
    assert "E: Unable to locate package" in done.stderr  # the log's end, shown
    assert done.stdout == ""


@pytest.mark.parametrize("how", ["not root", "no apt-get", "BIAS_TEST_PG_INSTALL=0"])
def test_the_script_warns_and_gives_the_skip_reason_when_it_cannot_install(
    tmp_path: Path, how: str
) -> None:
    env = {"BIAS_TEST_PG_INSTALL": "0"} if how.startswith("BIAS") else {}
    apt = "" if how == "no apt-get" else "exit 100"
    done = _script(tmp_path, root=how != "not root", apt=apt, **env)
    assert done.returncode == 3
    assert "not found" in done.stdout
    assert "warning" in done.stderr
    assert "skipped" in done.stderr
    assert not (tmp_path / "apt.log").exists()


def test_the_script_fails_in_ci_when_it_cannot_install(tmp_path: Path) -> None:
    done = _script(tmp_path, CI="true")
    assert done.returncode == 1
    assert "error" in done.stderr
    assert done.stdout == ""


def test_the_script_prints_the_newest_folder_it_finds(tmp_path: Path) -> None:
    for version in ("13", "16"):
        subprocess.run(["sh", "-c", _fake_server(tmp_path / "lib" / version / "bin")], check=True)
    done = _script(tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, str(tmp_path / "lib" / "16" / "bin"))
    chosen = str(tmp_path / "lib" / "13" / "bin")
    done = _script(tmp_path, BIAS_TEST_PG_BIN=chosen)
    assert (done.returncode, done.stdout.strip()) == (0, chosen)
    done = _script(tmp_path, root=True, apt="exit 100", BIAS_TEST_PG_BIN=str(tmp_path))
    assert (done.returncode, done.stdout) == (1, "")  # a wrong choice: an error, no install
    assert "BIAS_TEST_PG_BIN" in done.stderr
    assert not (tmp_path / "apt.log").exists()
