"""The API's shape, checked without starting the services: every route says what it returns, the
OpenAPI document is valid, HTTP statuses are chosen in ``api/`` only, every domain error has one,
and a server that is still starting says so the same way on every route that needs the services.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.datastructures import DefaultPlaceholder
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import BaseModel

from api import errors
from server import create_app
from tests.test_layers import RANK, ROOT, imported_modules, product_files

STATUS_NAMES = {"status", "status_code", "http_status"}


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_app()  # no lifespan runs: the services never start


def api_routes(routes: Iterable[Any]) -> Iterator[APIRoute]:
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        included = getattr(route, "original_router", None)  # FastAPI keeps included routers whole
        if included is not None:
            yield from api_routes(included.routes)


def typed(model: Any) -> bool:
    """A Pydantic model, or a list / union of them; not ``dict[str, Any]`` or nothing."""
    if isinstance(model, type) and issubclass(model, BaseModel):
        return True
    args = get_args(model)
    origin = get_origin(model)
    return origin in (list, Union, types.UnionType) and bool(args) and all(map(typed, args))


def declares_its_response(route: APIRoute) -> bool:
    if typed(route.response_model):
        return True
    cls = route.response_class  # streams, pages, text: a response class of their own
    return not isinstance(cls, DefaultPlaceholder) and not issubclass(cls, JSONResponse)


def test_every_route_declares_a_typed_response_model_or_its_response_class(app: FastAPI) -> None:
    routes = list(api_routes(app.routes))
    spec = app.openapi()
    documented = {(m.upper(), path) for path, ops in spec["paths"].items() for m in ops}
    walked = {(m, r.path) for r in routes for m in r.methods}
    assert documented and documented <= walked, "the walker misses routes the API serves"
    missing = sorted(
        f"{sorted(r.methods)} {r.path}: {r.response_model}"
        for r in routes
        if not declares_its_response(r)
    )
    assert not missing, "routes without a response_model or response_class:\n" + "\n".join(missing)


def test_openapi_document_is_valid_and_streams_say_so(app: FastAPI) -> None:
    response = TestClient(app).get("/openapi.json")
    assert response.status_code == 200
    spec = response.json()
    schemathesis.openapi.from_dict(spec).validate()  # OpenAPI 3.1 meta-schema; raises if invalid
    for path in ("/api/chat_stream", "/api/ai_ops", "/api/knowledge/jobs/{job_id}/events"):
        (op,) = spec["paths"][path].values()
        assert list(op["responses"]["200"]["content"]) == ["text/event-stream"], path
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            ok = next(v for k, v in op["responses"].items() if k.startswith("2"))
            if "application/json" in ok.get("content", {}):
                schema = ok["content"]["application/json"]["schema"]
                assert "$ref" in schema or "items" in schema or "anyOf" in schema, (method, path)


def _assignments(stmt: ast.AST) -> Iterator[tuple[ast.expr, ast.expr]]:
    """(target, value) pairs of an assignment, ``a, b = 1, 2`` taken apart."""
    if isinstance(stmt, ast.Assign):
        pairs = [(t, stmt.value) for t in stmt.targets]
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        pairs = [(stmt.target, stmt.value)]
    else:
        return
    for target, value in pairs:
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
            yield from zip(target.elts, value.elts, strict=False)
        else:
            yield target, value


def _http_statuses(node: ast.AST) -> Iterator[tuple[str, int]]:
    """(name, value) for every ``status = 404``, ``status, code = 409, "…"`` or
    ``self.status_code = 503`` in a class: an HTTP status an object carries."""
    for cls in (n for n in ast.walk(node) if isinstance(n, ast.ClassDef)):
        for target, value in (pair for stmt in ast.walk(cls) for pair in _assignments(stmt)):
            name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
            literal = value.value if isinstance(value, ast.Constant) else None
            is_int = isinstance(literal, int) and not isinstance(literal, bool)
            if name in STATUS_NAMES and is_int and 100 <= literal <= 599:
                yield name, literal


def below_api() -> list[Path]:
    return [
        p
        for p in product_files()
        if RANK[p.relative_to(ROOT).parts[0].removesuffix(".py")] < RANK["api"]
    ]


def test_no_module_below_the_api_carries_http_statuses() -> None:
    found = [
        f"{path.relative_to(ROOT).as_posix()}: {name} = {value}"
        for path in below_api()
        for name, value in _http_statuses(ast.parse(path.read_text(encoding="utf-8")))
    ]
    hint = "HTTP statuses below api/ (give the error a code; api/errors.py maps it):\n"
    assert not found, hint + "\n".join(found)
    web = [
        f"{path.relative_to(ROOT).as_posix()} imports {module}"
        for path in below_api()
        for module in imported_modules(path)
        if module.split(".")[0] in ("fastapi", "starlette")
    ]
    assert not web, "web framework below api/:\n" + "\n".join(web)


def test_the_status_finder_sees_the_forms_an_error_class_takes() -> None:
    source = (
        "class A(Exception):\n    status = 404\n"
        "class B(Exception):\n    status, code = 415, 'unsupported'\n"
        "class C(Exception):\n    def __init__(self):\n        self.status_code = 503\n"
        "class D:\n    http_status: int = 507\n"
        "class E:\n    status = 'RUNNING'\n    retries = 404\n"
    )
    assert sorted(_http_statuses(ast.parse(source))) == [
        ("http_status", 507),
        ("status", 404),
        ("status", 415),
        ("status_code", 503),
    ]


def _subclasses(classes: Iterable[type]) -> Iterator[type]:
    for cls in classes:
        yield cls
        yield from _subclasses(cls.__subclasses__())


def test_every_domain_error_kind_maps_to_a_status() -> None:
    kinds = {cls.__name__: getattr(cls, "code", None) for cls in _subclasses(errors.DOMAIN_ERRORS)}
    assert len(kinds) > len(errors.DOMAIN_ERRORS)  # the subclasses were found
    unmapped = {name: kind for name, kind in kinds.items() if kind not in errors.DOMAIN_STATUS}
    assert not unmapped, f"domain errors whose kind has no HTTP status: {unmapped}"


def _raising(exc: Exception) -> Any:
    async def endpoint() -> None:
        raise exc

    return endpoint


def test_a_domain_error_answers_with_its_kind_and_an_unmapped_kind_is_a_fault() -> None:
    from persistence.conversations import ConversationBusy
    from retrieval.writing.errors import DocumentNotFound, KnowledgeError

    class Unmapped(KnowledgeError):
        code = "nobody_mapped_this"

    app = FastAPI()
    errors.install(app)
    raised = {
        "/missing": DocumentNotFound("document d1 does not exist"),
        "/busy": ConversationBusy("t1", "s1", 7),
        "/unmapped": Unmapped("whatever"),
    }
    for path, exc in raised.items():
        app.add_api_route(path, _raising(exc))
    client = TestClient(app, raise_server_exceptions=False)
    missing = client.get("/missing")
    assert (missing.status_code, missing.json()) == (
        404,
        {"error": "document_not_found", "message": "document d1 does not exist"},
    )
    busy = client.get("/busy")
    assert busy.status_code == 409 and busy.headers["retry-after"] == "7"
    assert busy.json()["error"] == "conversation_busy" and "t1" in busy.json()["message"]
    unmapped = client.get("/unmapped")
    assert unmapped.status_code == 500 and unmapped.json()["error"] == "internal_error"


def test_a_starting_server_answers_503_starting_wherever_the_services_are_needed(
    app: FastAPI,
) -> None:
    client = TestClient(app)  # not entered: the lifespan never publishes the services
    for path in ("/api/documents", "/api/sessions", "/api/knowledge/jobs/j1", "/api/cases/c1"):
        response = client.get(path)
        assert (response.status_code, response.json()["error"]) == (503, "starting"), path
    health = client.get("/healthz")
    assert health.status_code == 503 and health.json()["status"] == "starting"
    assert set(health.json()) == {"status", "message", "timeline"}  # nothing a state lacks
