"""The bf16 probe's verdict is remembered across starts, and a bad cache file is never trusted.

A start of the default model on a CPU with native bf16 embeds probe texts in fp32 and bf16 to
check they agree (``retrieval/l1/e5_local.py``); the verdict is kept in the cache folder
(``retrieval/l1/bf16_verdict.py``) so the next start skips the probe. Precision ``bf16`` probes on
every CPU (it reports the agreement), so these tests run everywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from retrieval.l1 import bf16_verdict
from retrieval.l1.e5_local import E5Embeddings
from retrieval.l1.embeddings import cpu_has_native_bf16

TEXTS = ["Redis OOM command not allowed", "数据库连接池满了怎么办"]
KEY = {"model": "/m.bin", "size": 1, "mtime_ns": 2, "code": "c", "probe": "p", "cpu": "x"}


def _model(like: E5Embeddings, **kwargs: object) -> E5Embeddings:
    """A fresh model object sharing the session model's parsed file and tokenizer (building the
    tokenizer costs ~1.3 CPU-seconds; the verdict does not depend on which object built it)."""
    model = E5Embeddings(**kwargs)
    model._file, model._tokenizer = like.file, like.tokenizer
    return model


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("SUPERBIZ_CACHE_DIR", str(folder))
    return folder


def test_a_second_load_skips_the_probe_and_embeds_the_same(embeddings, cache: Path) -> None:
    first = _model(embeddings, precision="bf16")
    a = np.asarray(first.embed_documents(TEXTS))
    assert first.bf16_probed is True and first.precision == "bf16"
    assert len(list(cache.glob("bf16-probe-*.json"))) == 1

    second = _model(embeddings, precision="bf16")
    b = np.asarray(second.embed_documents(TEXTS))
    assert second.bf16_probed is False and second.precision == "bf16"
    assert second.bf16_agreement == first.bf16_agreement
    assert np.array_equal(a, b)  # the bf16 weights built directly equal the probe's cast ones


@pytest.mark.parametrize(
    "content",
    [b"", b"{not json", b"\xff\xfe", b'{"key": {}, "min_cosine": 0.9999}', b"[1, 2]"],
    ids=["empty", "truncated", "not-utf8", "another-key", "not-an-object"],
)
def test_a_corrupt_cache_file_is_ignored_and_probed_again(
    embeddings, cache: Path, content: bytes
) -> None:
    _model(embeddings, precision="bf16").encoder  # noqa: B018 - probes, writes the file
    (path,) = cache.glob("bf16-probe-*.json")
    kept = json.loads(path.read_text())
    path.write_bytes(content)

    again = _model(embeddings, precision="bf16")
    again.encoder  # noqa: B018
    assert again.bf16_probed is True
    assert json.loads(path.read_text()) == kept  # written anew, whole


@pytest.mark.skipif(not cpu_has_native_bf16(), reason="precision auto is fp32 without native bf16")
def test_auto_follows_a_remembered_disagreement_without_probing(embeddings, cache: Path) -> None:
    model = _model(embeddings, precision="auto")
    key = model._probe_key()
    assert key is not None
    bf16_verdict.store(key, 0.5, cache)  # a CPU whose bf16 would disagree with fp32
    model.encoder  # noqa: B018
    assert (model.precision, model.bf16_probed, model.bf16_agreement) == ("fp32", False, 0.5)


@pytest.mark.parametrize(
    "stored",
    [
        {"key": KEY, "min_cosine": "0.9999"},
        {"key": KEY, "min_cosine": float("nan")},
        {"key": KEY, "min_cosine": 7.0},
        {"key": KEY, "min_cosine": True},
        {"key": {**KEY, "size": 3}, "min_cosine": 0.9999},
    ],
    ids=["string", "nan", "not-a-cosine", "bool", "other-model-size"],
)
def test_parse_takes_only_a_cosine_for_the_same_key(stored: dict) -> None:
    assert bf16_verdict.parse(json.dumps(stored), KEY) is None
    assert bf16_verdict.parse(json.dumps({"key": KEY, "min_cosine": 0.99991}), KEY) == 0.99991


def test_the_key_changes_with_the_model_file_and_the_code(tmp_path: Path) -> None:
    model, code = tmp_path / "m.bin", tmp_path / "enc.py"
    model.write_bytes(b"weights")
    code.write_text("x = 1")

    def key() -> dict:
        return bf16_verdict.probe_key(model, code=[code], probe_texts=TEXTS, versions={"t": "1"})

    before = key()
    bf16_verdict.store(before, 0.9999, tmp_path)
    assert bf16_verdict.load(key(), tmp_path) == 0.9999
    model.write_bytes(b"other weights")
    assert key() != before and bf16_verdict.load(key(), tmp_path) is None
    model.write_bytes(b"weights")
    code.write_text("x = 2")
    assert key()["code"] != before["code"]


def test_an_unwritable_cache_folder_is_not_an_error(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    bf16_verdict.store(KEY, 0.9999, blocked)  # logs, raises nothing
    assert bf16_verdict.load(KEY, blocked) is None


def test_cpu_identity_reads_the_first_processor() -> None:
    text = (
        "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon  X\nflags\t\t: fpu avx512_bf16\n"
        "\nprocessor\t: 1\nvendor_id\t: Other\nmodel name\t: Y\nflags\t\t: fpu\n"
    )
    assert bf16_verdict.cpu_identity(text) == "GenuineIntel|Xeon X|fpu avx512_bf16"
