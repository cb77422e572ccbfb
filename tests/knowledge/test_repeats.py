"""Whether one memory repeats another told in other words (pure): names however written,
quantities in other units, a paraphrase by meaning and words together, and what keeps two
memories that each name a thing of their own apart."""

from __future__ import annotations

import pytest

from knowledge.contradictions import CONFLICT, REPEAT
from knowledge.reading import read
from knowledge.repeats import same_names
from tests.knowledge.test_contradictions import compare

TOLD_AGAIN = [
    # names in capitals against the same names in lower case, a slash for "and"
    (
        "Avatars are resized by Pillow in the resize_avatar Celery task on the Redis queue,"
        " never in the request cycle.",
        "note: avatar resizing (pillow) runs in celery task resize_avatar on the redis queue"
        " -- NOT in the request/response cycle",
    ),
    # one duration in other units
    (
        "Session cookies expire after 90 minutes of inactivity.",
        "Session cookies expire after 1.5 hours of inactivity.",
    ),
    (
        "Upload tokens live for 120 seconds (UPLOAD_TOKEN_TTL=120).",
        "Upload tokens: 2 minutes of life, configured through UPLOAD_TOKEN_TTL.",
    ),
    (
        "The export job's worker gets 2 GB of memory.",
        "The export job's worker gets 2048 MB of memory.",
    ),
    # a percentage as a ratio
    (
        "Warm up for 500 steps, then decay linearly to 10% of the peak rate.",
        "The learning rate warms up over 500 steps and then decays linearly down to 0.1x the"
        " peak rate.",
    ),
    # paraphrases: near in meaning, with four words of substance or more in common
    (
        "Webhook deliveries must be signed with the HMAC secret from settings.WEBHOOK_SECRET,"
        " never with the API key.",
        "Sign every webhook delivery using WEBHOOK_SECRET (HMAC), not the API key.",
    ),
    (
        "Image uploads are scanned by ClamAV before they are stored; infected files are"
        " rejected with a 422.",
        "Every uploaded image goes through a ClamAV scan before storage, and an infected"
        " upload gets a 422 back.",
    ),
    (
        "Feature flags are read once at startup from flags.yaml; changing a flag needs a restart.",
        "flags.yaml is loaded a single time when the process boots, so a flag change only"
        " takes effect after restarting.",
    ),
    # a rule, and the incident that taught it: the harm it did is no instruction to do it
    (
        "Don't call Config.load() at import time in task modules.",
        "Learned in run-044: Config.load() calls at import time in task modules were"
        " exhausting the connection pool; load it inside the task.",
    ),
]

APART = [
    # each names a tool of its own
    (
        "Avatars are resized by Pillow in the resize_avatar Celery task, never in the request"
        " cycle.",
        "Avatars are resized by ImageMagick in the resize_avatar Celery task, never in the"
        " request cycle.",
    ),
    # one setting, a file and an address of its own for each build
    (
        "Debug builds call https://api-dev.example.app (API_BASE_URL in Debug.xcconfig).",
        "Release builds call https://api.example.app (API_BASE_URL in Release.xcconfig).",
    ),
    (
        "Staging reads VITE_API_URL from .env.staging (https://api.staging.example.dev).",
        "Production reads VITE_API_URL from .env.production (https://api.example.io).",
    ),
    # one sentence edited, not said again
    (
        "Log the full request body for failed webhook deliveries so support can replay them.",
        "Mask the full request body for failed webhook deliveries before logging it, since it"
        " holds card data.",
    ),
    (
        "Changelog: the webhook sender retries with exponential backoff and jitter.",
        "Changelog: the webhook sender retries with a fixed delay and no jitter.",
    ),
    # files of one folder, modules of one package, releases of one line: other things
    (
        "Debug builds load ios/Config/Debug.xcconfig for the API host.",
        "Release builds load ios/Config/Release.xcconfig for the API host.",
    ),
    (
        "Celery workers read app/settings/worker.py at startup.",
        "The web process reads app/settings/web.py at startup, unlike the workers.",
    ),
    (
        "Call orders.services.create_order from the orders view to create an order.",
        "Call billing.services.create_order from the checkout to create an order.",
    ),
    (
        "Load configuration with a.config.load() at startup.",
        "Load configuration with b.config.load() at startup.",
    ),
    (
        "v2.3.0 - the webhook sender retries with exponential backoff.",
        "v2.4.0 - the webhook sender retries with a fixed delay.",
    ),
    # another number, or the same number of another thing
    (
        "Tier 1 on-call must acknowledge pages within 10 minutes.",
        "Tier 2 on-call must acknowledge pages within 10 minutes.",
    ),
    (
        "The events table has 40M rows, so the backfill runs in batches.",
        "The events table backfill takes 40 minutes, so it runs in batches.",
    ),
    (
        "The worker container has a memory limit of 512m and a job timeout of 30m.",
        "The worker container has a memory limit of 30 minutes and a job timeout of 512m.",
    ),
    # names or a number one side adds to a memory that names nothing
    (
        "Integration tests must run against a real database, never against mocks.",
        "Integration tests must run against a real database, never against mocks, except the"
        " Stripe and Twilio suites.",
    ),
    (
        "Keep the connection pool small for the reporting service.",
        "Keep the connection pool small for the reporting service, at 5 connections.",
    ),
    # names one side adds, where the other writes a shared name in lower case
    (
        "Run the django integration tests before merging to main.",
        "Run the Django integration tests before merging to main, except the Stripe and Twilio"
        " suites.",
    ),
    # a single letter in capitals is a name
    (
        "Plan B for the region outage is a failover to eu-west-1.",
        "Plan C for the region outage is a failover to eu-west-1.",
    ),
    # numbers a little apart are other numbers; a change by a percentage is no ratio
    (
        "The public API SLO is 99.9% availability per month.",
        "The public API SLO is 99.99% availability per month.",
    ),
    ("Batch inserts go in batches of 1000 rows.", "Batch inserts go in batches of 1005 rows."),
    (
        "Increase the cache size by 50% before the launch.",
        "Increase the cache size to 0.5x before the launch.",
    ),
    # one dotted name in common is one thing in common, however many parts it has
    (
        "app.core.cache.get_client returns a shared redis client for the process.",
        "app.core.cache.get_client opens a new redis connection on every call.",
    ),
    # two short lines of a history about one thing, three words in common: two events
    ("improved static file serving.", "static file serving uses the logger now."),
    ("reverse sorting of accept headers.", "reversed sorting of accept parsing as documented."),
]


@pytest.mark.parametrize(("a", "b"), TOLD_AGAIN)
def test_the_same_claim_in_other_words_is_a_repeat(a, b):
    assert compare(a, b).kind == REPEAT, compare(a, b).evidence
    assert compare(b, a).kind == REPEAT


@pytest.mark.parametrize(("a", "b"), APART)
def test_memories_that_each_name_their_own_thing_do_not_repeat(a, b):
    assert compare(a, b).kind != REPEAT
    assert compare(b, a).kind != REPEAT


def test_a_change_by_a_percentage_is_no_ratio_to_contradict():
    a = "Increase the connection pool by 50% during the Black Friday peak."
    b = "Grow the connection pool to 1.5x during the Black Friday peak."
    assert compare(a, b).kind is None


def test_the_incident_behind_a_rule_does_not_contradict_it():
    a, b = TOLD_AGAIN[-1]
    assert compare(a, b).kind != CONFLICT


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        # a qualified name by its last part, both ways
        ("Never hold a tokio Mutex guard across .await.", "Never hold a tokio::sync::Mutex"
         " guard across .await.", True),
        ("Prorate from billing_anchor.", "Prorate from subscription.billing_anchor.", True),
        # a file is its whole name: another file with the same ending is another file
        ("Set API_BASE_URL in Debug.xcconfig.", "Set API_BASE_URL in Release.xcconfig.", False),
        ("Use io.BytesIO for the body.", "Use six.BytesIO for the body.", False),
        # a unit in capitals is no name
        ("The worker gets 2 GB.", "The worker gets 2048 MB.", True),
        # one quantity in other units; another quantity
        ("The keepalive is 90 seconds.", "The keepalive is 1.5 minutes.", True),
        ("The keepalive is 90 seconds.", "The keepalive is 2 minutes.", False),
        # a number one side alone states, a digit inside another number is not it
        ("Tier 1 on-call acknowledges within 10 minutes.", "On-call acknowledges within 10"
         " minutes.", False),
        # the same value measuring another thing
        ("Thumbnails are cached for 10 minutes.", "Thumbnails are cached, and a failed upstream"
         " render is retried after 600 seconds.", False),
        # a name on each side is two things
        ("Resize with Pillow.", "Resize with ImageMagick.", False),
        # what one side alone names says where or how, never what
        ("Regenerate the golden files with GOLDEN_UPDATE=1.", "Regenerate the golden files in"
         " testdata/golden with GOLDEN_UPDATE=1.", True),
        ("Regenerate the golden files with GOLDEN_UPDATE=1.", "Regenerate the golden files"
         " (CLI output) with GOLDEN_UPDATE=1.", True),
        ("Deploys run on Fridays (ArgoCD).", "Deploys run on Fridays (ArgoCD, Helm).", False),
        ("Regenerate the golden files in testdata/golden with GOLDEN_UPDATE=1.", "Regenerate"
         " the golden files in fixtures/expected with GOLDEN_UPDATE=1.", False),
    ],
)  # fmt: skip
def test_names_are_the_same_however_written(a, b, same):
    assert same_names(read(a), read(b)) is same
    assert same_names(read(b), read(a)) is same
