"""Quantities as a sentence says them, read to one measure (pure)."""

from __future__ import annotations

import pytest

from knowledge.claims import meant, quantities, split
from knowledge.schedules import schedules

HOUR, MINUTE = 3600.0, 60.0

READINGS = [
    # thousands written with commas are one number, not two
    ("The export writes batches of 1,000 rows.", [("count:row/batch", 1000.0)]),
    ("The export writes batches of 12,500 rows.", [("count:row/batch", 12500.0)]),
    # a list of numbers is not a number with thousands
    ("Open ports 80,443,8080 on the balancer.", []),
    # a half added to a whole number, before or after the unit
    ("Refresh tokens last one and a half hours.", [("time", 1.5 * HOUR)]),
    ("Refresh tokens last 2 and a half days.", [("time", 2.5 * 86400)]),
    ("Refresh tokens last an hour and a half.", [("time", 1.5 * HOUR)]),
    ("Refresh tokens last two hours and a half.", [("time", 2.5 * HOUR)]),
    # quarters of a unit
    ("The cache entry lives for a quarter of an hour.", [("time", 15 * MINUTE)]),
    ("The cache entry lives for three quarters of an hour.", [("time", 45 * MINUTE)]),
    ("Search refilters after a quarter second.", [("time", 0.25)]),
    # a whole unit with its adjective
    ("Keep rendered tiles in Redis for a full week.", [("time", 7 * 86400.0)]),
    ("Uploads are kept for a whole day.", [("time", 86400.0)]),
    ("A whole second attempt is made.", []),
    # a number and its unit joined into one adjective
    ("Each job has a 30-second timeout.", [("time", 30.0)]),
    ("Each job has a five-minute timeout.", [("time", 5 * MINUTE)]),
    ("Search refilters after a quarter-second pause.", [("time", 0.25)]),
    ("The report runs in a half-hour window.", [("time", 30 * MINUTE)]),
    ("Uploads have a 2-GB cap.", [("size", 2 * 1024.0**3)]),
    # thousands and millions of things, not kilobytes or minutes
    ("The import takes 10k rows per batch.", [("count:row/batch", 10_000.0)]),
    # so many of a thing per batch, however said
    ("The backfill runs in batches of 5000 rows.", [("count:row/batch", 5000.0)]),
    ("The topic holds 2.5M events a day.", [("count:event/time", 2.5e6 / 86400)]),
    ("Each worker keeps an 8K buffer.", [("size", 8 * 1024.0)]),
    ("Sessions time out after 5m.", [("m", 5.0)]),
    # an ordinal attempt is a limit of so many attempts
    ("Webhook retries stop after the fifth attempt.", [("count:attempt", 5.0)]),
    ("Login is locked after the 3rd failed attempt.", [("count:attempt", 3.0)]),
    # one attempt among others is no limit
    ("On the second retry the sync job pages the on-call engineer.", []),
    ("Wait before a second attempt.", []),
    ("The second release sets NOT NULL.", []),
    ("Retry after a second.", [("time", 1.0)]),
    ("The poller sleeps a second between requests.", [("time", 1.0)]),
    # a fraction measures only with a unit
    ("Half the workers restart nightly.", []),
    ("Revenue is reported every quarter.", []),
    # how often is no duration: "a day" in "twice a day"
    ("The index rebuild runs twice a day.", []),
    ("Sync the mirror 3x a week.", []),
    # the unit a setting's name ends in, for the value given to it
    ("Thumbnails are cached with `THUMB_CACHE_TTL_SECS=7200`.", [("time", 2 * HOUR)]),
    ("The gateway sets `upstreamTimeoutMs: 2500`.", [("time", 2.5)]),
    ("Uploads are refused above `MAX_UPLOAD_MB=25`.", [("size", 25 * 1024.0**2)]),
    # a point in time or a bound by its name, or an argument, is no amount of the unit
    ("The backup starts at `BACKUP_START_HOUR=3`.", []),
    ("The handler waits `Duration.ofSeconds(8)` at most.", []),
    # what failed is an attempt; a setting that caps attempts by its name counts them
    ("Messages dead-letter after the fourth failed delivery.", [("count:attempt", 4.0)]),
    ("The queue sets `maxReceiveCount: 6`.", [("count:attempt", 6.0)]),
    ("On the second failed login we show a captcha.", []),
]


@pytest.mark.parametrize(("text", "expected"), READINGS)
def test_a_quantity_is_read_to_one_measure(text, expected):
    found = [(q.dimension, q.value) for sentence in split(text) for q in quantities(sentence)]
    assert [dimension for dimension, _ in found] == [dimension for dimension, _ in expected]
    for (_, value), (_, wanted) in zip(found, expected, strict=True):
        assert value == pytest.approx(wanted)


def test_the_span_covers_every_word_of_the_quantity():
    text = "Refresh tokens last an hour and a half, then expire."
    (sentence,) = split(text)
    (quantity,) = quantities(sentence)
    assert text[slice(*quantity.span)] == "an hour and a half"


@pytest.mark.parametrize(
    ("text", "setting", "about"),
    [
        (
            "SessionPolicy.BACKGROUND_TIMEOUT is 15 minutes.",
            "sessionpolicy.background_timeout",
            "background",
        ),
        ("Keep `upload_timeout` at 30 seconds.", "upload_timeout", "upload"),
        ("Sources have freshness warn_after: 12 hours.", "warn_after", "warn"),
        ("Cookies set maxAge=3600 seconds.", "maxage", "age"),
        ("Sessions time out after 15 minutes.", "", "session"),
    ],
)
def test_a_value_given_to_a_setting_is_about_what_its_name_says(text, setting, about):
    (sentence,) = split(text)
    (quantity,) = quantities(sentence)
    assert quantity.setting == setting
    assert about in quantity.subject


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("Submissions go out on Fridays.", {4}),
        ("Deploys run Monday to Friday only.", {0, 1, 2, 3, 4}),
        ("Reports are mailed on Monday mornings.", {0}),
        # a day that says which, not when
        ("The job runs daily, so Monday dashboards include Sunday's data.", set()),
    ],
)
def test_a_day_is_read_where_it_says_when(text, days):
    (schedule,) = [found for sentence in split(text) for found in schedules(sentence)]
    assert schedule.days == days


def test_a_word_that_begins_like_a_day_is_no_day():
    said = "Snowflake's resource monitor suspends the warehouse; sunsetting saturates it."
    assert [found for sentence in split(said) for found in schedules(sentence)] == []
    (weekly,) = schedules(split("The cache purge runs weekly, thus the bill stays flat.")[0])
    assert weekly.days == frozenset()
    (monitoring,) = schedules(split("Monitoring runs once per minute.")[0])
    assert "monitor" in monitoring.subject
    (thursday,) = schedules(split("The release train leaves every Thur at 09:00.")[0])
    assert thursday.days == {3}


@pytest.mark.parametrize(
    ("text", "period"),
    [
        ("Location is sampled once per second during workouts.", 1.0),
        ("Metrics are scraped four times per minute.", 15.0),
        ("The crawler is started twice a day.", 43200.0),
        ("The crawler runs three times a day.", 28800.0),
        ("Backups run twice daily.", 43200.0),
        ("The crawler refreshes feeds 6x a day.", 14400.0),
        ("The sitemap is regenerated six times an hour.", 600.0),
        ("Compaction runs every other day.", 172800.0),
        ("The physics tick runs every 33 ms.", 0.033),
    ],
)
def test_so_many_times_per_unit_is_how_often(text, period):
    (schedule,) = [found for sentence in split(text) for found in schedules(sentence)]
    assert schedule.period == period


def test_so_many_things_per_second_or_month_is_no_schedule():
    for text in (
        "The monitor allows 400 credits per month.",
        "Clients send 50 requests per second.",
        "The sync job is capped at 1000 requests per hour.",
        "The alert fires at most once per minute.",
        "Reports are enqueued every N minutes, N from REPORT_INTERVAL.",
    ):
        assert [found for sentence in split(text) for found in schedules(sentence)] == []


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("maxAge", {"max", "age"}),
        ("Raidhall.Jobs.ResetWeekly", {"reset", "weekly"}),
        ("cmd/reconcile", {"reconcil"}),
        ("/api/cron/inventory-sync", {"inventory", "sync"}),
        ("vercel.json", {"vercel"}),
        ("settlements", {"settlement"}),
        ("10.minutes", set()),
    ],
)
def test_an_identifier_says_the_words_of_its_own_name(text, said):
    (sentence,) = split(text)
    assert meant(sentence.tokens[0]) == said
