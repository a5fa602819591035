"""The Kubernetes manifests (deploy/kubernetes): the base and the example overlay, as
`kubectl kustomize` renders them, and console.yaml are valid Kubernetes objects (the
API's own schemas, bundled by kubernetes-validate); they run what docker-compose.yml
runs (image, commands, probes, the chat adapters in one process) with settings Herald
reads; every pod is locked down; the grace period outlasts the drain; and the init
containers' wait lets a pod start only once the migration Job has done its work."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import kubernetes_validate
import pytest
import yaml
from pydantic import AliasChoices

from core import db
from core.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = ROOT / "deploy" / "kubernetes"
KUSTOMIZATIONS = {"base": KUBERNETES / "base", "example": KUBERNETES / "overlays" / "example"}
CONSOLE = KUBERNETES / "console.yaml"
WAIT_SCRIPT = KUBERNETES / "base" / "wait_for_schema.py"
#: The oldest Kubernetes the manifests are meant for, and the newest the package knows.
KUBERNETES_VERSIONS = ("1.30", kubernetes_validate.latest_version())
#: Seconds the grace period keeps beyond the preStop and the drain, for what closes after
#: the drain: the HTTP server's requests in flight, the chat adapters (Slack's takes up
#: to 5 s) and the database pool.
CLOSING_SECONDS = 10
#: The compose services that run Herald's image.
HERALD_SERVICES = ("migrate", "bot", "dispatcher", "console", "cli")

Obj = dict[str, Any]


def kustomize_command() -> list[str]:
    """How this machine renders a kustomization; skips the test when it cannot."""
    kubectl = shutil.which("kubectl")
    if kubectl is not None:
        return [kubectl, "kustomize"]
    kustomize = shutil.which("kustomize")
    if kustomize is not None:
        return [kustomize, "build"]
    pytest.skip("neither kubectl nor kustomize is on PATH: the kustomizations are not rendered")


@cache
def _render(name: str) -> tuple[Obj, ...]:
    proc = subprocess.run(
        [*kustomize_command(), str(KUSTOMIZATIONS[name])],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return tuple(doc for doc in yaml.safe_load_all(proc.stdout) if doc)


def rendered(name: str) -> list[Obj]:
    return list(_render(name))


def console() -> Obj:
    loaded: Obj = yaml.safe_load(CONSOLE.read_text())
    return loaded


def compose() -> Obj:
    loaded: Obj = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def find(objects: list[Obj], kind: str, name: str) -> Obj:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def pod_specs(objects: list[Obj]) -> Iterator[tuple[str, Obj]]:
    """Each pod spec, by the name of the object that holds it."""
    for o in objects:
        if o["kind"] == "Pod":
            yield o["metadata"]["name"], o["spec"]
        elif o["kind"] in ("Deployment", "Job"):
            yield o["metadata"]["name"], o["spec"]["template"]["spec"]


def containers(spec: Obj) -> list[Obj]:
    return [*spec.get("initContainers", []), *spec["containers"]]


def main_container(objects: list[Obj], kind: str, name: str) -> Obj:
    spec = dict(pod_specs([find(objects, kind, name)]))[name]
    (container,) = spec["containers"]
    found: Obj = container
    return found


def env_value(container: Obj, name: str) -> str | None:
    for item in container.get("env", []):
        if item["name"] == name:
            return str(item["value"])
    return None


def config_map(objects: list[Obj]) -> dict[str, str]:
    data: dict[str, str] = find(objects, "ConfigMap", "herald-config")["data"]
    return data


def setting_names() -> set[str]:
    """Every environment variable Settings reads (aliases and older names)."""
    names: set[str] = set()
    for field in Settings.model_fields.values():
        if field.alias:
            names.add(field.alias)
        if isinstance(field.validation_alias, AliasChoices):
            names.update(c for c in field.validation_alias.choices if isinstance(c, str))
    return names


def dockerfile_uid() -> int:
    found = re.search(r"useradd .*--uid (\d+)", (ROOT / "Dockerfile").read_text())
    assert found, "the Dockerfile creates no user with a fixed uid"
    return int(found.group(1))


def everything() -> Iterator[tuple[str, list[Obj]]]:
    """The objects of each kustomization, and console.yaml's."""
    for name in KUSTOMIZATIONS:
        yield name, rendered(name)
    yield "console.yaml", [console()]


@pytest.mark.parametrize("name", [*KUSTOMIZATIONS, "console.yaml"])
def test_every_object_is_valid_for_kubernetes(name: str) -> None:
    objects = dict(everything())[name]
    assert objects
    for obj in objects:
        for version in KUBERNETES_VERSIONS:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                where = "/".join(str(p) for p in exc.path)
                pytest.fail(f"{obj['kind']}/{obj['metadata']['name']} at {where}: {exc.message}")


def test_the_overlay_names_only_objects_it_has() -> None:
    """Every ConfigMap and Secret a pod reads exists in the overlay (the base leaves the
    Secret to the overlay), under the name the pods use."""
    objects = rendered("example")
    have = {(o["kind"], o["metadata"]["name"]) for o in objects}
    for _, spec in pod_specs([*objects, console()]):
        for volume in spec.get("volumes", []):
            if "configMap" in volume:
                assert ("ConfigMap", volume["configMap"]["name"]) in have
        for container in containers(spec):
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    assert ("ConfigMap", source["configMapRef"]["name"]) in have
                if "secretRef" in source:
                    assert ("Secret", source["secretRef"]["name"]) in have
    assert {o["metadata"].get("namespace") for o in objects if o["kind"] != "Namespace"} == {
        "herald"
    }


def test_images_are_the_compose_image() -> None:
    image = compose()["services"]["bot"]["image"]
    for name, objects in (("base", rendered("base")), ("console.yaml", [console()])):
        for _, spec in pod_specs(objects):
            for container in containers(spec):
                assert container["image"] == image, name
    overlay = yaml.safe_load((KUSTOMIZATIONS["example"] / "kustomization.yaml").read_text())
    (entry,) = overlay["images"]
    assert entry["name"] == image.split(":")[0]
    for _, spec in pod_specs(rendered("example")):
        for container in containers(spec):
            assert container["image"] == f"{entry['newName']}:{entry['newTag']}"
    assert 'ENTRYPOINT ["herald"]' in (ROOT / "Dockerfile").read_text()


@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_commands_are_the_compose_commands(name: str) -> None:
    """The image's entrypoint is herald: each container gives only its arguments, the
    compose service's command."""
    objects = rendered(name)
    services = compose()["services"]
    for kind, obj, service in (
        ("Job", "herald-migrate", "migrate"),
        ("Deployment", "herald-dispatcher", "dispatcher"),
        ("Deployment", "herald-bot", "bot"),
    ):
        container = main_container(objects, kind, obj)
        assert "command" not in container
        assert container["args"] == services[service]["command"]
    (container,) = console()["spec"]["containers"]
    assert "command" not in container
    assert container["args"] == services["console"]["command"]


@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_one_bot_connects_the_chat_adapters(name: str) -> None:
    objects = rendered(name)
    services = compose()["services"]
    bot = find(objects, "Deployment", "herald-bot")
    dispatchers = find(objects, "Deployment", "herald-dispatcher")
    assert bot["spec"]["replicas"] == 1
    assert bot["spec"]["strategy"]["type"] == "Recreate"  # never two at once
    assert dispatchers["spec"]["replicas"] >= 2
    bot_adapters = env_value(main_container(objects, "Deployment", "herald-bot"), "HERALD_ADAPTERS")
    assert bot_adapters == services["bot"]["environment"]["HERALD_ADAPTERS"] == "auto"
    dispatcher_adapters = env_value(
        main_container(objects, "Deployment", "herald-dispatcher"), "HERALD_ADAPTERS"
    )
    assert dispatcher_adapters == services["dispatcher"]["environment"]["HERALD_ADAPTERS"]
    assert dispatcher_adapters == "none"
    assert "HERALD_ADAPTERS" not in config_map(objects)  # each Deployment says its own


@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_probes_ask_the_service_endpoints(name: str) -> None:
    objects = rendered(name)
    routes = set(re.findall(r'add_get\("(/[a-z]+)"', (ROOT / "bot" / "http.py").read_text()))
    compose_checks = " ".join(compose()["services"]["dispatcher"]["healthcheck"]["test"])
    settings = config_map(objects)
    assert settings["HERALD_HTTP_HOST"] == "0.0.0.0"  # the kubelet reaches the pod's address
    port = int(settings["HERALD_HTTP_PORT"])
    for deployment in ("herald-bot", "herald-dispatcher"):
        container = main_container(objects, "Deployment", deployment)
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        live = container["livenessProbe"]["httpGet"]
        ready = container["readinessProbe"]["httpGet"]
        start = container["startupProbe"]["httpGet"]
        assert live["path"] == start["path"] == "/healthz"
        assert ready["path"] == "/readyz"
        assert {live["path"], ready["path"]} <= routes
        assert ready["path"] in compose_checks
        for probe in (live, ready, start):
            assert ports[probe["port"]] == port
    for service in ("herald-bot", "herald-dispatcher"):
        (service_port,) = find(objects, "Service", service)["spec"]["ports"]
        assert service_port["port"] == port and service_port["targetPort"] == "http"


@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_services_and_budget_select_the_right_pods(name: str) -> None:
    objects = rendered(name)

    def labels(deployment: str) -> dict[str, str]:
        found: dict[str, str] = find(objects, "Deployment", deployment)["spec"]["template"][
            "metadata"
        ]["labels"]
        return found

    def selects(selector: dict[str, str], deployment: str) -> bool:
        return selector.items() <= labels(deployment).items()

    bot_service = find(objects, "Service", "herald-bot")["spec"]["selector"]
    assert selects(bot_service, "herald-bot") and not selects(bot_service, "herald-dispatcher")
    metrics = find(objects, "Service", "herald-dispatcher")["spec"]["selector"]
    assert selects(metrics, "herald-dispatcher") and not selects(metrics, "herald-bot")
    budget = find(objects, "PodDisruptionBudget", "herald-dispatcher")["spec"]
    assert selects(budget["selector"]["matchLabels"], "herald-dispatcher")
    assert not selects(budget["selector"]["matchLabels"], "herald-bot")
    replicas = find(objects, "Deployment", "herald-dispatcher")["spec"]["replicas"]
    assert 1 <= budget["maxUnavailable"] < replicas  # some keep delivering through a drain


@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_grace_period_outlasts_the_drain(name: str) -> None:
    objects = rendered(name)
    drain = config_map(objects).get("HERALD_SHUTDOWN_TIMEOUT")
    default = Settings.model_fields["shutdown_timeout"].default
    for deployment in ("herald-bot", "herald-dispatcher"):
        spec = dict(pod_specs([find(objects, "Deployment", deployment)]))[deployment]
        (container,) = spec["containers"]
        seconds = float(env_value(container, "HERALD_SHUTDOWN_TIMEOUT") or drain or default)
        pre_stop = container["lifecycle"]["preStop"]["exec"]["command"]
        assert pre_stop[0] == "sleep"
        needed = int(pre_stop[1]) + seconds + CLOSING_SECONDS
        assert spec["terminationGracePeriodSeconds"] >= needed, deployment


@pytest.mark.parametrize("name", ["bot", "dispatcher"])
def test_compose_grace_period_outlasts_the_drain(name: str) -> None:
    """`docker compose stop` sends SIGKILL after the service's stop_grace_period (10 s
    when unset): it must cover the drain and the closing, as on Kubernetes."""
    service = compose()["services"][name]
    drain = float(
        service.get("environment", {}).get("HERALD_SHUTDOWN_TIMEOUT")
        or Settings.model_fields["shutdown_timeout"].default
    )
    grace = re.fullmatch(r"(\d+)s", str(service.get("stop_grace_period", "10s")))
    assert grace is not None, service.get("stop_grace_period")
    assert int(grace.group(1)) >= drain + CLOSING_SECONDS, name


def test_every_pod_is_locked_down() -> None:
    uid = dockerfile_uid()
    for source, objects in everything():
        for name, spec in pod_specs(objects):
            where = f"{source}: {name}"
            pod = spec["securityContext"]
            assert pod["runAsNonRoot"] is True, where
            assert pod["runAsUser"] == uid, where  # the image's USER is a name, not a uid
            assert pod["seccompProfile"]["type"] == "RuntimeDefault", where
            assert spec["automountServiceAccountToken"] is False, where
            empty_dirs = {v["name"] for v in spec.get("volumes", []) if "emptyDir" in v}
            for container in containers(spec):
                where = f"{source}: {name}/{container['name']}"
                context = container["securityContext"]
                assert context["allowPrivilegeEscalation"] is False, where
                assert context["readOnlyRootFilesystem"] is True, where
                assert context["capabilities"] == {"drop": ["ALL"]}, where
                tmp = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
                assert [m["name"] for m in tmp] and tmp[0]["name"] in empty_dirs, where
                for bound in ("requests", "limits"):
                    assert {"cpu", "memory"} <= set(container["resources"][bound]), where


def test_restricted_pod_security_is_enforced() -> None:
    namespace = find(rendered("example"), "Namespace", "herald")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_settings_are_settings_herald_reads() -> None:
    """Every variable the manifests and compose's Herald services set is a Herald
    setting, the overlay sets every one compose sets, and together they make a
    configuration Herald accepts."""
    names = setting_names()
    objects = rendered("example")
    secret = find(objects, "Secret", "herald-secrets")
    assert secret["type"] == "Opaque"
    config = config_map(objects)
    env = {**config, **{key: "" for key in secret["data"]}}
    for _, spec in pod_specs([*objects, console()]):
        for container in containers(spec):
            env.update({item["name"]: item["value"] for item in container.get("env", [])})
    assert set(env) <= names, set(env) - names
    services = compose()["services"]
    compose_names = {n for s in HERALD_SERVICES for n in services[s].get("environment", {})}
    assert compose_names <= names, compose_names - names
    assert compose_names <= set(env), compose_names - set(env)
    loaded = load_settings(None, **config, HERALD_ADAPTERS="none")
    assert loaded.http_host == "0.0.0.0"
    assert loaded.http_port == 8080


def test_example_secret_holds_placeholders_only() -> None:
    text = (KUSTOMIZATIONS["example"] / "secrets.env").read_text()
    values = [line.partition("=")[2] for line in text.splitlines() if line and line[0] != "#"]
    assert values and all("change-me" in value for value in values)
    assert not re.search(r"xox[bpa]-[0-9A-Za-z-]{10,}|xapp-[0-9A-Za-z-]{10,}", text)


@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_pods_wait_for_the_migration_job(name: str) -> None:
    """The Job runs `herald db upgrade`; each Deployment's pods first run the wait script,
    mounted from the ConfigMap that holds this repository's copy of it."""
    objects = rendered(name)
    job = find(objects, "Job", "herald-migrate")
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert job["spec"]["backoffLimit"] >= 1
    script = WAIT_SCRIPT.read_text()
    for deployment in ("herald-bot", "herald-dispatcher"):
        spec = dict(pod_specs([find(objects, "Deployment", deployment)]))[deployment]
        (wait,) = spec["initContainers"]
        assert wait["command"][0] == "python"
        path = Path(wait["command"][1])
        (mount,) = [m for m in wait["volumeMounts"] if m["mountPath"] == str(path.parent)]
        (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        mounted = find(objects, "ConfigMap", volume["configMap"]["name"])
        assert mounted["data"][path.name] == script


def wait_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wait_for_schema", WAIT_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_wait_ends_once_the_schema_is_at_head(db_url: str) -> None:
    script = wait_script()
    head = db.head_revision()
    assert not script.ready(db_url, head)  # no schema yet: the Job has not run
    db.upgrade(db_url)
    assert script.ready(db_url, head)
    assert not script.ready(db_url, "a-newer-revision")  # an image ahead of the Job


def test_the_wait_survives_an_unreachable_database() -> None:
    script = wait_script()
    unreachable = "postgresql://herald@127.0.0.1:1/herald?connect_timeout=2"
    assert not script.ready(unreachable, db.head_revision())


def test_the_console_is_one_off_and_takes_the_overlays_image() -> None:
    """console.yaml is in no kustomization; the README's `kubectl set image --local`
    gives it another image without a cluster."""
    for name in KUSTOMIZATIONS:
        assert all(o["kind"] != "Pod" for o in rendered(name))
    pod = console()
    assert pod["spec"]["restartPolicy"] == "Never"
    (container,) = pod["spec"]["containers"]
    assert container["name"] == "herald" and container["stdin"] and container["tty"]
    command = kustomize_command()
    if not command[0].endswith("kubectl"):
        pytest.skip("kubectl is not on PATH: `kubectl set image --local` is not tried")
    proc = subprocess.run(
        [command[0], "set", "image", "--local", "-f", str(CONSOLE), "herald=registry/herald:9"]
        + ["-o", "yaml"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    (changed,) = yaml.safe_load(proc.stdout)["spec"]["containers"]
    assert changed["image"] == "registry/herald:9"
