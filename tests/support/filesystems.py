"""Small real filesystems for the store's disk tests: a tmpfs that fills up, and an ext4
image that the kernel turns read-only, as it does after a disk error.

Mounting needs root (the CI runs as root). Without it the tests (marked `mounts`)
skip, unless the run requires mounts (`pytest --require mounts`), when they fail.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.support.resources import missing

__all__ = ["Filler", "ext4_image", "make_read_only", "small_tmpfs"]


def _need_mount() -> None:
    if os.geteuid() == 0 and shutil.which("mount"):
        return
    missing("mounts", "mounting a test filesystem needs root and mount(8)")


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()}")


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (made if need be), unmounted on exit."""
    _need_mount()
    where.mkdir(parents=True, exist_ok=True)
    _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where))
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


@contextlib.contextmanager
def ext4_image(where: Path, size_mb: int = 8) -> Iterator[tuple[Path, str]]:
    """An ext4 filesystem on a loop device, mounted at `where` with
    errors=remount-ro; yields the mount point and the device's name (loopN)."""
    _need_mount()
    image = where.with_suffix(".img")
    with image.open("wb") as file:
        file.truncate(size_mb * 1024 * 1024)
    _run("mkfs.ext4", "-q", "-F", str(image))
    where.mkdir(parents=True, exist_ok=True)
    _run("mount", "-o", "loop,errors=remount-ro", str(image), str(where))
    try:
        device = subprocess.run(
            ["findmnt", "-n", "-o", "SOURCE", str(where)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        yield where, Path(device).name
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)
        image.unlink(missing_ok=True)


def make_read_only(device: str) -> None:
    """What a disk error does to ext4 with errors=remount-ro: writes fail from now on,
    files open or not (Linux refuses a plain remount while files are open to write)."""
    Path(f"/sys/fs/ext4/{device}/trigger_fs_error").write_text("1")


class Filler:
    """A file that takes every free byte of its filesystem, until `remove()`."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "filler"

    def fill(self) -> int:
        written = 0
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            while True:
                written += os.write(fd, b"\0" * 65536)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
        finally:
            os.close(fd)
        return written

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
