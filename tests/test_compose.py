"""The deployment files: compose.yaml, Dockerfile, .env.example, prometheus/*.yml.

Fast and offline. ``docker compose config`` runs when Docker Compose is installed (v2, or Debian's
``docker-compose`` 1.29); everything else reads the files.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.paths import ROOT

COMPOSE_FILE = ROOT / "compose.yaml"
DOCKERFILE = ROOT / "Dockerfile"
ENV_EXAMPLE = ROOT / ".env.example"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
APP_PORT = 9900
HEREDOC = re.compile(r"<<-?['\"]?([A-Za-z_]+)['\"]?")
LOG_LEVELS = {"DEBUG", "INFO", "WARNING", "ERROR"}


# --- helpers ------------------------------------------------------------------------------------


def _compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))


def _default(value: Any) -> str:
    """``${VAR:-default}`` -> ``default`` (what compose uses when VAR is unset)."""
    return re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?-([^}]*)\}", r"\1", str(value))


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: _default(v) for k, v in env.items()}


def _compose_command() -> tuple[list[str], int] | None:
    """(command, major version) of an installed Docker Compose, preferring v2."""
    if shutil.which("docker"):
        probe = subprocess.run(
            ["docker", "compose", "version", "--short"], capture_output=True, text=True
        )
        if probe.returncode == 0:
            return ["docker", "compose"], 2
    if shutil.which("docker-compose"):
        out = subprocess.run(
            ["docker-compose", "version", "--short"], capture_output=True, text=True
        ).stdout.strip()
        return ["docker-compose"], int(out.split(".")[0]) if out[:1].isdigit() else 1
    return None


def _instructions(text: str) -> list[tuple[str, str]]:
    """Dockerfile instructions as (KEYWORD, arguments): continuation lines joined, comments and
    heredoc bodies left out."""
    out: list[tuple[str, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line.startswith("#"):
            continue
        while line.endswith("\\") and i < len(lines):
            nxt = lines[i].strip()
            i += 1
            if nxt.startswith("#"):
                continue
            line = line[:-1].rstrip() + " " + nxt
        keyword, _, args = line.partition(" ")
        out.append((keyword.upper(), args.strip()))
        heredoc = HEREDOC.search(args) if keyword.upper() in ("RUN", "COPY") else None
        if heredoc:
            end = heredoc.group(1)
            while i < len(lines) and lines[i].strip() != end:
                i += 1
            i += 1
    return out


def _heredoc(text: str, target: str) -> str:
    """Body of ``COPY <<'EOF' <target>``."""
    m = re.search(
        r"^COPY <<-?['\"]?(\w+)['\"]? " + re.escape(target) + r"\n(.*?)^\1$",
        text,
        re.MULTILINE | re.DOTALL,
    )
    assert m, f"the Dockerfile should write {target} with a COPY heredoc"
    return m.group(2)


def _final_stage(instructions: list[tuple[str, str]]) -> list[tuple[str, str]]:
    starts = [n for n, (kw, _) in enumerate(instructions) if kw == "FROM"]
    assert starts, "Dockerfile has no FROM"
    return instructions[starts[-1] :]


def _args(instructions: list[tuple[str, str]]) -> dict[str, str]:
    out = {}
    for kw, args in instructions:
        if kw == "ARG" and "=" in args:
            name, value = args.split("=", 1)
            out[name.strip()] = value.strip().strip('"')
    return out


def _expand(text: str, args: dict[str, str]) -> str:
    return re.sub(
        r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)), text
    )


# --- (a) docker compose config ------------------------------------------------------------------


def _run_config(tmp_path: Path, *extra: str) -> None:
    found = _compose_command()
    if found is None:
        pytest.skip(
            "Docker Compose is not installed: `apt-get install docker-compose` "
            "(or install the docker compose v2 plugin) to validate compose.yaml"
        )
    cmd, major = found
    compose_file = COMPOSE_FILE
    if major < 2:
        # Compose 1.x (Debian's docker-compose 1.29) predates the optional env_file entry
        # `{path: .env, required: false}` (Compose 2.24). Validate everything else with it on a copy
        # where that entry is the 1.x form: a list of files that must exist.
        doc = _compose()
        for svc in doc["services"].values():
            if isinstance(svc.get("env_file"), list):
                files = []
                for entry in svc["env_file"]:
                    if isinstance(entry, str):
                        files.append(entry)
                    elif (ROOT / entry["path"]).exists() or entry.get("required", True):
                        files.append(str(ROOT / entry["path"]))
                svc["env_file"] = files
                if not files:
                    del svc["env_file"]
        compose_file = tmp_path / "compose.yaml"
        compose_file.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    full = [*cmd, "--project-directory", str(ROOT), *extra, "-f", str(compose_file), "config", "-q"]
    proc = subprocess.run(full, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, f"{shlex.join(full)} failed:\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.slow  # runs docker-compose
def test_compose_config_is_valid(tmp_path: Path) -> None:
    _run_config(tmp_path)


@pytest.mark.slow  # runs docker-compose
def test_compose_config_is_valid_with_env_example(tmp_path: Path) -> None:
    _run_config(tmp_path, "--env-file", str(ENV_EXAMPLE))


# --- (b) compose.yaml: what users rely on -------------------------------------------------------


def test_compose_file_uses_the_compose_spec() -> None:
    doc = _compose()
    assert "version" not in doc, "Compose spec files have no `version:` key"
    assert {"app", "mysql", "etcd", "minio", "milvus", "prometheus", "grafana"} <= set(
        doc["services"]
    )


def test_app_starts_after_mysql_and_milvus_are_healthy() -> None:
    services = _compose()["services"]
    depends = services["app"]["depends_on"]
    assert depends["mysql"]["condition"] == "service_healthy"
    assert depends["milvus"]["condition"] == "service_healthy"
    milvus_deps = services["milvus"]["depends_on"]
    assert milvus_deps["etcd"]["condition"] == "service_healthy"
    assert milvus_deps["minio"]["condition"] == "service_healthy"


def test_every_service_has_a_healthcheck_and_a_restart_policy() -> None:
    for name, svc in _compose()["services"].items():
        check = svc.get("healthcheck") or {}
        assert check.get("test") and not check.get("disable"), f"{name} has no healthcheck"
        assert svc.get("restart") in ("unless-stopped", "always", "on-failure"), name


def test_app_points_at_the_compose_stores_and_runs_several_workers() -> None:
    services = _compose()["services"]
    env = _env(services["app"])
    assert env["DATABASE_URL"] == "mysql+asyncmy://superbiz:superbiz@mysql:3306/superbiz"
    assert env["MILVUS_URI"] == "http://milvus:19530"
    assert int(env["WORKERS"]) >= 2
    mysql = _env(services["mysql"])
    assert (mysql["MYSQL_USER"], mysql["MYSQL_PASSWORD"], mysql["MYSQL_DATABASE"]) == (
        "superbiz",
        "superbiz",
        "superbiz",
    ), "the default DATABASE_URL must match the MySQL container's defaults"
    assert "--character-set-server=utf8mb4" in services["mysql"]["command"]
    # utf8mb4's default collation: the LangGraph MySQL checkpointer compares its tables with a
    # JSON_TABLE column in that collation ("Illegal mix of collations" with utf8mb4_unicode_ci).
    assert "--collation-server=utf8mb4_0900_ai_ci" in services["mysql"]["command"]
    env_files = services["app"]["env_file"]
    assert {"path": ".env", "required": False} in env_files, ".env must stay optional"
    assert "milvus run standalone" in " ".join(services["milvus"]["command"])
    assert services["milvus"]["image"].startswith("milvusdb/milvus:v2.6.")
    assert services["mysql"]["image"] == "mysql:8.4"
    assert services["prometheus"]["profiles"] == ["monitoring"]
    assert "prometheus" not in services["app"].get("depends_on", {}), (
        "the app must not depend on a profile-only service"
    )


def test_knowledge_base_is_one_shared_named_volume() -> None:
    doc = _compose()
    app = doc["services"]["app"]
    kb_dir = _env(app)["KNOWLEDGE_BASE_DIR"]
    mounts = {}
    for vol in app["volumes"]:
        source, target = (
            vol.split(":")[:2] if isinstance(vol, str) else (vol["source"], vol["target"])
        )
        mounts[target] = source
    assert kb_dir in mounts, "the knowledge-base folder must be a volume"
    source = mounts[kb_dir]
    assert not source.startswith((".", "/")), "a named volume, so every worker/replica shares it"
    assert source in doc["volumes"]
    for name in ("mysql", "etcd", "minio", "milvus"):
        targets = [v.split(":")[0] for v in doc["services"][name]["volumes"]]
        assert all(t in doc["volumes"] for t in targets), f"{name} data must be in a named volume"
    assert _env(app)["DATA_DIR"] in mounts


def test_only_the_app_port_is_published() -> None:
    for name, svc in _compose()["services"].items():
        ports = [str(p) for p in svc.get("ports", [])]
        if name == "app":
            assert ports == [f"{APP_PORT}:{APP_PORT}"]
        elif name == "grafana":  # the dashboards are its point; this host only
            assert ports == ["127.0.0.1:3000:3000"]
        else:
            assert ports == [], f"{name} publishes {ports}"


def test_prometheus_mounts_the_rule_files() -> None:
    prom = _compose()["services"]["prometheus"]
    mounted = {v.split(":")[0] for v in prom["volumes"]}
    assert {"./prometheus/prometheus.yml", "./prometheus/alerts.yml"} <= mounted
    config = yaml.safe_load((ROOT / "prometheus/prometheus.yml").read_text(encoding="utf-8"))
    assert config["rule_files"] == ["/etc/prometheus/alerts.yml"]
    rules = yaml.safe_load((ROOT / "prometheus/alerts.yml").read_text(encoding="utf-8"))
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    fixture = (ROOT / "tools/fixtures/alerts.json").read_text(encoding="utf-8")
    assert alerts == {
        "PaymentGatewayTimeoutRateHigh",
        "HikariPoolPendingThreadsHigh",
        "RedisMemoryUsageHigh",
    }
    assert all(name in fixture for name in alerts)


def test_prometheus_scrapes_the_app_and_grafana_shows_it() -> None:
    services = _compose()["services"]
    config = yaml.safe_load((ROOT / "prometheus/prometheus.yml").read_text(encoding="utf-8"))
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    app_job = jobs["superbiz"]
    assert app_job.get("metrics_path", "/metrics") == "/metrics"
    port = _env(services["app"])["PORT"]
    assert app_job["static_configs"][0]["targets"] == [f"app:{port}"]

    grafana = services["grafana"]
    assert grafana["profiles"] == ["monitoring"]
    assert grafana["depends_on"]["prometheus"]["condition"] == "service_healthy"
    mounts = dict(v.split(":")[:2] for v in grafana["volumes"])
    assert mounts["grafana-data"] == "/var/lib/grafana" and "grafana-data" in _compose()["volumes"]
    for source in mounts:
        if source.startswith("./"):
            assert (ROOT / source).is_dir(), f"{source} is mounted but missing"
    datasources = yaml.safe_load(
        (ROOT / "grafana/provisioning/datasources/prometheus.yml").read_text(encoding="utf-8")
    )["datasources"]
    assert [d["url"] for d in datasources] == ["http://prometheus:9090"]
    provider = yaml.safe_load(
        (ROOT / "grafana/provisioning/dashboards/superbiz.yml").read_text(encoding="utf-8")
    )["providers"][0]
    assert mounts["./grafana/dashboards"] == provider["options"]["path"]
    dashboard = json.loads((ROOT / "grafana/dashboards/superbiz.json").read_text(encoding="utf-8"))
    used = {
        t["datasource"]["uid"] for panel in dashboard["panels"] for t in panel.get("targets", [])
    }
    assert used == {datasources[0]["uid"]}, "every query must use the provisioned data source"
    home = _env(grafana)["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == provider["options"]["path"] + "/superbiz.json"


# --- (c) Dockerfile -----------------------------------------------------------------------------


def test_torch_comes_from_the_cpu_index_before_the_project() -> None:
    instructions = _instructions(DOCKERFILE.read_text(encoding="utf-8"))
    args = _args(instructions)
    runs = [_expand(a, args) for kw, a in instructions if kw == "RUN"]
    torch_at = next((n for n, r in enumerate(runs) if "pip install" in r and "torch==" in r), None)
    assert torch_at is not None, "no RUN installs torch"
    assert f"--index-url {TORCH_CPU_INDEX}" in runs[torch_at].replace('"', "")
    project_at = next(
        n for n, r in enumerate(runs) if re.search(r"pip install\b[^&]*\s\.(\s|$)", r)
    )
    deps_at = next(n for n, r in enumerate(runs) if "-r /tmp/requirements.txt" in r)
    assert torch_at < deps_at <= project_at, "torch must be installed before the project"
    assert "-e ." not in runs[project_at], "the image installs the project, not an editable copy"


def test_runtime_stage_runs_offline_as_a_non_root_user() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    final = _final_stage(_instructions(text))
    assert final[0][1].startswith("${PYTHON_IMAGE}") or "python:3.11-slim" in final[0][1]
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in text
    env = " ".join(a for kw, a in final if kw == "ENV")
    assert re.search(r"\bHF_HUB_OFFLINE=1\b", env)
    assert re.search(r"\bTRANSFORMERS_OFFLINE=1\b", env)
    users = [a for kw, a in final if kw == "USER"]
    assert users, "the runtime stage needs a USER"
    assert users[-1].split(":")[0] not in ("root", "0")
    assert users[-1].split(":")[0] == "10001"
    assert any(kw == "EXPOSE" and "9900" in a for kw, a in final)
    health = [a for kw, a in final if kw == "HEALTHCHECK"]
    assert health and "/healthz" in health[-1] and "python" in health[-1]
    runs = " ".join(a for kw, a in final if kw == "RUN")
    assert "chown -R 10001:10001 /app/data /app/knowledge_base" in runs
    assert "make_embeddings(EmbeddingSettings())" in runs, (
        "the build must load the default model once"
    )
    copied = " ".join(a for kw, a in final if kw == "COPY")
    for folder in ("prompts/", "knowledge_base/", "web/", "langgraph.json", "telemetry/"):
        assert folder in copied, f"{folder} must be in the image"


def test_start_script_migrates_warms_up_then_starts_several_workers() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    final = _final_stage(_instructions(text))
    cmd = [a for kw, a in final if kw == "CMD"]
    assert cmd == ['["superbiz-start"]']
    script = _heredoc(text, "/usr/local/bin/superbiz-start")
    # Workers share one metrics folder (emptied first), so /metrics reports them all.
    metrics_dir = script.index("export PROMETHEUS_MULTIPROC_DIR=")
    assert script.index('rm -rf "$PROMETHEUS_MULTIPROC_DIR"') > metrics_dir
    migrate = script.index("python -m persistence migrate")
    assert metrics_dir < migrate
    warm_up = script.index("Services.start(")
    serve = script.index("exec uvicorn server:create_app --factory --host 0.0.0.0")
    assert migrate < warm_up < serve
    assert '--workers "$workers"' in script and 'workers="${WORKERS:-4}"' in script


def test_env_example_lists_every_setting() -> None:
    text = ENV_EXAMPLE.read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", table)) - LOG_LEVELS
    assert documented, "README configuration table not found"
    keys = set(re.findall(r"^#?\s?([A-Z][A-Z0-9_]+)=", text, re.MULTILINE))
    missing = documented - keys
    assert not missing, f".env.example lacks {sorted(missing)}"
    extra_needed = {"WORKERS", "MYSQL_ROOT_PASSWORD", "MYSQL_PASSWORD", "API_KEY", "LLM_BASE_URL"}
    assert extra_needed <= keys
    active = re.findall(r"^[A-Z][A-Z0-9_]*=", text, re.MULTILINE)
    assert not active, f"keep .env.example all comments (it is also read by `make serve`): {active}"


def test_compose_files_exist_where_the_docs_say() -> None:
    for path in ("Dockerfile", ".dockerignore", "compose.yaml", "docs/deploy.md"):
        assert (ROOT / path).is_file(), path
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    for entry in (".venv", ".env", "data", ".git"):
        assert entry in ignored, f".dockerignore should leave out {entry}"
