"""Lay out an external check of the retrieval eval: someone else's documents, our own questions.

The manifests here (``openshift_en.yaml``, ``kudig_zh.yaml``) name a public collection, the commit
and which of its files make the corpus; the questions next to them were written from file names
and titles before the documents were read. The documents themselves are not in this repository
(one collection has no licence; copying either adds nothing the commit does not pin), so a check
is built from a local copy of the collection — a clone, or a bare git directory:

    git clone https://github.com/openshift/runbooks /tmp/openshift-runbooks
    .venv/bin/python bench/eval/external/build.py bench/eval/external/openshift_en.yaml \\
        /tmp/openshift-runbooks /tmp/ext-en
    .venv/bin/python bench/eval_retrieval.py --lang en --eval-root /tmp/ext-en --work /tmp/ext-en-stores

The output folder is laid out like ``bench/eval/`` (``corpus/<lang>/<folder>/<file>``, the queries
file beside it); for Chinese an empty ``knowledge_base/`` keeps the shipped runbooks out of the
base, so the check holds the collection alone. Files are read at the manifest's commit when the
copy is a git repository (a newer clone still measures the same documents).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent


def git_dir(source: Path) -> Path | None:
    """The git directory of a clone or a bare repository, or None for a plain folder."""
    for candidate in (source / ".git", source):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def read(source: Path, commit: str, path: str) -> bytes:
    gd = git_dir(source)
    if gd is None:
        return (source / path).read_bytes()
    done = subprocess.run(
        ["git", f"--git-dir={gd}", "show", f"{commit}:{path}"], capture_output=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(
            f"{path} at {commit[:12]} is not in {source}: fetch that commit "
            f"(git -C {source} fetch origin {commit}) or pass a copy that has it"
        )
    return done.stdout


def build(manifest: Path, source: Path, dest: Path) -> int:
    spec = yaml.safe_load(manifest.read_text(encoding="utf-8"))
    lang = spec["lang"]
    if dest.exists() and any(dest.iterdir()):
        raise SystemExit(f"{dest} is not empty: pass a new folder (the check is rebuilt whole)")
    corpus = dest / "corpus" / lang
    for target, path in spec["files"].items():
        out = corpus / target
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(read(source, str(spec["commit"]), path))
    shutil.copy2(manifest.parent / spec["queries"], dest / f"queries_{lang}.yaml")
    # the eval adds the shipped runbooks to a Chinese base unless the root brings its own
    if lang == "zh":
        (dest / "knowledge_base").mkdir()
    return len(spec["files"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest", type=Path, help="openshift_en.yaml or kudig_zh.yaml")
    parser.add_argument("source", type=Path, help="a clone (or bare git dir) of the collection")
    parser.add_argument("dest", type=Path, help="a new folder for the eval root")
    args = parser.parse_args()
    n = build(args.manifest, args.source, args.dest)
    print(f"{n} documents and the queries laid out in {args.dest}", file=sys.stderr)


if __name__ == "__main__":
    main()
