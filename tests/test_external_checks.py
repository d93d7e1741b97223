"""The external checks of the retrieval eval (``bench/eval/external``): their questions point at
documents the manifests pin, and ``build.py`` lays a check out from a git copy of the collection."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.paths import ROOT

EXTERNAL = ROOT / "bench" / "eval" / "external"
MANIFESTS = sorted(EXTERNAL.glob("*_*.yaml"))


def _build_module():  # noqa: ANN202 - a script, loaded by path
    spec = importlib.util.spec_from_file_location("external_build", EXTERNAL / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _manifests() -> list[dict]:
    return [m for p in MANIFESTS if "files" in (m := yaml.safe_load(p.read_text("utf-8")))]


@pytest.mark.parametrize("manifest", _manifests(), ids=lambda m: m["name"])
def test_every_question_expects_documents_the_manifest_pins(manifest: dict) -> None:
    cases = yaml.safe_load((EXTERNAL / manifest["queries"]).read_text("utf-8"))
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids)), "a case id appears twice"
    files = set(manifest["files"])
    unknown = {p for c in cases for p in c.get("expected") or [] if p not in files}
    assert not unknown, f"expected paths not in the manifest: {sorted(unknown)[:5]}"
    assert len(manifest["commit"]) == 40  # a pinned commit, not a branch
    answerable = [c for c in cases if c.get("expected")]
    assert len(answerable) >= 100  # a check small enough to swing on two cases says nothing


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_build_lays_out_a_check_at_the_pinned_commit(tmp_path: Path) -> None:
    repo = tmp_path / "collection"
    (repo / "alerts" / "etcd").mkdir(parents=True)
    (repo / "alerts" / "etcd" / "etcdNoLeader.md").write_text("# etcdNoLeader\n\nold\n", "utf-8")
    _git("init", "-q", cwd=repo)
    _git("add", ".", cwd=repo)
    _git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "one", cwd=repo)
    pinned = _git("rev-parse", "HEAD", cwd=repo)
    # a newer commit in the clone must not change what the check measures
    (repo / "alerts" / "etcd" / "etcdNoLeader.md").write_text("# etcdNoLeader\n\nnew\n", "utf-8")
    _git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qam", "two", cwd=repo)
    queries = tmp_path / "queries_zh_x.yaml"
    queries.write_text("- id: q1\n  query: etcd 没有 leader\n  expected: [etcd/a.md]\n", "utf-8")
    manifest = tmp_path / "x_zh.yaml"
    manifest.write_text(
        yaml.safe_dump(
            {
                "name": "x",
                "lang": "zh",
                "commit": pinned,
                "queries": queries.name,
                "files": {"etcd/a.md": "alerts/etcd/etcdNoLeader.md"},
            }
        ),
        "utf-8",
    )
    build = _build_module()
    dest = tmp_path / "check"
    assert build.build(manifest, repo, dest) == 1
    assert (dest / "corpus" / "zh" / "etcd" / "a.md").read_text("utf-8").endswith("old\n")
    assert (dest / "queries_zh.yaml").read_text("utf-8") == queries.read_text("utf-8")
    assert (dest / "knowledge_base").is_dir()  # the shipped runbooks stay out of a Chinese check
    # a second build into the same folder is refused rather than mixed with the first
    with pytest.raises(SystemExit, match="not empty"):
        build.build(manifest, repo, dest)
    # a commit the copy lacks is named, with the way to get it
    missing = manifest.read_text("utf-8").replace(pinned, "f" * 40)
    manifest.write_text(missing, "utf-8")
    with pytest.raises(SystemExit, match="fetch that commit"):
        build.build(manifest, repo, tmp_path / "again")
