"""``query_prometheus_alerts`` and ``query_logs``: live APIs when configured, bundled fixtures else.

Prometheus: ``GET {PROMETHEUS_URL}/api/v1/alerts``. Loki: ``GET {LOKI_URL}/loki/api/v1/query_range``.
A run whose context carries a world (``tools/world.py``: an incident the eval suite replays) reads
that world instead of either; everything after the source is the same code.
Errors (unreachable, bad status, bad JSON) are raised as ``ToolException`` with a readable message, so
the model reads them instead of the run crashing.
"""

from __future__ import annotations

import json
import time
from importlib import resources
from typing import Any

import httpx
from langchain_core.tools import BaseTool, ToolException, tool
from langgraph.prebuilt import ToolRuntime

from tools.world import SOURCE as WORLD_SOURCE
from tools.world import world_of

SEVERITY_ORDER = {"critical": 0, "error": 1, "warning": 2, "info": 3}
ERROR_PATTERN = "(?i)(error|exception|timeout|fail|oom)"


def _fixture(name: str) -> Any:
    return json.loads(resources.files("tools.fixtures").joinpath(name).read_text(encoding="utf-8"))


def _compact_alert(a: dict[str, Any]) -> dict[str, Any]:
    labels = a.get("labels", {})
    return {
        "alertname": labels.get("alertname", ""),
        "severity": labels.get("severity", ""),
        "service": labels.get("service") or labels.get("job") or labels.get("app", ""),
        "state": a.get("state", ""),
        "activeAt": a.get("activeAt") or a.get("startsAt"),
        "value": a.get("value"),
        "summary": a.get("annotations", {}).get("summary", ""),
        "description": a.get("annotations", {}).get("description", ""),
        "labels": labels,
    }


async def _get_json(url: str, params: dict[str, Any], timeout: float) -> Any:
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            resp = await client.get(url, params=params)
    except httpx.TimeoutException:
        raise ToolException(f"cannot reach {url}: no answer within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise ToolException(f"cannot reach {url}: {str(exc) or 'the connection failed'}") from None
    if resp.status_code != 200:
        raise ToolException(f"{url} answered HTTP {resp.status_code}: {resp.text[:300]}")
    try:
        return resp.json()
    except ValueError:
        raise ToolException(f"{url} did not return JSON") from None


def _matching(lines: list[dict[str, Any]], service: str, keyword: str) -> list[dict[str, Any]]:
    """Lines of ``service`` containing ``keyword``, or (no keyword) its ERROR and WARN lines."""
    return [
        x
        for x in lines
        if x["service"] == service
        and (
            keyword.lower() in x["message"].lower()
            if keyword
            else str(x.get("level", "")).upper() in {"ERROR", "WARN"}
        )
    ]


def make_alerts_tool(prometheus_url: str = "", timeout: float = 10.0) -> BaseTool:
    async def query_prometheus_alerts(
        runtime: ToolRuntime[Any, Any], state: str = "firing", severity: str = ""
    ) -> str:
        """List active Prometheus alerts (name, severity, service, summary), most severe first.

        state: firing | pending | all. severity: optional filter such as critical or warning.
        """
        world = world_of(runtime.context)
        if world is not None:
            body, source = world.alerts_body(), WORLD_SOURCE
        elif prometheus_url:
            body = await _get_json(f"{prometheus_url}/api/v1/alerts", {}, timeout)
            source = prometheus_url
        else:
            body, source = _fixture("alerts.json"), "fixture"
        alerts = [_compact_alert(a) for a in (body.get("data") or {}).get("alerts", [])]
        if state != "all":
            alerts = [a for a in alerts if a["state"] == state]
        if severity:
            alerts = [a for a in alerts if a["severity"] == severity]
        alerts.sort(key=lambda a: (SEVERITY_ORDER.get(a["severity"], 9), a["alertname"]))
        return json.dumps(
            {"source": source, "count": len(alerts), "alerts": alerts}, ensure_ascii=False
        )

    return tool("query_prometheus_alerts")(query_prometheus_alerts)


def make_logs_tool(loki_url: str = "", timeout: float = 10.0) -> BaseTool:
    async def query_logs(
        runtime: ToolRuntime[Any, Any],
        service: str,
        keyword: str = "",
        minutes: int = 60,
        limit: int = 20,
    ) -> str:
        """Recent error-level log lines of one service (newest last), optionally containing a keyword."""
        if not service.strip():
            raise ToolException("service is required, e.g. service='payment-gateway'")
        limit = max(1, min(int(limit), 200))
        world = world_of(runtime.context)
        if world is not None:
            lines = _matching(world.log_lines(minutes), service, keyword)
            source = WORLD_SOURCE
        elif loki_url:
            selector = '{service="' + service.replace('"', "") + '"}'
            line_filter = f' |= "{keyword}"' if keyword else f' |~ "{ERROR_PATTERN}"'
            now_ns = int(time.time() * 1e9)
            params = {
                "query": selector + line_filter,
                "start": now_ns - int(minutes * 60 * 1e9),
                "end": now_ns,
                "limit": limit,
                "direction": "backward",
            }
            body = await _get_json(f"{loki_url}/loki/api/v1/query_range", params, timeout)
            lines = [
                {"ts": ts, "service": service, "message": line}
                for stream in (body.get("data") or {}).get("result", [])
                for ts, line in stream.get("values", [])
            ]
            lines.sort(key=lambda x: x["ts"])
            source = loki_url
        else:
            lines, source = _matching(_fixture("logs.json"), service, keyword), "fixture"
        lines = lines[-limit:]
        return json.dumps(
            {"source": source, "service": service, "count": len(lines), "lines": lines},
            ensure_ascii=False,
        )

    return tool("query_logs")(query_logs)
