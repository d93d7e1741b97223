"""Property-based run over the OpenAPI schema (schemathesis): no input yields a 500, on any endpoint.

The real server runs as a subprocess (its own event loop, like production); the run is bounded.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from tests.support.processes import start_server

pytestmark = pytest.mark.slow  # a real server process and a bounded property-based run

MAX_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))
SLOW = {
    "/api/chat_stream",
    "/api/ai_ops",
    "/api/chat",
    "/api/sessions/{session_id}/replay",
    "/api/knowledge/init",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    srv = start_server(tmp_path_factory.mktemp("fuzz"), LOG_LEVEL="WARNING")
    yield srv.base_url
    srv.stop()


def _fuzz(operation: schemathesis.APIOperation, examples: int, failures: list[str]) -> None:
    @given(case=operation.as_strategy())
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    def run(case: schemathesis.Case) -> None:
        response = case.call(timeout=120)
        if response.status_code >= 500:
            failures.append(
                f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:200]}"
            )
        case.validate_response(response, checks=[not_a_server_error])

    try:
        run()
    except AssertionError as exc:  # keep going: report every failing operation at the end
        failures.append(f"{operation.method.upper()} {operation.path}: {str(exc)[:300]}")


def test_no_server_errors_for_generated_input(server: str) -> None:
    schema = schemathesis.openapi.from_url(f"{server}/openapi.json")
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    for op in operations:
        _fuzz(op, 3 if op.path in SLOW else MAX_EXAMPLES, failures)
    assert not failures, "\n".join(failures)
