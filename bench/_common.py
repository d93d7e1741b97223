"""Shared helpers for the benchmarks: environment, timing statistics, synthetic data.

Not a test module (pytest only collects ``tests/``); each ``bench_*.py`` is a script that prints
one JSON document to stdout.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The code under test: this checkout, or (for a baseline run in a subprocess) an extracted seed tree.
CODE_ROOT = Path(os.environ.get("BENCH_CODE_ROOT") or ROOT)
if str(CODE_ROOT) not in sys.path:
    sys.path.insert(0, str(CODE_ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


# --- timing -----------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def stats_ms(samples_s: list[float]) -> dict[str, float]:
    ms = [x * 1000 for x in samples_s]
    return {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 50), 4),
        "p90_ms": round(percentile(ms, 90), 4),
        "p99_ms": round(percentile(ms, 99), 4),
        "mean_ms": round(statistics.fmean(ms), 4) if ms else float("nan"),
        "max_ms": round(max(ms), 4) if ms else float("nan"),
    }


def time_calls(
    fn: Callable[[object], object], inputs: list, *, repeat: int = 1, warmup: int = 3
) -> list[float]:
    """Per-call wall times (seconds) of ``fn(x)`` over ``inputs`` × ``repeat``; GC paused."""
    for x in inputs[:warmup]:
        fn(x)
    out: list[float] = []
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            for x in inputs:
                t = time.perf_counter()
                fn(x)
                out.append(time.perf_counter() - t)
    finally:
        if gc_was:
            gc.enable()
    return out


def code(name: str, old: str) -> types.ModuleType:
    """Module ``name`` of the code under test, or ``old`` in a tree from before it moved (issue 21
    put retrieval/ in rooms: ``retrieval.l1.store`` was ``retrieval.store``). A missing dependency
    of the module still raises."""
    import importlib

    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if not e.name or not name.startswith(e.name):
            raise
        return importlib.import_module(old)


def ratio(baseline: float, new: float) -> float:
    return round(baseline / new, 2) if new > 0 else float("inf")


# --- the seed's code, for same-run baselines ---------------------------------------------------


# The seed: the last commit before the performance work (retrieval/{store,embeddings,ingestion}.py as
# first written). Not HEAD: other commits since may already carry parts of the work.
SEED_REV = "0494ecf"


def load_baseline_module(rel_path: str, name: str, rev: str = SEED_REV) -> types.ModuleType | None:
    """Import ``rel_path`` as it is at git revision ``rev`` (the seed) under module ``name``.

    The benchmarks compare the working tree with the committed code in the same process, so the
    ratios are not skewed by a noisy machine. Returns None when git or the revision is missing.
    """
    try:
        src = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:{rel_path}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    spec = importlib.util.spec_from_loader(name, loader=None)
    mod = importlib.util.module_from_spec(spec)
    mod.__file__ = f"<{rev}:{rel_path}>"
    sys.modules[name] = mod
    aliases = _moved_aliases(src)
    sys.modules.update(aliases)
    try:
        exec(compile(src, mod.__file__, "exec"), mod.__dict__)  # noqa: S102 - our own repository
    finally:
        for alias in aliases:
            sys.modules.pop(alias, None)
    return mod


def _moved_aliases(src: str) -> dict[str, types.ModuleType]:
    """The seed imports retrieval modules by their names before issue 21 put them in rooms
    (``retrieval.chunking``, now ``retrieval.parsing.chunking``): alias each to today's module, so
    the seed's code shares today's classes as it did before the move."""
    import ast
    import importlib

    out: dict[str, types.ModuleType] = {}
    for node in ast.walk(ast.parse(src)):
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("retrieval."):
            continue
        parts = node.module.split(".")
        if len(parts) != 2 or importlib.util.find_spec(node.module) is not None:
            continue
        rooms = [d.name for d in (ROOT / "retrieval").iterdir() if (d / f"{parts[1]}.py").is_file()]
        if rooms:
            out[node.module] = importlib.import_module(f"retrieval.{rooms[0]}.{parts[1]}")
    return out


def seed_tree(rev: str = SEED_REV) -> Path | None:
    """The whole repository at ``rev`` extracted to a temp folder (cached), or None without git."""
    import shutil
    import tempfile

    dest = Path(tempfile.gettempdir()) / f"superbiz-seed-{rev}"
    if (dest / "retrieval").is_dir():
        return dest
    tmp = Path(tempfile.mkdtemp(prefix=f"superbiz-seed-{rev}-"))
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        tmp.rename(dest)
    except (OSError, subprocess.CalledProcessError):
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    return dest


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "superbiz-bench"


def _requirements(tree: Path) -> list[str]:
    """The tree's ``[project] dependencies``, torch left out (this venv's own build is reused)."""
    import tomllib

    deps = tomllib.loads((tree / "pyproject.toml").read_text())["project"]["dependencies"]
    return [d for d in deps if not d.replace(" ", "").lower().startswith("torch")]


_MISSING = """
import json, sys
from importlib.metadata import PackageNotFoundError, version
from packaging.requirements import Requirement
out = []
for line in json.loads(sys.argv[1]):
    req = Requirement(line)
    try:
        have = version(req.name)
    except PackageNotFoundError:
        have = None
    if have is None or (req.specifier and not req.specifier.contains(have, prereleases=True)):
        out.append(line)
print(json.dumps(out))
"""


def baseline_python(tree: Path) -> str:
    """A Python for an older tree: its own venv, seeing this environment's packages behind its own.

    A baseline tree may import packages the project no longer uses (the seed reads frontmatter
    with ``python-frontmatter``). They go into a venv of its own under the user's cache folder
    (``~/.cache/superbiz-bench/venv-<tree>``), never into the project's: the venv's
    ``site-packages`` comes first, then, through a ``.pth`` file, this interpreter's, so only
    what is missing or of another version is installed (torch never: this one is reused).
    """
    import hashlib
    import json
    import sysconfig

    reqs = _requirements(tree)
    key = hashlib.sha256(json.dumps([sys.executable, reqs]).encode()).hexdigest()[:12]
    venv = _cache_dir() / f"venv-{tree.name}-{key}"
    python = venv / "bin" / "python"
    if (venv / ".ready").exists() and python.exists():
        return str(python)
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--clear", str(venv)], check=True
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    ours.append(sysconfig.get_paths()["purelib"])
    Path(site, "_superbiz_project_env.pth").write_text("\n".join(dict.fromkeys(ours)) + "\n")
    missing = json.loads(
        subprocess.run(
            [str(python), "-c", _MISSING, json.dumps(reqs)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    if missing:
        print(f"baseline venv {venv}: installing {', '.join(missing)}", file=sys.stderr)
        from importlib.metadata import version

        constraints = venv / "constraints.txt"
        constraints.write_text(f"torch=={version('torch')}\n")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                str(python),
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-c",
                str(constraints),
                *missing,
            ],
            check=True,
        )
    (venv / ".ready").write_text("\n".join(missing) + "\n")
    return str(python)


def run_variant(
    script: str,
    code_root: Path,
    args: list[str],
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> dict:
    """Run ``bench/<script> --as-variant ARGS`` against the code in ``code_root``; its JSON.

    This checkout runs with this interpreter; another tree (a baseline) with its own venv
    (``baseline_python``)."""
    import json

    env = dict(os.environ, BENCH_CODE_ROOT=str(code_root), **(env or {}))
    python = sys.executable if code_root.resolve() == ROOT.resolve() else baseline_python(code_root)
    proc = subprocess.run(
        [python, str(Path(__file__).parent / script), "--as-variant", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{script} variant at {code_root} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout)


# Embedding variants measured side by side (env of the variant's process). ``current`` is the
# default (multilingual-e5-small); the MiniLM ones are the packaged English model as configured by
# default (precision auto: bf16 on CPUs with native bf16) and in fp32 (what earlier runs reported).
EMBEDDING_VARIANTS: dict[str, dict[str, str]] = {
    "current": {},
    "current_fp32": {"BENCH_EMBEDDING_PRECISION": "fp32"},
    "current_minilm": {"BENCH_EMBEDDING_MODEL": "all-MiniLM-L6-v2"},
    "current_minilm_fp32": {
        "BENCH_EMBEDDING_MODEL": "all-MiniLM-L6-v2",
        "BENCH_EMBEDDING_PRECISION": "fp32",
    },
}


def variant_embeddings():  # noqa: ANN201 - the code root's embeddings class
    """The embedding model of this variant's process, built as the server builds it
    (``make_embeddings`` on the settings); a tree older than ``make_embeddings`` (the seed) gets
    its ``SentenceTransformerEmbeddings()``."""
    values = {
        key: os.environ[env]
        for key, env in (
            ("model", "BENCH_EMBEDDING_MODEL"),
            ("precision", "BENCH_EMBEDDING_PRECISION"),
        )
        if os.environ.get(env)
    }
    embeddings = code("retrieval.l1.embeddings", "retrieval.embeddings")
    try:
        from settings import EmbeddingSettings
    except ImportError:
        EmbeddingSettings = None  # noqa: N806
    if EmbeddingSettings is None or not hasattr(embeddings, "make_embeddings"):
        return embeddings.SentenceTransformerEmbeddings()
    return embeddings.make_embeddings(EmbeddingSettings(**values))


def embedding_info(emb) -> dict[str, object]:  # noqa: ANN001
    return {
        "model_id": getattr(emb, "model_id", type(emb).__name__),
        "precision": getattr(emb, "precision", "fp32"),
        "window": getattr(emb, "max_tokens", None),
    }


def git_rev() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> dict[str, object]:
    import platform

    return {"python": platform.python_version(), "cpus": os.cpu_count(), "git": git_rev()}


# --- synthetic data ----------------------------------------------------------------------------

SERVICES = [
    "order-service",
    "payment-gateway",
    "user-center",
    "inventory",
    "risk-engine",
    "search-api",
    "notification",
    "billing",
    "coupon",
    "logistics",
    "settlement",
    "auth-proxy",
    "report-job",
    "message-bus",
    "config-center",
    "file-store",
    "recommend",
    "gateway",
    "scheduler",
    "audit-log",
]
COMPONENTS = [
    "MySQL",
    "Redis",
    "Kafka",
    "RocketMQ",
    "Nginx",
    "Elasticsearch",
    "MongoDB",
    "HikariCP",
    "Netty",
    "Tomcat",
    "Kubernetes",
    "ZooKeeper",
    "Nacos",
    "Sentinel",
    "Dubbo",
    "gRPC",
    "Flyway",
    "Prometheus",
    "Grafana",
    "Jenkins",
    "Istio",
    "Envoy",
    "PostgreSQL",
    "ClickHouse",
    "etcd",
    "Consul",
]
EN_WORDS = [
    "timeout",
    "latency",
    "throughput",
    "deadlock",
    "rollback",
    "failover",
    "replica",
    "shard",
    "eviction",
    "backpressure",
    "retry",
    "circuit breaker",
    "rate limit",
    "connection pool",
    "thread pool",
    "heap dump",
    "GC pause",
    "slow query",
    "index",
    "cache miss",
    "hot key",
    "memory leak",
    "disk full",
    "certificate",
    "handshake",
    "DNS",
    "load balancer",
    "health check",
    "readiness probe",
    "liveness probe",
    "OOMKilled",
    "CrashLoopBackOff",
    "consumer lag",
    "offset",
    "partition",
    "rebalance",
    "idempotency",
    "signature",
    "callback",
    "webhook",
    "checkpoint",
    "snapshot",
    "migration",
    "schema",
    "lock wait",
    "binlog",
    "TTL",
    "maxmemory",
]
CN_TERMS = [
    "连接池超时",
    "连接池耗尽",
    "慢查询",
    "主从延迟",
    "缓存穿透",
    "缓存雪崩",
    "缓存击穿",
    "热点数据",
    "限流",
    "熔断",
    "降级",
    "灰度发布",
    "回滚",
    "扩容",
    "缩容",
    "告警",
    "值班",
    "故障定位",
    "根因分析",
    "日志排查",
    "链路追踪",
    "内存泄漏",
    "线程阻塞",
    "死锁",
    "磁盘写满",
    "证书过期",
    "域名解析",
    "负载均衡",
    "健康检查",
    "消息积压",
    "重复消费",
    "幂等",
    "签名校验",
    "回调失败",
    "支付超时",
    "退款失败",
    "对账差异",
    "订单状态",
    "库存扣减",
    "分布式锁",
    "事务回滚",
    "数据迁移",
    "索引失效",
    "配置中心",
    "服务注册",
    "服务发现",
    "网关超时",
    "请求重试",
    "超时时间",
    "最大连接数",
    "监控大盘",
]
CN_SENTENCES = [
    "值班同学首先确认{cn}是否只影响{svc}，再检查{comp}的{en}指标。",
    "如果{comp}出现{en}，通常说明{cn}已经发生，需要立即按照本手册止血。",
    "排查{cn}时先看最近一次发布记录，{svc}的变更往往是根因。",
    "建议把{comp}的{en}阈值调整为{num}，并在监控大盘上增加{cn}告警。",
    "执行止血操作前，请在工单中记录{svc}当前的{en}数值（例如 {num} ms）。",
    "{cn}恢复后观察 {num} 分钟，确认{comp}的错误率回落到基线以下。",
    "不要在业务高峰期直接重启{comp}，先通过限流保护{svc}，避免{cn}扩大。",
    "常见原因包括{en}配置过小、{cn}以及下游{comp}响应变慢。",
]
EN_SENTENCES = [
    "Check the {en} of {comp} first; a sudden spike usually precedes {code}.",
    "When {svc} reports {code}, verify the {en} settings and the {comp} cluster health.",
    "Set the {comp} {en} to {num} and restart the affected pods one by one.",
    "The on-call engineer should capture a {en} snapshot before rolling back {svc}.",
    "If {code} persists for more than {num} seconds, escalate to the {comp} owners.",
]
CODE_PREFIXES = ["ERR", "E", "PAY", "ORD", "DB", "MQ", "AUTH", "RISK", "INV", "NET"]
CODE_WORDS = [
    "TIMEOUT",
    "REFUSED",
    "DENIED",
    "NOT_FOUND",
    "CONFLICT",
    "EXPIRED",
    "INVALID_SIGN",
    "LIMITED",
    "UNAVAILABLE",
    "DUPLICATE",
    "OVERFLOW",
    "LOCKED",
    "RESET",
    "MISMATCH",
    "REJECTED",
    "BUSY",
]


def error_code(rng: random.Random) -> str:
    p = rng.choice(CODE_PREFIXES)
    if rng.random() < 0.5:
        return f"{p}_{rng.choice(CODE_WORDS)}_{rng.randint(100, 999)}"
    return f"{p}{rng.randint(1000, 99999)}"


def _fill(rng: random.Random, template: str) -> str:
    return template.format(
        cn=rng.choice(CN_TERMS),
        en=rng.choice(EN_WORDS),
        svc=rng.choice(SERVICES),
        comp=rng.choice(COMPONENTS),
        code=error_code(rng),
        num=rng.choice([3, 5, 10, 30, 50, 100, 200, 500, 1000, 3000, 30000]),
    )


def chunk_text(rng: random.Random, min_chars: int = 300, max_chars: int = 500) -> str:
    """A chunk as it is indexed: breadcrumb line, blank line, mixed Chinese/English prose."""
    comp, svc = rng.choice(COMPONENTS), rng.choice(SERVICES)
    crumb = f"{comp} {rng.choice(CN_TERMS)}排查手册 > {rng.choice(['诊断流程', '止血步骤', '参数说明', '常见原因', 'Root cause', 'Rollback'])} > {svc}"
    target = rng.randint(min_chars, max_chars)
    parts: list[str] = []
    size = 0
    while size < target:
        tpl = rng.choice(EN_SENTENCES) if rng.random() < 0.3 else rng.choice(CN_SENTENCES)
        s = _fill(rng, tpl)
        if rng.random() < 0.15:
            s = f"`{rng.choice(COMPONENTS).lower()}.{rng.choice(EN_WORDS).replace(' ', '_')}={rng.randint(1, 9999)}`"
        parts.append(s)
        size += len(s)
    return (
        crumb
        + "\n\n"
        + "".join(p if p.endswith("。") else p + " " for p in parts)[:max_chars].rstrip()
    )


def chunk_texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [chunk_text(rng) for _ in range(n)]


def l1_queries(n: int, seed: int = 11) -> list[str]:
    """Question-like queries: half English, half Chinese."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append(
                rng.choice(
                    [
                        f"how to fix {rng.choice(EN_WORDS)} in {rng.choice(COMPONENTS)}",
                        f"{rng.choice(COMPONENTS)} {rng.choice(EN_WORDS)} after deploy of {rng.choice(SERVICES)}",
                        f"what causes {rng.choice(EN_WORDS)} and {rng.choice(EN_WORDS)}",
                    ]
                )
            )
        else:
            out.append(
                rng.choice(
                    [
                        f"{rng.choice(COMPONENTS)}出现{rng.choice(CN_TERMS)}怎么处理",
                        f"{rng.choice(SERVICES)}{rng.choice(CN_TERMS)}的排查步骤是什么",
                        f"如何避免{rng.choice(CN_TERMS)}和{rng.choice(CN_TERMS)}",
                    ]
                )
            )
    return out


def random_unit_vectors(n: int, dim: int = 384, seed: int = 3):
    import numpy as np

    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, dim)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


# --- synthetic knowledge base -------------------------------------------------------------------

RUNBOOK_CATEGORIES = [
    "infrastructure",
    "api",
    "middleware",
    "database",
    "troubleshooting",
    "domain",
]


def runbook(rng: random.Random, i: int) -> tuple[str, str]:
    """One small runbook (≈1–3 KB, 2–4 sections) as (relative path, Markdown with frontmatter)."""
    comp, svc, cn = rng.choice(COMPONENTS), rng.choice(SERVICES), rng.choice(CN_TERMS)
    category = rng.choice(RUNBOOK_CATEGORIES)
    code = f"{rng.choice(CODE_PREFIXES)}_{rng.choice(CODE_WORDS)}_{i:03d}"
    title = f"{comp} {cn}处理手册 ({comp} {rng.choice(EN_WORDS).title()} Runbook {i})"
    keywords = [code, f"{svc}-{i}", cn, rng.choice(EN_WORDS)]
    sections = rng.sample(
        ["现象与影响", "诊断步骤", "止血操作", "根因与修复", "Rollback", "监控与告警"],
        rng.randint(2, 4),
    )
    body = [
        f"# {title}",
        "",
        _fill(rng, rng.choice(CN_SENTENCES)) + _fill(rng, rng.choice(CN_SENTENCES)),
        "",
    ]
    for sec in sections:
        body += [f"## {sec}", ""]
        for _ in range(rng.randint(1, 3)):
            para = "".join(
                _fill(rng, rng.choice(CN_SENTENCES + EN_SENTENCES)) + " "
                for _ in range(rng.randint(2, 4))
            )
            body += [para.strip(), ""]
        if rng.random() < 0.3:
            body += [
                "```bash",
                f"kubectl -n {svc} rollout undo deploy/{svc}",
                f"curl -s http://{svc}:8080/actuator/health",
                "```",
                "",
            ]
    summary = f"{comp} 出现{cn}时的诊断与止血步骤，覆盖 {code}。"
    fm = [
        "---",
        f'title: "{title}"',
        "keywords:",
        *[f'  - "{k}"' for k in keywords],
        f'summary: "{summary}"',
        f"category: {category}",
        "---",
        "",
    ]
    return f"{category}/runbook-{i:04d}.md", "\n".join(fm + body)


def write_runbooks(folder: Path, n: int, seed: int = 5) -> int:
    rng = random.Random(seed)
    total = 0
    for i in range(n):
        rel, text = runbook(rng, i)
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        total += len(text.encode())
    return total


def warm_jieba() -> None:
    """Load jieba's dictionary once per process so no variant pays it inside a timed region."""
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
