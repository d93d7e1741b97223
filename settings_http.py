"""The HTTP surface's settings (issue 20): the names this server answers to, request-body limits,
admission control for lookups. Mixed into ``settings.Settings``; env names are the field names."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, Field, field_validator
from pydantic_settings import NoDecode

HOST_RE = re.compile(
    r"(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*(:\d{1,5})?"
)


class HttpSurfaceSettings(BaseModel):
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Names this server answers to besides loopback ones (localhost, 127.0.0.1, "
        "::1) and its bind address, e.g. ops.example.com or *.corp.example; comma-separated in "
        "the environment. Any other Host header gets 421 (a defence against DNS rebinding).",
    )

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, v: Any) -> Any:
        return [p for p in v.split(",") if p.strip()] if isinstance(v, str) else v

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts(cls, v: list[str]) -> list[str]:
        out = []
        for raw in v:
            name = raw.strip().lower().rstrip(".")
            if "[" not in name and name.count(":") > 1 and "/" not in name:  # a bare IPv6
                out.append(name)
                continue
            if name.startswith("[") and "]" in name:  # [IPv6] or [IPv6]:port
                out.append(name[1 : name.index("]")])
                continue
            if not HOST_RE.fullmatch(name):
                raise ValueError(
                    f"'{raw}' is not a host name; write a name such as ops.example.com or "
                    "*.corp.example (no scheme, no path)"
                )
            out.append(name.split(":")[0])
        return out

    max_body_kb: int = Field(
        1024,
        ge=16,
        le=1024 * 1024,
        description="Largest request body (JSON) in KB on every route but uploads (MAX_UPLOAD_MB); "
        "a larger one gets 413 before it is read whole.",
    )
    lookup_concurrency: int = Field(
        4,
        ge=1,
        le=256,
        description="POST /api/knowledge/lookup: lookups running at once per worker.",
    )
    lookup_queue: int = Field(
        16,
        ge=0,
        le=10000,
        description="Lookups that may wait for a slot; past that (or after lookup-max-wait-s) the "
        "request gets 503 overloaded with Retry-After.",
    )
    lookup_max_wait_s: float = Field(
        2.0, gt=0, le=60, description="Longest a lookup waits for a slot before 503."
    )
