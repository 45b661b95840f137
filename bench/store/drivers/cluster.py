"""The scenario's own throwaway PostgreSQL cluster, with the default durability settings."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pg_bin(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    if not versions:
        raise SystemExit("no PostgreSQL server binaries: pass --pg-bin")
    return versions[-1]


class Cluster:
    """initdb into a temporary folder, start on 127.0.0.1, and remove it all at the end."""

    def __init__(self, pg_bin: Path) -> None:
        self.pg_bin = pg_bin
        self.folder = Path(tempfile.mkdtemp(prefix="store-drivers-"))
        self.data = self.folder / "data"
        self.port = _free_port()
        self.started = False
        self.as_postgres = os.geteuid() == 0

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_postgres else []
        subprocess.run([*prefix, *command], check=True, stdout=subprocess.DEVNULL, cwd=self.folder)

    def start(self) -> None:
        if self.as_postgres:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run(
            str(self.pg_bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
        )
        options = (
            f"-c port={self.port} -c listen_addresses=127.0.0.1"
            f" -c unix_socket_directories={self.folder}"
        )
        self._run(
            str(self.pg_bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.folder / "server.log"),
            "-o",
            options,
            "-w",
            "start",
        )
        self.started = True

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def stop(self) -> None:
        try:
            if self.started:
                self._run(str(self.pg_bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
