"""How much of a query the embedding model reads — and the dense route's vote that follows it."""

import pytest

from retrieval.l1.readability import ScriptReadability, TokenizerReadability, vocabulary_scripts


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


def test_the_packaged_minilm_reads_english_not_chinese(minilm) -> None:
    read = TokenizerReadability(minilm.tokenizer)
    assert read.scripts == {"latin", "digit"}  # 244 CJK entries in a 30,522-entry vocabulary
    assert read("KubePodCrashLooping pod is restarting") == 1.0
    assert read("数据库连接池超时怎么排查？") == 0.0
    assert 0.3 < read("Redis 内存满了怎么处理？") < 0.5


def test_the_default_model_reads_chinese_and_english(embeddings) -> None:
    read = TokenizerReadability(embeddings.tokenizer)
    assert {"latin", "cjk", "digit"} <= read.scripts
    assert read("KubePodCrashLooping pod is restarting") == 1.0
    assert read("数据库连接池超时怎么排查？") == 1.0
    assert read("Redis 内存满了怎么处理？") == 1.0
    # a character outside its vocabulary is still not read (Egyptian hieroglyphs)
    assert read("Redis \U00013000\U00013001") == pytest.approx(5 / 7)


async def test_a_chinese_question_gets_the_dense_vote_with_the_default_model(
    tmp_path, embeddings, minilm
) -> None:
    from tests.support.kb import build_kb, kb_settings

    question = "数据库连接池满了怎么办"
    e5 = await build_kb(kb_settings(tmp_path / "e5"), embeddings)
    english = await build_kb(kb_settings(tmp_path / "minilm"), minilm)
    try:
        assert e5.lookup_service.route_weights(question)["dense"] == 1.0
        assert english.lookup_service.route_weights(question)["dense"] == 0.0
    finally:
        for kb in (e5, english):
            await kb.close()
            await kb.db.dispose()
