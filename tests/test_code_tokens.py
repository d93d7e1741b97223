"""Identifiers in pasted text (``textnorm.code_tokens``): what counts, and no runaway matching."""

from __future__ import annotations

import subprocess
import sys

from retrieval.parsing.terms import document_codes
from retrieval.parsing.textnorm import code_tokens


def test_identifiers_an_operator_pastes_are_codes() -> None:
    text = "ERR_TIMEOUT 后 KubePodCrashLooping，OOMKilled，vm.max_map_count 和 TLSHandshake 超时"
    assert code_tokens(text) == [
        "ERR_TIMEOUT",
        "KubePodCrashLooping",
        "OOMKilled",
        "vm.max_map_count",
        "TLSHandshake",
    ]
    assert code_tokens("the pod restarted, Redis is fine") == []
    assert document_codes("see HEALTH_ERR and health_err") == ["healtherr"]


def test_a_long_camel_case_run_is_read_in_linear_time() -> None:
    # ``AbCdCd…Cd_`` took 2^n steps (a group that could split the run many ways): 40 parts would
    # have hung a lookup, and a document's import, for hours. In a child process, so a
    # regression fails on the timeout instead of hanging the suite.
    code = (
        "from retrieval.parsing.textnorm import code_tokens;"
        "print(len(code_tokens('Ab' + 'Cd' * 40 + '_ ' + 'Ab' + 'CDEFGH' * 50000 + '_')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "0"
