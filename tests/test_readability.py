"""How much of a query the embedding model reads — and the dense route's vote that follows it."""

import pytest

from retrieval.readability import ScriptReadability, TokenizerReadability, vocabulary_scripts


def test_script_readability_for_hosted_models() -> None:
    english = ScriptReadability(["latin"])
    assert english("ClusterOperatorDown") == 1.0
    assert english("数据库连接池超时") == 0.0
    assert english("Redis 内存满了") == pytest.approx(5 / 9)
    assert ScriptReadability("all")("数据库连接池超时") == 1.0
    assert english("？！ ...") == 0.0  # nothing to read


def test_vocabulary_coverage_decides_the_scripts() -> None:
    vocab = [f"word{i}" for i in range(1200)] + ["内", "存", "##满"]
    assert vocabulary_scripts(vocab) == {"latin", "digit"}
    assert "cjk" in vocabulary_scripts(vocab + [chr(0x4E00 + i) for i in range(1200)])


def test_the_packaged_model_reads_english_not_chinese(embeddings) -> None:
    read = TokenizerReadability(embeddings.tokenizer)
    assert read.scripts == {"latin", "digit"}  # 244 CJK entries in a 30,522-entry vocabulary
    assert read("KubePodCrashLooping pod is restarting") == 1.0
    assert read("数据库连接池超时怎么排查？") == 0.0
    assert 0.3 < read("Redis 内存满了怎么处理？") < 0.5
