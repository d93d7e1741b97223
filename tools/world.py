"""An incident's world: what the alert, log and clock tools return during one run.

A run normally reads Prometheus, Loki (or the bundled fixtures) and the system clock. A run given a
``World`` (in its context: ``Context.world``, as the incident eval suite sets it) reads that world
instead, through the same tools and the same code paths after the source: the model cannot tell
the difference and is told nothing else. Alerts are written as Prometheus' ``/api/v1/alerts``
returns them (``labels``, ``annotations``, ``state``, ``activeAt``, ``value``), so a captured
response pastes in as it is; log lines as the fixtures hold them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

SOURCE = "world"  # what the tools report as their source for a world's results


class WorldAlert(BaseModel):
    """One alert as Prometheus reports it (``GET /api/v1/alerts``, ``data.alerts[]``)."""

    model_config = ConfigDict(extra="forbid")

    labels: dict[str, str] = Field(description="alertname, severity, service (or job/app), …")
    annotations: dict[str, str] = Field(default_factory=dict, description="summary, description")
    state: Literal["firing", "pending", "inactive"] = "firing"
    activeAt: str | None = Field(default=None, description="ISO time the alert became active")  # noqa: N815 - Prometheus' name
    value: str | None = None

    @field_validator("labels", "annotations", mode="before")
    @classmethod
    def _text_values(cls, v: Any) -> Any:
        # YAML reads `value: 0.93` or `pool: 1` as numbers; Prometheus sends every label as text.
        if isinstance(v, Mapping):
            return {str(k): "" if x is None else str(x) for k, x in v.items()}
        return v

    @field_validator("labels")
    @classmethod
    def _named(cls, v: dict[str, str]) -> dict[str, str]:
        if not v.get("alertname"):
            raise ValueError(
                "every alert needs labels.alertname (e.g. HikariPoolPendingThreadsHigh)"
            )
        return v

    @field_validator("value", mode="before")
    @classmethod
    def _value_text(cls, v: Any) -> Any:
        return None if v is None else str(v)


class WorldLog(BaseModel):
    """One log line of one service."""

    model_config = ConfigDict(extra="forbid")

    ts: str = Field(description="ISO time, e.g. 2026-11-29T02:09:31Z")
    service: str
    level: str = "ERROR"
    message: str

    @field_validator("ts", mode="before")
    @classmethod
    def _ts_text(cls, v: Any) -> Any:
        # YAML turns an unquoted ISO time into a datetime; the tools return text.
        if isinstance(v, datetime):
            return v.astimezone(UTC).isoformat().replace("+00:00", "Z")
        return v


class World(BaseModel):
    """What the observability tools see in one incident. Empty lists are an answer too: no alert
    fires, no log line matches."""

    model_config = ConfigDict(extra="forbid")

    now: datetime | None = Field(
        default=None,
        description="what get_current_time returns; when set, query_logs keeps the lines of the "
        "last `minutes` before it, as Loki would",
    )
    alerts: list[WorldAlert] = Field(default_factory=list)
    logs: list[WorldLog] = Field(default_factory=list)

    @field_validator("now")
    @classmethod
    def _aware(cls, v: datetime | None) -> datetime | None:
        return v.replace(tzinfo=UTC) if v is not None and v.tzinfo is None else v

    def alerts_body(self) -> dict[str, Any]:
        """The world's alerts as Prometheus' response body."""
        alerts = [a.model_dump(exclude_none=True) for a in self.alerts]
        return {"status": "success", "data": {"alerts": alerts}}

    def log_lines(self, minutes: float | None = None) -> list[dict[str, Any]]:
        """The world's log lines, oldest first; with ``now`` set, those of the last ``minutes``."""
        lines = sorted((x.model_dump() for x in self.logs), key=lambda x: x["ts"])
        if self.now is None or minutes is None:
            return lines
        start = self.now - timedelta(minutes=minutes)
        return [x for x in lines if start <= _parse(x["ts"], self.now) <= self.now]


def _parse(ts: str, default: datetime) -> datetime:
    try:
        moment = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return default  # a line whose time cannot be read is kept, not silently dropped
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def world_of(context: Any) -> World | None:
    """The world a run's context carries (``context.world``: a ``World`` or its JSON), if any."""
    raw = getattr(context, "world", None)
    if raw is None:
        return None
    return raw if isinstance(raw, World) else World.model_validate(raw)
