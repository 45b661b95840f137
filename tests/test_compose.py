"""deploy/compose.yaml, read without a container engine: the services, their images and
ports, the files they mount, Prometheus's targets, Grafana's provisioning, the
collector, and the settings the gateways get from its environment with no key set.

The file's `${VAR:-default}` values are resolved here as compose does, with nothing set
(the keyless demo); podman-compose (a dev dependency) then reads the file itself in its
dry-run mode, which needs no podman, and `docker compose config` (or docker-compose
1.29's) too where one is installed.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from starlette.routing import Route

from gateway.config import load_settings
from gateway.demo.launch import TRIES
from gateway.demo.server import DEMO_JUDGE_MODEL, demo_app
from tests.support.resources import missing

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
DASHBOARD = ROOT / "gateway" / "observability" / "grafana" / "bias-gateway.json"
GATEWAYS = {"gateway-1", "gateway-2"}
SCORERS = {"scorer-1", "scorer-2"}
OURS = GATEWAYS | SCORERS | {"demo"}

_VARIABLE = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}")


def interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """`${NAME}` and `${NAME:-default}` as compose resolves them (empty counts as unset)."""
    if isinstance(value, str):
        return _VARIABLE.sub(lambda m: env.get(m.group(1)) or m.group(2) or "", value)
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    return value


def compose(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    resolved: dict[str, Any] = interpolate(loaded, env or {})
    return resolved


def services() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose()["services"]
    return found


def published(service: Mapping[str, Any]) -> list[tuple[int, int]]:
    """(host port, container port) of each `[address:]host:container` entry."""
    pairs = []
    for entry in service.get("ports", []):
        host, container = str(entry).rsplit(":", 2)[-2:]
        pairs.append((int(host), int(container)))
    return pairs


def listens_on(service: Mapping[str, Any]) -> int:
    """The port a gateway, scorer or the demo listens on, from its command and env."""
    command = service["command"]
    if "--port" in command:
        return int(command[command.index("--port") + 1])
    return int(service["environment"].get("GATEWAY_PORT", 8080))


def mounts(service: Mapping[str, Any]) -> dict[str, Path]:
    """Container path -> the repository file or folder bound there (named volumes left out)."""
    found = {}
    for entry in service.get("volumes", []):
        source, target = str(entry).split(":")[:2]
        if source.startswith("."):
            found[target] = (DEPLOY / source).resolve()
    return found


def read_yaml(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def test_the_stack_is_two_gateways_two_scorers_and_their_parts() -> None:
    assert set(services()) == OURS | {"postgres", "prometheus", "grafana", "otel-collector"}
    for name in GATEWAYS:
        assert services()[name]["command"][:2] == ["bias-gateway", "serve"]
    for name in SCORERS:
        assert services()[name]["command"][:2] == ["bias-gateway", "scorer"]


def test_every_service_has_an_image_and_ours_build_from_the_dockerfile() -> None:
    for name, service in services().items():
        assert re.fullmatch(r"[\w./-]+:[\w.-]+", service["image"]), name  # a pinned tag
        if name in OURS:
            build = service["build"]
            context = (DEPLOY / build["context"]).resolve()
            assert context == ROOT
            assert (context / build["dockerfile"]).is_file()
            assert service["image"] == "bias-gateway:local"
            assert service["tmpfs"] == ["/data"]  # not an anonymous volume per container
        else:
            assert "build" not in service, name  # an upstream image, as published
            # with its registry: podman refuses short names without a search list
            assert "." in service["image"].partition("/")[0], name


def test_published_ports_are_distinct_loopback_ones_on_what_listens() -> None:
    every = [pair for service in services().values() for pair in published(service)]
    hosts = [host for host, _ in every]
    assert len(hosts) == len(set(hosts))
    for name in GATEWAYS | SCORERS:
        assert [container for _, container in published(services()[name])] == [
            listens_on(services()[name])
        ]
    assert published(services()["prometheus"]) == [(9090, 9090)]
    assert published(services()["grafana"]) == [(3000, 3000)]
    for service in services().values():  # BIAS_STACK_HOST unset: loopback only
        assert all(str(p).startswith("127.0.0.1:") for p in service.get("ports", []))


def test_the_image_healthcheck_asks_the_port_each_service_listens_on() -> None:
    # The Dockerfile's HEALTHCHECK asks $GATEWAY_PORT (8080 unless set).
    for name in GATEWAYS | SCORERS:
        service = services()[name]
        assert int(service["environment"].get("GATEWAY_PORT", 8080)) == listens_on(service)
    demo = services()["demo"]
    assert f":{listens_on(demo)}/" in " ".join(demo["healthcheck"]["test"])


def test_every_file_the_stack_mounts_is_in_the_repository() -> None:
    seen = 0
    for service in services().values():
        for source in mounts(service).values():
            assert source.is_relative_to(ROOT), source
            assert source.is_file(), source
            seen += 1
    assert seen == 6


def test_prometheus_scrapes_every_gateway_and_scorer_on_its_port() -> None:
    config_path = DEPLOY / "prometheus.yml"
    assert mounts(services()["prometheus"])["/etc/prometheus/prometheus.yml"] == config_path
    config = read_yaml(config_path)
    targets = {
        target
        for job in config["scrape_configs"]
        for static in job["static_configs"]
        for target in static["targets"]
    }
    assert {job["metrics_path"] for job in config["scrape_configs"]} == {"/metrics"}
    assert targets == {f"{name}:{listens_on(services()[name])}" for name in GATEWAYS | SCORERS}


def test_prometheus_loads_the_alert_rules_where_compose_mounts_them() -> None:
    # A rule file's path is relative to the config's folder, both here and in the container.
    bound = mounts(services()["prometheus"])
    assert set(bound) == {"/etc/prometheus/prometheus.yml", "/etc/prometheus/prometheus/alerts.yml"}
    (rules,) = read_yaml(DEPLOY / "prometheus.yml")["rule_files"]
    assert bound[str(PurePosixPath("/etc/prometheus") / rules)] == DEPLOY / rules
    assert (DEPLOY / rules) == DEPLOY / "prometheus" / "alerts.yml"


def test_grafana_provisions_prometheus_and_the_shipped_dashboard() -> None:
    grafana = services()["grafana"]
    bound = mounts(grafana)
    datasources = read_yaml(bound["/etc/grafana/provisioning/datasources/prometheus.yaml"])
    (source,) = datasources["datasources"]
    url = urlsplit(source["url"])
    assert (source["type"], source["isDefault"]) == ("prometheus", True)
    assert (url.hostname, url.port) == ("prometheus", 9090)
    assert published(services()["prometheus"])[0][1] == url.port
    dashboards = read_yaml(bound["/etc/grafana/provisioning/dashboards/bias-gateway.yaml"])
    (provider,) = dashboards["providers"]
    folder = PurePosixPath(provider["options"]["path"])
    shipped = {target: path for target, path in bound.items() if path == DASHBOARD}
    assert [PurePosixPath(target).parent for target in shipped] == [folder]
    # The dashboard picks its data source by type: the provisioned default.
    variable = '"query": "prometheus"'
    assert variable in DASHBOARD.read_text(encoding="utf-8")


def test_the_collector_receives_the_traces_the_gateways_send() -> None:
    collector = services()["otel-collector"]
    (config_path,) = mounts(collector).values()
    assert f"--config={next(iter(mounts(collector)))}" in collector["command"]
    config = read_yaml(config_path)
    http = urlsplit("//" + config["receivers"]["otlp"]["protocols"]["http"]["endpoint"])
    assert "otlp" in config["service"]["pipelines"]["traces"]["receivers"]
    assert "otlp" in config["service"]["pipelines"]["logs"]["receivers"]
    for name in GATEWAYS | SCORERS:
        env = services()[name]["environment"]
        endpoint = urlsplit(env["OTEL_EXPORTER_OTLP_ENDPOINT"])
        assert (endpoint.hostname, endpoint.port) == ("otel-collector", http.port)
        assert env["OTEL_TRACES_EXPORTER"] == "otlp"


@pytest.mark.parametrize("name", sorted(GATEWAYS | SCORERS))
def test_with_no_key_set_the_gateways_use_the_demo_and_the_shared_postgres(name: str) -> None:
    service = services()[name]
    config = ROOT / service["command"][service["command"].index("--config") + 1]
    settings = load_settings(config, env={k: str(v) for k, v in service["environment"].items()})
    demo = services()["demo"]
    demo_url = f"http://demo:{listens_on(demo)}"
    assert demo["command"][:3] == ["uvicorn", "--factory", "gateway.demo.server:demo_app"]
    routes = {route.path for route in demo_app().routes if isinstance(route, Route)}
    upstream = str(settings.upstream.base_url)
    judge = str(settings.judge.base_url)
    for base in (upstream, judge):
        assert base.startswith(demo_url)
        assert base.removeprefix(demo_url) + "/chat/completions" in routes
    assert settings.judge.model == DEMO_JUDGE_MODEL
    postgres = services()["postgres"]["environment"]
    assert settings.store.url is not None
    store = urlsplit(settings.store.url.get_secret_value())
    assert (store.hostname, store.port, store.path) == ("postgres", 5432, "/bias")
    assert (store.username, store.password) == (postgres["POSTGRES_USER"], "bias")
    assert postgres["POSTGRES_PASSWORD"] == store.password
    assert postgres["POSTGRES_DB"] == store.path.lstrip("/")
    assert settings.queue.scorer == "external"  # the gateways enqueue, the scorers judge
    assert settings.server.host == "0.0.0.0"


def test_a_real_upstream_replaces_the_demo_from_the_environment() -> None:
    env = {"OPENAI_BASE_URL": "https://api.example/v1", "BIAS_JUDGE_MODEL": "gpt-4o-mini"}
    gateway = compose(env)["services"]["gateway-1"]["environment"]
    assert gateway["OPENAI_BASE_URL"] == "https://api.example/v1"
    assert gateway["BIAS_JUDGE_MODEL"] == "gpt-4o-mini"


def _engine_config(argv: list[str]) -> dict[str, Any]:
    # Nothing set, as in test_with_no_key_set_...: not even the test session's own fakes.
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr
    loaded: dict[str, Any] = yaml.safe_load(done.stdout)
    return loaded


def _agrees(config: Mapping[str, Any]) -> None:
    assert set(config["services"]) == set(services())
    for name, service in services().items():
        theirs = config["services"][name]
        assert {k: str(v) for k, v in theirs.get("environment", {}).items()} == {
            k: str(v) for k, v in service.get("environment", {}).items()
        }, name
        assert theirs.get("command") == service.get("command"), name


def test_podman_compose_reads_the_file_as_this_test_does() -> None:
    podman_compose = Path(sys.executable).parent / "podman-compose"
    argv = [str(podman_compose), "--dry-run", "-f", str(COMPOSE), "config"]
    _agrees(_engine_config(argv))


def _docker_compose() -> list[str] | None:
    """`docker compose` (v2), else `docker-compose` (Debian 12 has 1.29), else None."""
    docker = shutil.which("docker")
    if (
        docker
        and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0
    ):
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


@pytest.mark.compose
def test_docker_compose_reads_the_file_as_this_test_does() -> None:
    command = _docker_compose()
    if command is None:
        why = "no `docker compose` or docker-compose here (scripts/test installs Debian's)"
        missing("compose", why)
    _agrees(_engine_config([*command, "-p", "bias-gateway", "-f", str(COMPOSE), "config"]))


def test_the_smoke_test_expects_what_the_demo_promises_on_the_published_ports() -> None:
    smoke = runpy.run_path(str(DEPLOY / "smoke.py"))
    assert smoke["TRIES"] == {prompt: verdict for _, prompt, verdict in TRIES}
    for name, port in {**smoke["GATEWAYS"], **smoke["SCORERS"]}.items():
        assert published(services()[name])[0][0] == port
    assert smoke["PROMETHEUS"].endswith(f":{published(services()['prometheus'])[0][0]}")
    assert smoke["GRAFANA"].endswith(f":{published(services()['grafana'])[0][0]}")
    uid = json.loads(DASHBOARD.read_text(encoding="utf-8"))["uid"]
    assert f"/api/dashboards/uid/{uid}" in (DEPLOY / "smoke.py").read_text(encoding="utf-8")


def test_scripts_stack_without_a_command_shows_its_usage() -> None:
    done = subprocess.run(
        ["bash", "scripts/stack"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 2
    for command in ("up", "smoke", "down", "config"):
        assert f"scripts/stack {command}" in done.stderr
