"""A role given two tools, a version a setting or a pin requires, and "every" as how often
(pure readings, through the comparison of two memories)."""

from __future__ import annotations

import pytest

from knowledge import exclusive
from knowledge.claims import split
from knowledge.contradictions import CONFLICT, REPEAT
from knowledge.contradictions import compare as compare_words
from knowledge.reading import read
from knowledge.roles import roles
from knowledge.said import Read, sentence_words
from tests.knowledge.test_contradictions import compare

DISAGREE = [
    # one role, two tools, each never named by the other
    ("choice", "Client state is Pinia, one store per page in `src/stores/`.",
     "Client state lives in Vuex modules registered in `src/store/index.ts`."),
    ("choice", "Background jobs are Sidekiq workers under app/workers.",
     "Background jobs are GoodJob jobs; there is no Redis in production."),
    ("choice", "Feature flags are managed with Unleash; every flag has an owner.",
     "Feature flags are managed in LaunchDarkly, named after the ticket."),
    # the other names the tool only to deny it; a role in capitals; what is reached
    ("choice", "Product search is Meilisearch.", "Product search is OpenSearch, not Meilisearch."),
    ("choice", "Our CDN is Cloudflare.", "Our CDN is Fastly, with shielding in Frankfurt."),
    ("choice", "Workers reach the queue through Envoy.",
     "Workers reach the queue through HAProxy."),
    # a version setting that names no product is its own product
    ("version", 'Each stack sets `required_version = "~> 1.6.2"` to match the CI runner.',
     'Stacks declare `required_version = ">= 1.8.0"` because they use provider functions.'),
    # a version kept where it is: a requirement, against a version in use
    ("version", "The desktop build runs on Electron 31 with its bundled Node 20.",
     "Keep Electron pinned at 30.x until the native printing module is rebuilt."),
    ("version", "Workers stay on Ruby 3.2 until the image pipeline is upgraded.",
     "The workers run Ruby 3.3 since the last deploy."),
    ("version", "Our Postgres cluster is held at 14.10 until the extension audit is done.",
     "We upgraded to Postgres 16.2 last week."),
]  # fmt: skip


# Read once the review showed them missed.
DISAGREE += [
    ("polarity", "No Jenkins anymore: all pipelines run on GitHub Actions.",
     "Release pipelines run on Jenkins."),
    ("schedule", "The backup runs every single day.", "The backup runs weekly."),
    ("version", "Postgres is pinned to 15.", "The Helm chart pins Postgres to 16."),
]  # fmt: skip


# Who else is listed beside the one "only" allows; a role kept somewhere mid-sentence; a
# day's short name after "every".
DISAGREE += [
    ("exclusivity", "Only owners can archive a workspace.",
     "Any owner or admin can archive a workspace."),
    ("exclusivity", "Only staff engineers may approve schema migrations.",
     "Staff engineers and team leads may approve schema migrations."),
    ("choice", "We keep customer invoices in Stripe.", "Customer invoices live in Chargebee."),
    ("schedule", "The digest mailer runs every Sat at 07:30.",
     "The digest mailer runs every Thursday at 07:30."),
    ("choice", "The ingest service is Kotlin.", "The ingest service is Rust 1.79."),
    # the unit a setting's name ends in; a setting given a number is no version
    ("quantity", "The thumbnail cache is set with `THUMB_CACHE_TTL_SECS=7200`.",
     "The thumbnail cache keeps entries for a day."),
    ("quantity", "Set `WEBHOOK_MAX_ATTEMPTS = 5` for the webhook sender.",
     "Set `WEBHOOK_MAX_ATTEMPTS = 8` for the webhook sender."),
    ("version", "Helm is constrained to `>= 3.12, < 4.0` on every runner.",
     "The runners need Helm 4.1 for the new chart format."),
    # a tool denied where the other relies on it, a word in common written as a name by one
    ("polarity", "Secrets for the vault role are encrypted with git-crypt.",
     "We don't use git-crypt. Secrets are read from HashiCorp Vault at deploy time."),
    # a declared removal of what the other names within a compound name, or of a thing that
    # "no longer exists"
    ("choice", "Every ingest job keeps its offsets in EmbeddedRocksDB.",
     "The ingest jobs run on HashMapStateBackend. RocksDB was removed from them after the ARM"
     " crashes."),
    ("choice", "Invoices are rendered by the `invoice_pdf` CronJob each night.",
     "The `invoice_pdf` CronJob no longer exists; invoices render on demand."),
    # a package with and without its scope, beside another package of that scope
    ("version", "package.json pins @tanstack/react-query at ^5.28.0.",
     "react-query must stay on 4.36.x, because @tanstack/query-devtools 4.1 breaks on v5."),
    # how early against how early; a wait before an event is how long
    ("quantity", "TLS certificates are renewed 30 days before expiry.",
     "TLS certificates are renewed 10 days before they expire."),
    ("quantity", "The export worker gives up on the bucket after 30 seconds.",
     "The export worker waits up to two minutes before giving up on the bucket."),
    ("quantity", "The billing queue sets `maxReceiveCount: 6` before a message is parked.",
     "A billing queue message is parked after its second failed delivery."),
]  # fmt: skip


# A review's pairs: who else in other list shapes, how early in minutes, a wait or a
# value that is how long, a name after a colon, a major version by a setting's name.
DISAGREE += [
    ("exclusivity", "Only owners can rotate the API keys.",
     "Owners, auditors, and admins can rotate the API keys."),
    ("exclusivity", "Only owners can rotate the API keys.",
     "Both owners and auditors can rotate the API keys."),
    ("quantity", "The digest is mailed 5m before the standup.",
     "The digest is mailed 10 minutes before the standup."),
    ("quantity", "Merges freeze 2 days before a release.",
     "Merges freeze for 3 days before a release."),
    ("quantity", "The lease is 30 seconds before it is given back.", "The lease is 90 seconds."),
    ("choice", "Session cache: Memcached, with a 2 hour TTL.",
     "Memcached was retired last quarter."),
    ("version", "Set `NODE_MAJOR=20` in the build image.", "The build image runs Node 18."),
]  # fmt: skip


@pytest.mark.parametrize(("klass", "a", "b"), DISAGREE)
def test_a_role_or_a_requirement_that_disagrees_is_a_possible_conflict(klass, a, b):
    for first, second in ((a, b), (b, a)):
        verdict = compare(first, second)
        assert verdict.kind == CONFLICT, verdict.evidence
        assert klass in verdict.evidence["classes"]


AGREE = [
    # the same tool for the role, in other words
    ("Client state is Pinia, one store per page.", "Client state lives in Pinia stores."),
    # two roles, two tools
    ("Unit tests are Vitest specs next to the code.",
     "End-to-end tests are Playwright suites under e2e/."),
    # the other memory names the tool too
    ("Background jobs are Sidekiq workers.", "Background jobs are ActiveJob classes on Sidekiq."),
    # filled in part: for a purpose, for a time, or by several
    ("Logs are stored in Loki for two weeks.", "Logs are stored in S3 for long-term retention."),
    ("Search is Solr until the March cutover.", "Search is Typesense after the March cutover."),
    ("The on-call rotation is managed in Opsgenie.", "The on-call rotation is Dana, Eli and Femi."),
    # filled in other ways: a vendor, a language, a framework, a platform, a day
    ("Object storage is GCS.", "Object storage is provided by Google."),
    ("Data migrations are written in SQL.", "Data migrations are managed by Sqitch."),
    ("The mobile app is Wayfarer on both stores.", "The mobile app is built with Flutter."),
    ("The cleanup job runs on Sundays.", "The cleanup job runs on Nomad as a periodic job."),
    # a protocol is no tool; two things reached
    ("The event bus is MQTT 5.", "The event bus is EMQX."),
    ("Pods reach Postgres through PgBouncer.", "Pods reach Redis through Envoy."),
    # a format is no tool
    ("Timestamps are UTC everywhere in the API.", "Timestamps are ISO-8601 strings in the API."),
    # a version setting given the same range twice
    ('Each stack sets `required_version = "~> 1.6.2"`.',
     'Stacks declare `required_version = "~> 1.6.2"` in versions.tf.'),
    # a pin that admits the version in use
    ("Keep Electron pinned at 31.x.", "The desktop build runs on Electron 31.2."),
    # a version kept in use inside the range another part supports
    ("Production stays on Node 20.", "The SDK's engines field allows Node 18 or newer."),
    # one range with and without a trailing zero
    ('Root modules set `required_version = ">= 1.7.0"`.',
     'Root modules set `required_version = ">= 1.7"` in versions.tf.'),
    # "every" with an occasion says how often too
    ("Invoices are generated by the billing worker only.", "Invoices are generated every release."),
    ("Snapshots are taken by the backup operator only.", "Snapshots are taken every year."),
    # "every" with a number says how often, not that anyone may: no "only" is denied
    ("The deploy controller polls Git every 180 seconds and no webhook is configured, so a"
     " merged change can take that long to sync.", "Don't expect an instant sync after merging:"
     " without a Git webhook, the controller only notices new commits on its three-minute"
     " refresh."),
]  # fmt: skip


# Readings that once called these conflicts (a review's pairs): what stacks, other ways of
# filling a role, one product spelled twice, "on every X", what a "no X may be done" is
# done with, a verb of its own in another scope, "no" before "when", a host and port, one
# name in two layers' styles, a floor on how often, a client named after its language.
AGREE += [
    ("The backend is Django.", "The backend is deployed to Heroku."),
    ("The frontend is built with React.", "The frontend is built with Vite."),
    ("The API runs on Kubernetes.", "The API runs on AWS."),
    ("All traffic goes through Cloudflare.", "All traffic goes through Envoy."),
    ("The primary database is Postgres.", "The primary database is PostgreSQL."),
    ("Only the release job may upload source maps to Sentry.",
     "Source maps are uploaded to Sentry on every deployment."),
    ("No secret may be stored in the repo.", "Secrets are stored in Vault, not in the repo."),
    ("Never squash commits on the release branch.",
     "We squash commits on feature branches before review."),
    ("No downtime is expected when you run `kubectl rollout restart deploy/api`.",
     "Run `kubectl rollout restart deploy/api` after changing the config map."),
    ("Do not expose `localhost:9090` outside the dev container.",
     "The dev container forwards `localhost:5173` for the Vite server."),
    ("Database columns are snake_case, like `created_at`.",
     "JSON fields are camelCase, like `createdAt`."),
    ("Rotate the signing keys at least once a month.", "Rotate the signing keys weekly."),
    ("The Python client is pinned to 1.4.", "The service runs on Python 3.12."),
]  # fmt: skip


# How often, not how long ("twice a day" is no day); the same who with a clause after it;
# the same tool kept in other words; "sun" that is no day; amounts by a setting's unit.
AGREE += [
    ("The index rebuild runs twice a day.", "The index rebuild runs every 12 hours."),
    ("Ping the health endpoint 4x an hour.", "Ping the health endpoint every 15 minutes."),
    ("Only owners can archive a workspace.",
     "Owners, after a confirmation, can archive a workspace."),
    ("Only owners can archive a workspace.", "Owners and admins can archive files in a workspace."),
    ("We keep customer invoices in Stripe.", "Customer invoices live in Stripe Billing."),
    ("The sun sets the tone on Mon mornings.", "The digest mailer runs every Thursday."),
    # two memories that retire the same thing, in other words
    ("get rid of Exporter.legacy_rows", "Exporter.legacy_rows doesn't exist anymore"),
    # what a change is for is not what it retires
    ("replace the bare except to get rid of ResourceWarning",
     "Create and use a custom ResourceWarning"),
    # plural and singular for two kinds of name
    ("Route segments are plural, as in /orders/{id}.",
     "Model class names are singular, as in Order."),
    # how early is not how long ("5 days before the trial ends" / "trials last 21 days")
    ("Free trials last 21 days.", "The upgrade banner shows 5 days before the free trial ends."),
    # a version inside a range that is constrained by two bounds
    ("Helm is constrained to `>= 3.12, < 4.0` on every runner.",
     "The runners use Helm 3.14.2 for every chart."),
    # the same amount by a setting's unit; a value that restates its memory's own setting
    ("The thumbnail cache is set with `THUMB_CACHE_TTL_SECS=7200`.",
     "The thumbnail cache keeps entries for two hours."),
    ("`INVITE_EXPIRY_DAYS = 7`: an invite link stops working a week after it is sent.",
     "`INVITE_RESEND_DAYS = 2` is how long we wait before resending an unanswered invite link."),
]  # fmt: skip


# A review's pairs: another object of the act, a successor named after what it replaces,
# settings whose names only look like counts or amounts, a language of text, two packages
# of one scope, two scopes' packages of one name, plural routes and singular models.
AGREE += [
    ("Only owners can rotate the API keys.", "Owners and auditors can rotate API key labels."),
    ("The sync Client was deprecated in favour of AsyncClient.",
     "Outbound calls use the httpx AsyncClient with a 10 s timeout."),
    ("Set `grpc.max_receive_message_length = 4194304` on the upload server.",
     "The upload server retries each upload 3 times."),
    ("Set `MAX_RETRY_DELAY=30` for the webhook sender.",
     "The webhook sender retries at most 5 times."),
    ("Set `WORK_DAYS=5` for the support rotation.", "The support rotation lasts 7 days."),
    ("We keep changelog entries in English.", "Changelog entries are Conventional Commits."),
    ("@acme/api uses zod for request validation.", "@acme/web uses yup for request validation."),
    ("The frontend uses @angular/core 17.", "The backend uses @nestjs/core 10."),
]  # fmt: skip


@pytest.mark.parametrize(("a", "b"), AGREE)
def test_roles_and_requirements_that_agree_are_no_conflict(a, b):
    assert compare(a, b).kind != CONFLICT, compare(a, b).evidence
    assert compare(b, a).kind != CONFLICT, compare(b, a).evidence


def test_a_role_is_read_from_the_start_of_a_sentence():
    (client,) = roles("Client state lives in Redux Toolkit slices. Keep them small.")
    assert client.role == {"client", "state"}
    assert client.name == "Redux Toolkit"
    assert roles("Sentry Relay is Docker-based.") == []  # a name, not a role
    assert roles("Client state is not Redux.") == []  # nothing fills it
    assert roles("We use Pinia for client state.") == []  # a choice, read as one elsewhere


def test_a_version_setting_without_a_product_is_its_own_product():
    (said,) = Read.of('Stacks declare `required_version = ">= 1.8.0"`.').said
    (version,) = said.versions
    assert version.product == "required_version"
    assert (version.low, version.high, version.pin) == ((1, 8, 0), None, False)
    (said,) = Read.of('Pin Terraform with `required_version = "~> 1.5.0"`.').said
    assert [v.product for v in said.versions] == ["terraform"]


def test_pinned_at_keeps_that_version_whatever_else_is_supported():
    (said,) = Read.of("Keep Electron pinned at 30.x for now.").said
    (version,) = said.versions
    assert version.kept
    assert not version.required
    assert version.pin
    assert (version.low, version.high) == ((30,), (31,))
    # the product is the name before the noun it qualifies, not the verb that keeps it
    (said,) = Read.of("The Kotlin compiler is locked to 1.9.22 for the Compose plugin.").said
    assert [v.product for v in said.versions] == ["kotlin"]


def test_every_other_one_is_anyone_else_and_every_other_week_how_often():
    (only,) = split("Production releases are tagged by the release manager only.")

    def against(text: str):
        (other,) = split(text)
        words = frozenset(sentence_words(only)), frozenset(sentence_words(other))
        return exclusive.inclusive(only, other, *words, frozenset())

    assert against("Every other maintainer tags production releases from a laptop.") is not None
    assert against("Every other week a maintainer tags production releases.") is None
    assert against("Every release, production releases are tagged from a laptop.") is None


def test_a_setting_given_a_number_is_no_version_unless_its_name_says_so():
    retries = compare("Set `WEBHOOK_MAX_ATTEMPTS = 5` for the webhook sender.",
                      "Set `WEBHOOK_MAX_ATTEMPTS = 8` for the webhook sender.")  # fmt: skip
    assert retries.evidence["classes"] == ["quantity"]
    node = compare("Set `NODE_VERSION = 20` in the CI image.",
                   "Set `NODE_VERSION = 22` in the CI image.")  # fmt: skip
    assert node.evidence["class"] == "version"


def test_a_capital_that_opens_any_sentence_says_nothing_of_a_name():
    words = read("We moved off Jenkins. Secrets are read at deploy time from Vault.")
    assert {"jenkin", "vault"} <= words.specific
    assert "secret" not in words.specific


def test_what_a_change_retires_is_read_within_its_sentence():
    assert read("The jobs run on HashMapStateBackend. RocksDB was removed.").old == {"rocksdb"}
    assert read("The `invoice_pdf` CronJob no longer exists.").old == {"invoice_pdf"}


def test_a_value_restates_a_setting_of_its_own_words_only():
    verdict = compare(
        "`SESSION_TIMEOUT_MINS = 30` and the refresh token lasts 30 minutes.",
        "`REFRESH_TTL_MINS = 60` and the refresh token lasts 60 minutes.",
    )
    assert "quantity" in verdict.evidence["classes"]


def test_a_change_that_retires_nothing_readable_is_read_without_error():
    verdict = compare("CI runs on Node 18 (see .nvmrc)", "Node 16 support was dropped ... see it.")
    assert verdict.kind is None


ODD = ["", " ", ".", "`", "@", "::", "e.g.", "No.", "only", "Any", "1/0", "a/b/c/", "-by:",
       "Ünïcødé: Über 5 Tage.", "rocksdb-" * 500 + " was removed", "x=1 " * 1000, "AbC" * 1300,
       "Node 16 support was dropped ... see it."]  # fmt: skip


@pytest.mark.parametrize("odd", ODD)
def test_odd_texts_are_compared_without_error(odd):
    ordinary = "Webhook deliveries retry 5 times; only the billing worker may replay them."
    for a, b in ((odd, odd), (odd, ordinary), (ordinary, odd)):
        verdict = compare_words(a, b, cosine=0.7)
        assert verdict.kind in (None, CONFLICT, REPEAT)
