"""An import embeds its files window by window: windows big enough to keep the model's workers
busy, small enough (in bytes) that a run of large files holds no more than before."""

from __future__ import annotations

from retrieval.writing.import_windows import import_windows


def _files(*sizes: int) -> list[tuple[str, bytes, str]]:
    return [(f"f{i}.md", b"x" * size, f"sha{i}") for i, size in enumerate(sizes)]


def test_small_files_share_windows_of_the_file_cap_in_order() -> None:
    todo = _files(*[2_000] * 70)
    windows = list(import_windows(todo, max_files=32, max_bytes=256 * 1024))
    assert [(start, len(w)) for start, w in windows] == [(0, 32), (32, 32), (64, 6)]
    assert [item for _, w in windows for item in w] == todo  # every file once, in order


def test_large_files_close_a_window_by_bytes_and_a_huge_one_stands_alone() -> None:
    todo = _files(100_000, 100_000, 100_000, 2_000_000, 10)
    windows = [[name for name, _, _ in w] for _, w in import_windows(todo, 32, 256 * 1024)]
    assert windows == [["f0.md", "f1.md"], ["f2.md"], ["f3.md"], ["f4.md"]]


def test_nothing_to_import_makes_no_window() -> None:
    assert list(import_windows([])) == []
