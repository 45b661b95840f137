"""The Dockerfile, read without a container engine, and the lock it installs.

A small parser of our own reads the instructions (continuations joined, comments
dropped); the tests check what the image must keep: the base, a HEALTHCHECK that
works without curl, the /data volume, a non-root user, the dependency layer before
the source, COPY sources that exist and are not .dockerignored, port 8080, the serve
command, and a lock that is current (`scripts/lock --check`, offline).
"""

from __future__ import annotations

import json
import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath
from typing import ClassVar

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = "requirements/lock.txt"
SOURCE = {"pyproject.toml", "README.md", "guard", "gateway", "config"}


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    line: int

    def words(self) -> list[str]:
        """The arguments: the JSON (exec) form as it is, the shell form split like a shell."""
        if self.args.startswith("["):
            words: list[str] = json.loads(self.args)
            return words
        return shlex.split(self.args)


def parse(text: str) -> list[Instruction]:
    """Dockerfile instructions in order; `\\` continues a line, `#` lines are comments."""
    instructions: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if not pending:
            start = number
        continued = line.endswith("\\")
        pending.append(line[:-1].strip() if continued else line)
        if not continued:
            keyword, _, args = " ".join(p for p in pending if p).partition(" ")
            instructions.append(Instruction(keyword.upper(), args.strip(), start))
            pending = []
    assert not pending, "the Dockerfile ends inside a continued line"
    return instructions


@pytest.fixture(scope="module")
def dockerfile() -> list[Instruction]:
    return parse((ROOT / "Dockerfile").read_text(encoding="utf-8"))


def _all(instructions: list[Instruction], keyword: str) -> list[Instruction]:
    return [i for i in instructions if i.keyword == keyword]


def _env(instructions: list[Instruction]) -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction in _all(instructions, "ENV"):
        for word in shlex.split(instruction.args):
            name, _, value = word.partition("=")
            env[name] = value
    return env


def _copies(instructions: list[Instruction]) -> list[tuple[int, list[str]]]:
    """(index, sources) of each COPY/ADD: the words but the last, less the --flags."""
    found = []
    for index, instruction in enumerate(instructions):
        if instruction.keyword in ("COPY", "ADD"):
            words = [w for w in instruction.words() if not w.startswith("--")]
            found.append((index, words[:-1]))
    return found


def _healthcheck_code(instructions: list[Instruction]) -> str:
    (check,) = _all(instructions, "HEALTHCHECK")
    options, cmd, command_json = check.args.partition("CMD ")
    assert cmd, "HEALTHCHECK has no CMD"
    assert {o.partition("=")[0] for o in options.split()} <= {
        "--interval",
        "--timeout",
        "--start-period",
        "--retries",
    }
    command: list[str] = json.loads(command_json)
    assert command[:2] == ["python3", "-c"], command
    return command[2]


def test_the_parser_joins_continuations_and_skips_comments() -> None:
    text = '# c\nFROM a:b\n\nENV A=1 \\\n    # inside\n    B=2\nCMD ["x", "y"]\n'
    instructions = parse(text)
    assert [(i.keyword, i.line) for i in instructions] == [("FROM", 2), ("ENV", 4), ("CMD", 7)]
    assert _env(instructions) == {"A": "1", "B": "2"}
    assert instructions[2].words() == ["x", "y"]


def test_the_base_is_python_3_11_slim(dockerfile: list[Instruction]) -> None:
    assert dockerfile[0].keyword == "FROM"
    assert [i.args for i in _all(dockerfile, "FROM")] == ["python:3.11-slim"]


def test_everything_runs_from_a_venv_made_with_the_bases_python3(
    dockerfile: list[Instruction],
) -> None:
    # python3 is /usr/local/bin/python3 in the official image, /usr/bin/python3 on Debian's.
    env = _env(dockerfile)
    assert env["PATH"].startswith("/opt/venv/bin:")
    first_run = _all(dockerfile, "RUN")[0].args
    assert first_run.startswith("python3 -m venv /opt/venv")


def test_the_healthcheck_asks_the_gateway_without_curl(dockerfile: list[Instruction]) -> None:
    (check,) = _all(dockerfile, "HEALTHCHECK")
    assert "curl" not in check.args
    assert "wget" not in check.args
    code = _healthcheck_code(dockerfile)
    assert re.search(r"/(healthz|readyz)\b", code)
    assert "'8080'" in code  # the default of $GATEWAY_PORT, as in config/gateway.yaml


class _Health(BaseHTTPRequestHandler):
    status = 200
    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.paths.append(self.path)
        self.send_response(self.status)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def health_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        _Health.status = 200
        _Health.paths.clear()


def _run_healthcheck(code: str, port: int) -> int:
    env = {**os.environ, "GATEWAY_PORT": str(port)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True).returncode


def test_the_healthcheck_command_passes_on_200_and_fails_otherwise(
    dockerfile: list[Instruction], health_server: ThreadingHTTPServer
) -> None:
    code = _healthcheck_code(dockerfile)
    port = health_server.server_address[1]
    assert _run_healthcheck(code, port) == 0
    _Health.status = 503  # /readyz while starting or draining
    assert _run_healthcheck(code, port) != 0
    assert _Health.paths == ["/readyz", "/readyz"]
    health_server.shutdown()
    health_server.server_close()
    assert _run_healthcheck(code, port) != 0  # nothing listening


def test_the_store_is_in_the_data_volume(dockerfile: list[Instruction]) -> None:
    volumes = [w for v in _all(dockerfile, "VOLUME") for w in v.words()]
    assert volumes == ["/data"]
    store = PurePosixPath(_env(dockerfile)["BIAS_STORE_PATH"])
    assert store.is_absolute()
    assert store.parent == PurePosixPath("/data")
    # The folder exists and belongs to the user before VOLUME, so a new volume does too.
    (volume,) = (n for n, i in enumerate(dockerfile) if i.keyword == "VOLUME")
    before = " ".join(i.args for i in dockerfile[:volume] if i.keyword == "RUN")
    assert "mkdir -p /data" in before
    assert "chown gateway /data" in before


def test_the_gateway_does_not_run_as_root(dockerfile: list[Instruction]) -> None:
    users = _all(dockerfile, "USER")
    assert users, "no USER: the gateway would run as root"
    user = users[-1].args.partition(":")[0]
    assert user not in ("root", "0")
    assert any("useradd" in r.args and user in r.args for r in _all(dockerfile, "RUN"))
    (cmd,) = (n for n, i in enumerate(dockerfile) if i.keyword == "CMD")
    assert dockerfile.index(users[-1]) < cmd


def test_the_pinned_dependencies_are_installed_before_the_source_is_copied(
    dockerfile: list[Instruction],
) -> None:
    copies = _copies(dockerfile)
    (lock_copy,) = (n for n, sources in copies if LOCK in sources)
    first_source = min(n for n, sources in copies if SOURCE & set(sources))
    runs = [(n, i.args) for n, i in enumerate(dockerfile) if i.keyword == "RUN"]
    (lock_install,) = (n for n, args in runs if f"-r {LOCK}" in args)
    assert lock_copy < lock_install < first_source
    assert "--require-hashes" in dockerfile[lock_install].args
    assert "--no-deps" in dockerfile[lock_install].args
    # The project itself: after the source, and without touching the pinned dependencies.
    (project_install,) = (n for n, args in runs if re.search(r"pip install .*\s\.(\s|$)", args))
    assert project_install > max(n for n, sources in copies if SOURCE & set(sources))
    assert "--no-deps" in dockerfile[project_install].args


def _glob(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern as Docker reads it: `*` and `?` stop at `/`, `**` does not."""
    out, rest = "", pattern.strip("/")
    while rest:
        if rest.startswith("**/"):
            out, rest = out + "(?:.*/)?", rest[3:]
        elif rest.startswith("**"):
            out, rest = out + ".*", rest[2:]
        elif rest[0] == "*":
            out, rest = out + "[^/]*", rest[1:]
        elif rest[0] == "?":
            out, rest = out + "[^/]", rest[1:]
        else:
            out, rest = out + re.escape(rest[0]), rest[1:]
    return re.compile(out)


def _dockerignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore leaves `path` (or a folder above it) out of the context."""
    parts = PurePosixPath(path).parts
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        glob = _glob(pattern.removeprefix("!"))
        if any(glob.fullmatch(candidate) for candidate in candidates):
            ignored = not negate
    return ignored


def test_every_copied_path_exists_and_is_in_the_build_context(
    dockerfile: list[Instruction],
) -> None:
    ignore = ROOT / ".dockerignore"
    patterns = [
        line.strip()
        for line in ignore.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    sources = [s for _, group in _copies(dockerfile) for s in group]
    # What `pip install .` builds from: the project, its readme and its packages.
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    needed = {LOCK, "pyproject.toml", pyproject["project"]["readme"], *packages, "config"}
    assert needed <= set(sources), f"not copied: {needed - set(sources)}"
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: not in the repo"
        assert not _dockerignored(source, patterns), f"COPY {source}: .dockerignore drops it"
    assert _dockerignored(".venv", patterns)
    assert _dockerignored("gateway/__pycache__", patterns)


def test_the_dockerignore_matcher() -> None:
    patterns = ["**/__pycache__", "*.db", "tests", "!tests/keep"]
    assert _dockerignored("gateway/demo/__pycache__", patterns)
    assert _dockerignored("x.db", patterns)
    assert not _dockerignored("config/x.db", patterns)  # `*.db` is the top folder only
    assert _dockerignored("tests/a.py", patterns)
    assert not _dockerignored("tests/keep", patterns)
    assert not _dockerignored("gateway", patterns)
    assert _dockerignored("a/b/c.db", ["**/*.db"])
    assert _dockerignored("c.db", ["**/*.db"])
    assert not _dockerignored("c.dbx", ["**/*.db"])


def test_port_environment_and_command(dockerfile: list[Instruction]) -> None:
    assert [w for e in _all(dockerfile, "EXPOSE") for w in e.words()] == ["8080"]
    env = _env(dockerfile)
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    (cmd,) = _all(dockerfile, "CMD")
    assert cmd.args.startswith("["), "CMD in exec form: the gateway gets SIGTERM itself"
    serve = ["bias-gateway", "serve", "--config", "config/gateway.yaml", "--host", "0.0.0.0"]
    assert cmd.words() == serve
    assert (ROOT / "config" / "gateway.yaml").is_file()
    assert "${GATEWAY_PORT:-8080}" in (ROOT / "config" / "gateway.yaml").read_text()


# The lock ------------------------------------------------------------------------------


def _image_requirements() -> list[str]:
    """What the image installs: guard's dependencies and the gateway extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["gateway"]]


def _runtime_dependencies() -> list[Requirement]:
    return [Requirement(d) for d in _image_requirements()]


def _pins(text: str) -> dict[str, str]:
    pins: dict[str, str] = {}
    for match in re.finditer(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", text, re.MULTILINE):
        pins[canonicalize_name(match.group(1))] = match.group(2)
    return pins


def test_the_lock_is_current() -> None:
    """What scripts/test runs before pytest; CI runs it here too."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "lock"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_every_runtime_dependency_is_pinned_at_a_version_it_allows() -> None:
    text = (ROOT / LOCK).read_text(encoding="utf-8")
    pins = _pins(text)
    for requirement in _runtime_dependencies():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in {LOCK}"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{LOCK} pins {name}=={pins[name]}, which {requirement} does not allow"
        )
    # `uvicorn[standard]`: its extras are locked too.
    assert {"uvloop", "httptools", "websockets"} <= set(pins)
    # Runtime only: none of the dev or bench tools.
    assert not {"pytest", "ruff", "mypy", "matplotlib", "hypothesis"} & set(pins)


def test_every_pin_has_hashes() -> None:
    """`pip install --require-hashes` refuses a pin without one."""
    entries = re.split(r"\n(?=[A-Za-z0-9])", (ROOT / LOCK).read_text(encoding="utf-8"))
    pinned = [e for e in entries if re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*==", e)]
    assert pinned
    for entry in pinned:
        assert "--hash=sha256:" in entry, entry.splitlines()[0]


def _lock_tree(tmp_path: Path, dependencies: list[str], gateway: list[str] | None = None) -> Path:
    """A copy of scripts/lock beside a pyproject with these dependencies and the real lock."""
    (tmp_path / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "lock", tmp_path / "scripts" / "lock")
    (tmp_path / "requirements").mkdir()
    shutil.copy(ROOT / LOCK, tmp_path / LOCK)
    listed = ", ".join(json.dumps(d) for d in dependencies)
    text = f'[project]\nname = "x"\ndependencies = [{listed}]\n'
    if gateway is not None:
        extra = ", ".join(json.dumps(d) for d in gateway)
        text += f"[project.optional-dependencies]\ngateway = [{extra}]\nother = ['x>=1']\n"
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    return tmp_path


def _check(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(tree / "scripts" / "lock"), "--check"], capture_output=True, text=True
    )


def test_the_lock_check_fails_when_the_dependencies_change(tmp_path: Path) -> None:
    image = _image_requirements()
    same = _lock_tree(tmp_path / "same", list(reversed(image)))
    assert _check(same).returncode == 0  # order, and which list holds which, do not matter

    added = _lock_tree(tmp_path / "added", [*image, "requests>=2"])
    result = _check(added)
    assert result.returncode == 1
    assert "changed since lock.txt was generated: run scripts/lock" in result.stderr

    bumped = [d.replace("litellm>=1.70", "litellm>=1.71") for d in image]
    assert bumped != image
    assert _check(_lock_tree(tmp_path / "bumped", bumped)).returncode == 1


def test_the_lock_covers_the_gateway_extra(tmp_path: Path) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert "starlette>=0.46" in extras["gateway"]
    as_listed = _lock_tree(tmp_path / "listed", project["dependencies"], extras["gateway"])
    assert _check(as_listed).returncode == 0  # and no other extra counts
    base_only = _lock_tree(tmp_path / "base", project["dependencies"])
    assert _check(base_only).returncode == 1  # the lock was made with the gateway extra


def test_the_lock_check_names_a_dependency_that_is_not_pinned(tmp_path: Path) -> None:
    tree = _lock_tree(tmp_path, ["starlette>=0.46", "not-a-locked-package>=1"])
    lock = tree / LOCK
    # The hash as scripts/lock computes it, from the script itself (it is not a module).
    script = runpy.run_path(str(ROOT / "scripts" / "lock"))
    digest = script["dependencies_hash"](script["dependencies"](tree / "pyproject.toml"))
    text = re.sub(r"(# pyproject-dependencies-sha256:) \w+", rf"\1 {digest}", lock.read_text())
    lock.write_text(text)
    result = _check(tree)
    assert result.returncode == 1
    assert "'not-a-locked-package>=1' is not pinned in lock.txt" in result.stderr
    assert "changed since" not in result.stderr

    lock.unlink()
    assert "lock.txt is missing" in _check(tree).stderr
