"""deploy/: every file parses; the compose stack has its seven services wired together; the
`dagster.yaml` files load as Dagster instance config (Dagster's own validation); the Bindery
configurations load; the Helm values use only keys Dagster's chart defines, and its queue
settings are a valid QueuedRunCoordinator config; the Kubernetes manifests are complete and
probe routes the query service has; the repository's code location loads from workspace.yaml.

Nothing here starts Docker or Kubernetes (neither runs on the machines that test this)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from dagster._config import validate_config
from dagster._core.run_coordinator.queued_run_coordinator import QueuedRunCoordinator
from dagster._core.workspace.config_schema import ensure_workspace_config

from connectors.config import config_from_dict
from tests.instance_check import validate_instance_yaml

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"
COMPOSE = DEPLOY / "compose"


def _docs(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


@pytest.mark.parametrize("path", sorted(DEPLOY.rglob("*.yaml")), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_deploy_file_parses(path: Path) -> None:
    assert _docs(path), f"{path} is empty"


def test_compose_runs_the_seven_services_wired_together() -> None:
    compose = _docs(COMPOSE / "compose.yaml")[0]
    services = compose["services"]
    assert set(services) == {"postgres", "qdrant", "elasticsearch", "webserver", "daemon", "code-location",
                             "query-service"}
    for name, svc in services.items():
        for dep in svc.get("depends_on", {}):
            assert dep in services, f"{name} depends on unknown service {dep}"
    env = services["query-service"]["environment"]
    assert env["BINDERY_CONFIG"] == "/etc/bindery/bindery.yaml"
    mounts = {m.split(":")[1] for m in services["daemon"]["volumes"]}
    assert {"/etc/bindery/bindery.yaml", "/opt/dagster/home/dagster.yaml", "/etc/dagster/workspace.yaml"} <= mounts
    assert "dagster-daemon" in services["daemon"]["command"]
    # the UI has no sign-in: Dagster's webserver behind the Host check, published on loopback only
    web = services["webserver"]
    assert web["command"][:4] == ["python", "-m", "orchestration.ui_server", "webserver"]
    assert json.loads(web["environment"]["BINDERY_UI_ALLOWED_HOSTS"]) == ["localhost", "127.0.0.1", "[::1]"]
    assert web["ports"] == ["127.0.0.1:3000:3000"]
    # every variable the stack needs is in the example .env
    needed = set(re.findall(r"\$\{([A-Z_]+)", (COMPOSE / "compose.yaml").read_text()))
    example = {line.split("=")[0] for line in (COMPOSE / ".env.example").read_text().splitlines()
               if line and not line.startswith("#")}
    assert needed <= example, needed - example


def test_compose_instance_is_valid_dagster_config_on_postgresql() -> None:
    value = validate_instance_yaml(COMPOSE / "dagster.yaml")
    db = value["storage"]["postgres"]["postgres_db"]
    assert db["hostname"] == "postgres" and db["password"] == {"env": "DAGSTER_PG_PASSWORD"}
    assert db["params"]["options"] == "-csearch_path=dagster"
    assert "dagster" in (COMPOSE / "initdb" / "01-dagster-schema.sql").read_text()
    limits = value["run_coordinator"]["config"]["tag_concurrency_limits"]
    assert limits[0]["key"] == "dagster/partition" and limits[0]["limit"] == 1


def test_compose_workspace_names_the_code_location_server() -> None:
    workspace = _docs(COMPOSE / "workspace.yaml")[0]
    ensure_workspace_config(workspace, str(COMPOSE / "workspace.yaml"))
    server = workspace["load_from"][0]["grpc_server"]
    code = _docs(COMPOSE / "compose.yaml")[0]["services"]["code-location"]["command"]
    assert server["host"] == "code-location" and str(server["port"]) in code
    assert server["location_name"] == code[code.index("--location-name") + 1]


def test_bindery_configurations_load() -> None:
    compose_cfg = config_from_dict(_docs(COMPOSE / "bindery.yaml")[0], COMPOSE)
    assert compose_cfg.backends.vector == "qdrant-server" and compose_cfg.backends.keyword == "elasticsearch"
    configmap = next(d for d in _docs(DEPLOY / "k8s" / "bindery-config.yaml") if d["kind"] == "ConfigMap")
    k8s_cfg = config_from_dict(yaml.safe_load(configmap["data"]["bindery.yaml"]))
    assert k8s_cfg.orchestration.storage == "postgres" and k8s_cfg.backends.qdrant_quantization


# Keys of the Dagster chart's values, from its schema models (helm/dagster/schema/schema/charts/
# in dagster-io/dagster): the chart rejects unknown keys in these sections.
_CHART_KEYS: dict[str, set[str]] = {
    "": {"global", "dagsterWebserver", "dagster-user-deployments", "postgresql", "generatePostgresqlPasswordSecret",
         "generateCeleryConfigSecret", "rabbitmq", "redis", "flower", "ingress", "imagePullSecrets",
         "computeLogManager", "scheduler", "runLauncher", "pythonLogs", "dagsterDaemon", "busybox", "migrate",
         "telemetry", "serviceAccount", "retention", "additionalInstanceConfig"},
    "postgresql": {"image", "enabled", "postgresqlHost", "postgresqlUsername", "postgresqlPassword",
                   "postgresqlDatabase", "postgresqlParams", "postgresqlScheme", "service"},
    "user-deployment": {"name", "image", "dagsterApiGrpcArgs", "codeServerArgs", "includeConfigInLaunchedRuns",
                        "port", "env", "envConfigMaps", "envSecrets", "annotations", "nodeSelector", "affinity",
                        "tolerations", "podSecurityContext", "securityContext", "resources", "livenessProbe",
                        "readinessProbe", "startupProbe", "labels", "volumeMounts", "volumes", "schedulerName"},
    "k8sRunLauncher": {"image", "imagePullPolicy", "jobNamespace", "loadInclusterConfig", "kubeconfigFile",
                       "envConfigMaps", "envSecrets", "envVars", "volumeMounts", "volumes", "labels",
                       "failPodOnRunFailure", "resources", "schedulerName", "securityContext", "runK8sConfig"},
    "queuedRunCoordinator": {"maxConcurrentRuns", "tagConcurrencyLimits", "dequeueIntervalSeconds",
                             "dequeueNumWorkers", "dequeueUseThreads", "blockOpConcurrencyLimitedRuns"},
}


def test_helm_values_use_the_charts_keys_and_a_valid_queue() -> None:
    values = _docs(DEPLOY / "helm" / "values.yaml")[0]
    assert set(values) <= _CHART_KEYS[""], set(values) - _CHART_KEYS[""]
    assert set(values["postgresql"]) <= _CHART_KEYS["postgresql"] and values["postgresql"]["enabled"] is False
    for deployment in values["dagster-user-deployments"]["deployments"]:
        assert set(deployment) <= _CHART_KEYS["user-deployment"], set(deployment) - _CHART_KEYS["user-deployment"]
        assert deployment["codeServerArgs"] == ["-m", "orchestration.definitions"]
        assert {"name": "BINDERY_CONFIG", "value": "/etc/bindery/bindery.yaml"} in deployment["env"]
    launcher = values["runLauncher"]
    assert launcher["type"] == "K8sRunLauncher"
    assert set(launcher["config"]["k8sRunLauncher"]) <= _CHART_KEYS["k8sRunLauncher"]
    coordinator = values["dagsterDaemon"]["runCoordinator"]
    queued = coordinator["config"]["queuedRunCoordinator"]
    assert coordinator["type"] == "QueuedRunCoordinator" and set(queued) <= _CHART_KEYS["queuedRunCoordinator"]
    # the chart renders these as the coordinator's own config: validate it as Dagster would
    as_instance = {"max_concurrent_runs": queued["maxConcurrentRuns"],
                   "tag_concurrency_limits": queued["tagConcurrencyLimits"]}
    assert validate_config(QueuedRunCoordinator.config_type(), as_instance).success
    assert values["telemetry"] == {"enabled": False}


def test_query_service_manifests_are_complete(tmp_path: Path) -> None:
    from query_service.app import create_app

    docs = _docs(DEPLOY / "k8s" / "query-service.yaml") + _docs(DEPLOY / "k8s" / "bindery-config.yaml")
    for d in docs:
        assert d["apiVersion"] and d["kind"] and d["metadata"]["name"]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:1] == ["bindery"] and "serve" in container["command"]
    app = create_app(config_from_dict({"data_dir": str(tmp_path / "data")}))
    app_routes = {path for r in app.routes if (path := getattr(r, "path", None))}
    assert {container["readinessProbe"]["httpGet"]["path"], container["livenessProbe"]["httpGet"]["path"]} <= app_routes
    service = next(d for d in docs if d["kind"] == "Service")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    claims = {v["persistentVolumeClaim"]["claimName"] for v in deployment["spec"]["template"]["spec"]["volumes"]
              if "persistentVolumeClaim" in v}
    assert claims <= {d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"}


@pytest.mark.slow
def test_the_code_location_loads_from_workspace_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The repository's workspace.yaml, loaded the way the webserver and the daemon load it
    (a code server subprocess), yields the jobs without a load error."""
    from orchestration.instance import get_instance
    from orchestration.runs import code_location

    cfg_path = tmp_path / "bindery.yaml"
    cfg_path.write_text(yaml.safe_dump({"data_dir": str(tmp_path / "data")}))
    cfg = config_from_dict({"data_dir": str(tmp_path / "data")})
    cfg.config_path = str(cfg_path)
    with get_instance(cfg) as instance, code_location(cfg, instance) as (_, location, repo):
        assert location.name.startswith("orchestration.definitions")
        assert {"sync", "reindex", "promote"} <= {j.name for j in repo.get_all_jobs()}
