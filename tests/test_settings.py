from pathlib import Path

import pytest

from settings import SettingsError, load_settings


def test_defaults_are_the_embedded_stack() -> None:
    s = load_settings()
    assert s.database_url == "sqlite+aiosqlite:///data/superbiz.db"
    assert s.milvus_uri == "data/milvus.db"
    assert s.knowledge_base_dir == Path("data/knowledge_base")
    assert s.port == 9900
    assert (s.database_kind, s.milvus_kind, s.chat_model_kind) == (
        "sqlite",
        "milvus-lite",
        "offline",
    )
    assert s.retrieval.normalization.max_l2_distance == 2.0


def test_every_local_store_follows_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "state"))
    s = load_settings()
    assert s.database_url == f"sqlite+aiosqlite:///{tmp_path / 'state' / 'superbiz.db'}"
    assert s.milvus_uri == str(tmp_path / "state" / "milvus.db")
    assert s.knowledge_base_dir == tmp_path / "state" / "knowledge_base"


def test_each_store_setting_still_overrides_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DATABASE_URL", "mysql+asyncmy://root:@127.0.0.1:3306/x")
    monkeypatch.setenv("MILVUS_URI", "http://milvus:19530")
    monkeypatch.setenv("KNOWLEDGE_BASE_DIR", str(tmp_path / "kb"))
    s = load_settings()
    assert s.database_url == "mysql+asyncmy://root:@127.0.0.1:3306/x"
    assert s.milvus_uri == "http://milvus:19530"
    assert s.knowledge_base_dir == tmp_path / "kb"


def test_config_yaml_sets_nested_kebab_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "port: 9911\n"
        "retrieval:\n"
        "  normalization:\n"
        "    max-l2-distance: 4.0\n"
        "    highly-relevant-threshold: 0.9\n"
        "  chunk-size: 300\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("CONFIG_FILE", str(cfg))
    s = load_settings()
    assert s.port == 9911
    assert s.retrieval.normalization.max_l2_distance == 4.0
    assert s.retrieval.normalization.highly_relevant_threshold == 0.9
    assert s.retrieval.normalization.reference_threshold == 0.5  # untouched default survives
    assert s.retrieval.chunk_size == 300


def test_env_wins_over_config_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("retrieval:\n  normalization:\n    max-l2-distance: 4.0\n", encoding="utf-8")
    monkeypatch.setenv("CONFIG_FILE", str(cfg))
    monkeypatch.setenv("RETRIEVAL__NORMALIZATION__MAX_L2_DISTANCE", "3")
    monkeypatch.setenv("DATABASE_URL", "mysql+asyncmy://root:@127.0.0.1:3306/x")
    s = load_settings()
    assert s.retrieval.normalization.max_l2_distance == 3.0
    assert s.database_kind == "mysql"


@pytest.mark.parametrize(
    ("env", "value", "names"),
    [
        ("DATABASE_URL", "postgresql://localhost/db", ["database-url", "sqlite+aiosqlite://"]),
        ("MILVUS_URI", "milvus", ["milvus-uri", ".db", "http://"]),
        ("PORT", "99999", ["port", "less than or equal to 65535"]),
        (
            "RETRIEVAL__NORMALIZATION__MAX_L2_DISTANCE",
            "-1",
            [
                "retrieval.normalization.max-l2-distance",
                "RETRIEVAL__NORMALIZATION__MAX_L2_DISTANCE",
            ],
        ),
    ],
)
def test_bad_value_names_key_and_allowed_form(
    monkeypatch: pytest.MonkeyPatch, env: str, value: str, names: list[str]
) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(SettingsError) as err:
        load_settings()
    for name in names:
        assert name in str(err.value)


def test_unknown_yaml_key_is_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("retrieval:\n  normalisation:\n    max-l2-distance: 4\n", encoding="utf-8")
    monkeypatch.setenv("CONFIG_FILE", str(cfg))
    with pytest.raises(SettingsError, match="retrieval.normalisation"):
        load_settings()


def test_thresholds_must_be_ordered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RETRIEVAL__NORMALIZATION__REFERENCE_THRESHOLD", "0.9")
    with pytest.raises(SettingsError, match="reference-threshold"):
        load_settings()
