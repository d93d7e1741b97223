"""The insights' arithmetic on plain values: time buckets, histograms, percentiles, counts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from persistence import bucketing as b

T0 = datetime(2026, 11, 30, 9, 15, tzinfo=UTC)  # a Monday


def test_unit_follows_the_window_span() -> None:
    assert b.choose_unit(T0, T0 + timedelta(hours=47)) == "hour"
    assert b.choose_unit(T0, T0 + timedelta(days=7)) == "day"
    assert b.choose_unit(T0, T0 + timedelta(days=365)) == "week"
    # A forced hourly bucket over a year would be thousands of points: widened to fit (≤ 400).
    assert b.fit_unit(T0, T0 + timedelta(days=365), "hour") == "day"
    assert b.fit_unit(T0, T0 + timedelta(days=500), "hour") == "week"
    assert b.fit_unit(T0, T0 + timedelta(days=3), "hour") == "hour"


def test_time_series_fills_gaps_and_counts_each_series() -> None:
    events = [
        (T0, "sessions"),
        (T0 + timedelta(minutes=40), "lookups"),
        (T0 + timedelta(minutes=41), "lookups"),
        (T0 + timedelta(hours=3), "sessions"),
        (T0 - timedelta(days=1), "sessions"),  # outside the window
    ]
    series = b.time_series(events, T0, T0 + timedelta(hours=3, minutes=5), "hour")
    assert [x.start.hour for x in series] == [9, 10, 11, 12]
    assert [x.counts for x in series] == [
        {"lookups": 2, "sessions": 1},
        {"lookups": 0, "sessions": 0},
        {"lookups": 0, "sessions": 0},
        {"lookups": 0, "sessions": 1},
    ]


def test_naive_timestamps_are_utc_and_weeks_start_on_monday() -> None:
    naive = datetime(2026, 12, 3, 23, 59)  # SQLite hands back naive UTC
    assert b.floor_to(naive, "day") == datetime(2026, 12, 3, tzinfo=UTC)
    assert b.floor_to(naive, "week") == datetime(2026, 11, 30, tzinfo=UTC)
    series = b.time_series([(naive, "sessions")], T0, naive, "day")
    assert len(series) == 4 and series[-1].counts == {"sessions": 1}


def test_histogram_bins_include_both_ends() -> None:
    bins = b.histogram([0.0, 0.05, 0.1, 0.55, 0.999, 1.0, 1.0000001, -0.01], 0.0, 1.0, 10)
    assert [x.count for x in bins] == [3, 1, 0, 0, 0, 1, 0, 0, 0, 3]
    assert (bins[0].lo, bins[0].hi, bins[-1].hi) == (0.0, 0.1, 1.0)
    assert sum(x.count for x in b.histogram([], 0, 100, 10)) == 0
    assert [x.count for x in b.histogram([30, 65, 100], 0, 100, 10)][3::3] == [1, 1, 1]


def test_percentiles_are_nearest_rank() -> None:
    values = sorted(range(1, 101))
    assert b.percentile(values, 50) == 50 and b.percentile(values, 95) == 95
    assert b.percentile([7], 95) == 7 and b.percentile([], 50) is None
    lat = b.latency_by_tool(
        [("lookup_knowledge", 10), ("lookup_knowledge", 30), ("lookup_knowledge", 20)]
        + [("get_current_time", 1), ("get_current_time", None)]
    )
    assert lat[0] == b.Latency("lookup_knowledge", 3, 20, 30, 30)
    assert lat[1] == b.Latency("get_current_time", 2, 1, 1, 1)


def test_counts_keep_the_known_order_and_none_last() -> None:
    counts = {None: 4, "REFERENCE": 2, "PRECISE": 1, "ODD": 5, "NONE": 0}
    order = ("PRECISE", "HIGHLY_RELEVANT", "REFERENCE", "NONE")
    assert b.ranked_counts(counts, order) == [
        ("PRECISE", 1),
        ("REFERENCE", 2),
        ("ODD", 5),
        (None, 4),
    ]
    assert b.ratio(1, 3) == 0.3333 and b.ratio(1, 0) is None
