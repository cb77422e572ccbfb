"""Reading two memories side by side: repeat, possible conflict, or neither (pure)."""

from __future__ import annotations

import numpy as np
import pytest

from knowledge import embeddings, exclusive, rules
from knowledge.claims import split
from knowledge.contradictions import CONFLICT, NAMED, REPEAT, Verdict
from knowledge.contradictions import compare as compare_words
from knowledge.reading import read
from knowledge.rules import CLASSES
from knowledge.said import sentence_words


def compare(a: str, b: str) -> Verdict:
    """As the store compares two memories: with the cosine of their embeddings by the
    configured (offline) model."""
    model = embeddings.configured()
    assert model is not None
    vectors = model.embed([a, b])
    return compare_words(a, b, cosine=float(np.dot(vectors[0], vectors[1])))


CONFLICTS = [
    # a different number for the same quantity
    ("HTTP calls time out after 10 seconds.", "HTTP calls time out after 30 seconds."),
    ("The worker pool runs 8 workers.", "The worker pool runs 4 workers."),
    # another version of the same thing, inside longer tokens too
    ("The service runs on Python 3.11 (python:3.11-slim).", "The image is python:3.12-slim now."),
    # one side denies what the other asserts
    ("Always run migrations in tests.", "Never run migrations in tests."),
    ("Run tests with pytest -n auto.", "Tests run with manage.py test; pytest is not installed."),
    # opposite words
    ("Feature flags are enabled in staging.", "Feature flags are disabled in staging."),
    # a declared change against a memory that still says the old thing
    ("Use pnpm for installs.", "We moved from pnpm to npm for installs."),
    ("Config loading uses viper.", "We replaced viper with koanf for config loading."),
    # the thing prescribed, swapped
    ("Use pnpm for installs.", "Use npm for installs."),
]

REPEATS = [
    ("Full test suite required when modifying src/core/.", "Full test suite required when"
     " modifying src/core/. (seen again in run-004)"),
    ("Do not commit .env files.", "Never commit .env files."),
    ("Rule 1: keep the ledger balanced.", "Rule 2: keep the ledger balanced."),
]  # fmt: skip

NEITHER = [
    # related, both true: another quantity of the same thing
    ("HTTP client timeout is 10 s.", "HTTP client retries 3 times."),
    # the same setting for another scope
    ("Staging uses 2 replicas.", "Production uses 6 replicas."),
    ("The block cache defaults to 512 MiB.", "Tests set the block cache to 8 MiB."),
    # more about the same subject
    ("Use pnpm for installs.", "Run pnpm install --frozen-lockfile in CI."),
    # unrelated
    ("Use pnpm for installs.", "Invoice PDFs are rendered by WeasyPrint in a Celery task."),
    # references and trailers are provenance: these say different things
    ("Add Client.stream() method (#600).", "Consistent multidict methods (#1089)."),
    (
        "Tighten public client methods. Co-authored-by: Ann Lee <ann@example.com>",
        "Tighten public API on auth classes. Co-authored-by: Ann Lee <ann@example.com>",
    ),
    # related only through a name: another word beside it is no contradiction
    ("Disable HTTP/2 strict header validation.", "HTTP/2 refactoring of the pool."),
]


@pytest.mark.parametrize(("a", "b"), CONFLICTS)
def test_a_different_claim_about_the_same_thing_is_a_possible_conflict(a, b):
    verdict = compare(a, b)
    assert verdict.kind == CONFLICT, verdict.evidence
    assert verdict.evidence["class"] in CLASSES
    assert verdict.evidence["differs"]
    # It is the same verdict whichever side comes first.
    assert compare(b, a).kind == CONFLICT


@pytest.mark.parametrize(("a", "b"), REPEATS)
def test_the_same_claim_is_a_repeat(a, b):
    assert compare(a, b).kind == REPEAT
    assert compare(b, a).kind == REPEAT


@pytest.mark.parametrize(("a", "b"), NEITHER)
def test_compatible_and_unrelated_memories_are_neither(a, b):
    assert compare(a, b).kind is None
    assert compare(b, a).kind is None


def test_the_evidence_names_what_differs():
    verdict = compare("Requests time out after 10 seconds.", "Requests time out after 30 seconds.")
    number = verdict.evidence["differs"][0]
    assert (number["class"], number["first"], number["second"]) == (
        "quantity",
        "10 seconds",
        "30 seconds",
    )
    assert verdict.evidence["similarity"] >= 0.6


def test_the_threshold_decides_what_is_compared():
    a, b = "Use pnpm for installs.", "Use npm for installs."
    # Without an embedding the share of shared words decides; a cosine raises it.
    assert compare_words(a, b, similarity=0.6).kind is None
    assert compare_words(a, b, cosine=0.86, similarity=0.6).kind == CONFLICT
    assert compare_words(a, b, cosine=0.86, similarity=0.9).kind is None


def test_a_numbered_label_and_a_run_reference_are_not_claims():
    words = read("Rule 3: retries are capped (seen again in run-042).")
    assert not any(value == "3" for _, _, value in words.numbers)
    assert "run-042" not in words.content


def test_a_negative_word_denies_like_not():
    assert "icloud" in read("The cache is excluded from iCloud backup.").negated
    assert "pytest" in read("pytest is not a dependency.").negated
    assert "pytest" in read("Run tests with pytest.").asserted


# Each class by what it reads, the two spans that disagree named (the issue's own kinds).
BY_CLASS = [
    ("quantity", "Retry three times before giving up on the payment provider.",
     "Payment provider retries stop after five attempts.", "three", "five"),
    ("quantity", "The upload proxy times out after 30 s.",
     "The upload proxy times out after two minutes.", "30 s", "two minutes"),
    ("version", "The app supports PostgreSQL 12 and newer.",
     "The app requires PostgreSQL 15.", "PostgreSQL 12", "PostgreSQL 15"),
    ("schedule", "Database backups run nightly at 02:00.",
     "Database backups run every six hours.", "nightly at 02:00", "every six hours"),
    ("polarity", "Never write to the cache from request handlers.",
     "Request handlers write the cache on a miss.", "Never write to the cache",
     "Request handlers write the cache on a miss"),
    ("naming", "Branch names start with the ticket number.",
     "Branch names start with the author's initials.", "start with the ticket number",
     "start with the author's initials"),
    ("polarity", "Set catchup=False on every DAG.", "All DAGs must set catchup=True.",
     "catchup=False", "catchup=True"),
]  # fmt: skip


@pytest.mark.parametrize(("klass", "a", "b", "first", "second"), BY_CLASS)
def test_each_class_names_its_spans(klass, a, b, first, second):
    verdict = compare(a, b)
    assert verdict.kind == CONFLICT, verdict.evidence
    assert verdict.evidence["class"] == klass
    differs = next(d for d in verdict.evidence["differs"] if d["class"] == klass)
    assert (differs["first"], differs["second"]) == (first, second)
    assert a[slice(*differs["firstSpan"])] == first
    assert b[slice(*differs["secondSpan"])] == second


COMPATIBLE_BY_CLASS = [
    # the same measure in other units
    ("The upload proxy times out after 90 seconds.",
     "The upload proxy times out after 1.5 minutes."),
    # a pin inside the other's range
    ("The app supports PostgreSQL 12 and newer.", "CI runs the app on PostgreSQL 15."),
    # the same schedule written as a cron line
    ("The ingest job runs daily at 02:00.", "The ingest job is scheduled with cron 0 2 * * *."),
    # a number that is an issue, not a version
    ("Fixed a bug on Windows regarding serving. Fixes #442",
     "Replace os.path with posixpath; fixes test on Windows (#1154)"),
]  # fmt: skip


@pytest.mark.parametrize(("a", "b"), COMPATIBLE_BY_CLASS)
def test_agreeing_claims_of_a_class_are_no_conflict(a, b):
    assert compare(a, b).kind != CONFLICT
    assert compare(b, a).kind != CONFLICT


def test_a_neighbourhoods_boilerplate_makes_no_repeat():
    a = "[svn] fixed trailing slash issue. --HG-- branch : trunk"
    b = "[svn] fixed an example. --HG-- branch : trunk"
    common = read(a).content & read(b).content
    assert compare_words(a, b, cosine=0.9, common=common).kind is None
    # The same two words word for word are still a repeat.
    assert (
        compare_words("Added changelog entry", "Added changelog entry", cosine=1.0).kind == REPEAT
    )


MORE_BY_CLASS = [
    # a name one side denies in so many words, the other relies on
    ("polarity", "Periodic jobs (dunning, usage rollups) are scheduled with Celery beat.",
     "Celery beat was removed last sprint. Dunning and usage rollups now run as CronJobs."),
    # a rate in other units: 20 a second is 1200 a minute
    ("quantity", "Public API rate limit: 20 requests per second per player token.",
     "Each player token may make 600 requests a minute."),
    # a half and a quarter of a unit, and a number joined to its unit
    ("quantity", "Refresh tokens last one and a half hours.", "Refresh tokens last 30 minutes."),
    ("quantity", "The search box debounces input by a quarter-second.",
     "The search box debounces input by 500 ms."),
    ("quantity", "Each export job has a five-minute timeout.",
     "The export job timeout is 600 seconds."),
    # a setting's value is about what its name says
    ("quantity", "ExportPolicy.IDLE_TIMEOUT is 20 minutes; after that the browser asks for a"
     " password again.", "If the export page sits idle for more than ten minutes the export is"
     " dropped and the user signs in again."),
    # "prefix X with Y" puts Y at the start of X
    ("naming", "Release branches start with the sprint number, e.g. `S42-payments-fix`.",
     "Prefix your branch with the service name and a slash, then a slug:"
     " `payments/fix-rounding`."),
    # "on" and "off" as switches, whatever follows them
    ("polarity", "Leave maintenance mode on during the migration.",
     "Turn maintenance mode off during the migration."),
    ("polarity", "Keep the read replicas on overnight.",
     "Switch the read replicas off overnight to save money."),
    # a case style named is a rule about names
    ("naming", "Private fields in the C# scripts use `_camelCase`, e.g. `_retryTimer`,"
     " `_queueSize`.", "The .editorconfig requires private instance fields to start with `m_`"
     " followed by PascalCase (`m_RetryTimer`)."),
    # what comes first is what a name starts with
    ("naming", "Metric names are snake_case with the owning service first, e.g."
     " `billing_invoice_total`.", "Name metrics after the dashboard that shows them, dashboard id"
     " first: `D-77-invoice-total`."),
    # a plain word in code quotes is a name; "writes" and "nightly" are scopes of two kinds,
    # not two scopes
    ("exclusivity", "Only the `billing` Celery queue writes to `invoice_lines`; tasks on other"
     " queues must not touch that table.", "The nightly ERP import, which runs on the `imports`"
     " queue, bulk-creates `invoice_lines` rows for the next cycle."),
    # only a name in code quotes
    ("exclusivity", "Request ids are read only from the `X-Request-Id` header; query parameters"
     " are ignored.", "The tracing middleware takes the id from the `X-Request-Id` header or"
     " from `request_id` in the query string, whichever is present."),
    # code with its arguments elided is that code with any arguments, not another command
    ("exclusivity", "Tenant scoping goes only through scoped_by_org; don't write manual"
     " `where(org_id: ...)` filters.", "Either scoped_by_org or an explicit"
     " `where(org_id: Current.org.id)` is fine for tenant scoping."),
    # a thing by its qualified name on one side, by its own on the other
    ("polarity", "Never write to Flask.cache from view functions; WarmCacheTask is the only"
     " writer.", "Views fill the cache lazily: `Flask.cache.get_or_set(key, build)` computes and"
     " stores a value on a miss. The first request after a deploy is slow."),
    # so many tries against the last one counted
    ("quantity", "Payment callbacks are retried three times with backoff, then parked in"
     " callback_dlq.", "Callback retries stop after the fifth attempt; only then is a callback"
     " parked in callback_dlq."),
    # a job named by its identifier on one side, its words on the other
    ("schedule", "Invoice export (cmd/exportinvoices) runs nightly at 01:00 UTC.",
     "The `export-invoices` Kubernetes CronJob fires every four hours to run"
     " cmd/exportinvoices."),
    # a job by the route it calls, the route's own words
    ("schedule", "Stock sync runs nightly at 02:00 UTC from the platform cron (`0 2 * * *`),"
     " hitting `/api/cron/stock-sync`.",
     "`cron.json` schedules `/api/cron/stock-sync` with `30 4 * * *`; it runs once a day."),
    # some days of the week against every day
    ("schedule", "The `nightly_rollup` job runs at 03:00 UTC Monday to Friday only.",
     "nightly_rollup uses cron `0 3 * * *`: seven days a week, so Monday reports include"
     " Sunday's numbers."),
    # a day before a time of day still says when
    ("schedule", "The weekly invoice run happens Friday noon.",
     "The weekly invoice run happens Monday noon."),
    # two requirements of one product, however little else the memories share
    ("version", "Our API supports Node 18 and newer.",
     "The API server must be Node 20: the test suite uses the built-in runner."),
    # a version required as it is against another in use
    ("version", "The worker image must be Ruby 3.2 because the native gems are built for it.",
     "All our workers run on Ruby 3.3."),
    # two versions of one package
    ("version", "django-filter is pinned to 23.5.x; 24.1 breaks the custom lookups.",
     "The reporting team runs django-filter 24.2 with ordering blocks."),
    # thousands of things, however written
    ("quantity", "The importer commits 10k rows per batch.",
     "The importer commits 5,000 rows per batch."),
    # a cron line's weekday against a named day
    ("schedule", "The weekly leaderboard resets with cron 0 0 * * MON.",
     "The weekly leaderboard resets at 18:00 UTC on Sundays."),
    # a prefix said two ways
    ("naming", "Functions exported from a component are prefixed with the component's name.",
     "Everything exported from a component carries the kc_ prefix."),
    # two full versions of one product in sentences about other things
    ("version", "Pin torch==2.2.2 with the CUDA 12.1 wheels.",
     "We're on torch 2.4.0 now; the old one had a checkpoint bug."),
    # a cache's lifetime in other words and units
    ("quantity", "The cache TTL is 300 seconds.", "Cached pages live for 10 minutes."),
    # the same file spelled otherwise is no other place: its spelling is what they dispute
    ("naming", "Guide file names are kebab-case: docs/setup/first-steps.md is served at"
     " /setup/first-steps.", "Name guide files in snake_case (docs/setup/first_steps.md)."),
    # a tool one prescribes (a command's program) and the other denies, four words on
    ("polarity", "Format the code with black: run `black .` before each commit.",
     "Don't use black to format the code here; ruff format is the formatter."),
    # an identifier of code names one thing: one more word in common will do
    ("polarity", "Always wrap publish_event() in transaction.on_commit() so subscribers see"
     " saved rows.", "Do not call publish_event() from transaction.on_commit(): saved rows then"
     " miss the broker retries."),
    # opposite words beside the same phrase, in memories otherwise apart
    ("polarity", "`fastlane beta` uploads to TestFlight; `fastlane release` submits with phased"
     " release enabled.", "Phased release is off for the app: new versions reach every user"
     " at once."),
    # an adverb against its opposite adjective
    ("polarity", "WAL fsync is synchronous on every commit by default.",
     "By default the WAL is fsynced asynchronously every 100 ms by a background task."),
    # "alone" restricts its own clause; a sentence with much in common says "its own"
    ("exclusivity", "Invoice rows are created by the billing service alone; other services only"
     " report totals.", "For refunds the support service creates its own invoice row through the"
     " internal API."),
    # "only" a list, against the same list with one more
    ("exclusivity", "Since 2.0 the release job only builds linux and macos installers.",
     "The release job builds linux, macos and windows installers."),
    # a version setting's product is named before it
    ("version", 'Pin Terraform with required_version = "~> 1.5.0" in every root module.',
     "Every root module requires Terraform >= 1.7."),
    # a pattern of names, a prefix; a name after something, a start
    ("naming", "Counters are named shop_<area>_<name>_total.",
     "Counters keep the app_ prefix that the dashboards query."),
    ("naming", "Flags are named with the owning team as prefix.",
     "Name every flag after the ticket that introduced it so stale flags can be found."),
    # how often, said by a setting whose name holds its unit
    ("schedule", "The cleanup alarm is registered with periodInMinutes: 30.",
     "The cleanup alarm fires hourly."),
    ("schedule", "The sync worker polls the queue with poll_interval_ms: 500.",
     "The sync worker polls the queue every 2 seconds."),
    # each prescribes a tool the other never names, for the same thing
    ("choice", "Use poetry for dependency installs on developer machines.",
     "Install the dependencies on developer machines with `pip install -r requirements.txt`."),
    # a tool one runs, which the other forbids
    ("polarity", "Dev environments are managed with hatch: `hatch env create`.",
     "Never use hatch for the base environment; it cannot build the native toolkit."),
    # required against omitted
    ("polarity", "--profile is required; the CLI has no built-in profile.",
     "If --profile is omitted, the CLI falls back to the default profile."),
    # "e.g." ends no sentence: what follows it is said of the same thing
    ("naming", "Messages use SCREAMING_SNAKE types prefixed with the sender, e.g. CS_SAVE (see"
     " src/events.ts).", "Message names are lowercase dotted paths, and src/events.ts rejects"
     " anything else."),
    # patterns of names of another shape
    ("naming", 'Cache keys are "user:<id>:profile" and "team:<id>:members".',
     "Cache keys follow <kind>/<id>, for example users/42."),
    # code quoted in a denied clause is what is denied, and a setting quoted with a value
    # on both sides is a name in common
    ("polarity", "No worker process may be started with `--pool=threads`: the C extension is"
     " not thread-safe.", "The image-resize queue runs its worker with `--pool=threads` so it"
     " can share the model in memory."),
    ("polarity", "Never open a database connection with `autocommit: true` in the importer;"
     " each file must commit once.",
     "The importer's connection is opened with `autocommit: true` to keep locks short."),
    ("polarity", "No WebView may be created with `allowFileAccess: true`; pages render"
     " untrusted HTML.", "The receipt viewer (`ReceiptWebView`) is created with"
     " `allowFileAccess: true` so it can show the PDF from the cache folder."),
    # what a quantity measures is the nearest words that carry meaning, however many small
    # words come between ("for at most 8 GB for the render job")
    ("quantity", "The `stack` step needs `--mem=96G`; with less, the workers on the big surveys"
     " get OOM-killed.", "Ask Slurm for at most 24 GB for the `stack` job. The `debug` partition"
     " won't take anything bigger."),
    # a prohibited verb of no known group is its own action
    ("polarity", "On the orders page, always eager-load customers (`Order::with('customer')`)"
     " to avoid N+1 queries.", "Do not eager-load customers on the orders page:"
     " `with('customer')` tripled the query time there."),
    # "no X may be done", against doing it (a "without" elsewhere denies nothing of it)
    ("polarity", "No migration may be squashed once released; CI checks `migrations/` against"
     " the tags.", "Squash the released migrations in `migrations/` every quarter so a fresh"
     " install runs without replaying years of history."),
    # "only" before a modal restricts who; the action after it both may say
    ("exclusivity", "Only release managers can tag production releases of the SDK.",
     "Every maintainer can tag production releases of the SDK from CI."),
    ("exclusivity", "Only members of the `dba` group may run schema migrations on the primary.",
     "Backend developers can also run schema migrations on the primary from the bastion."),
    # patterns of names with placeholders in braces
    ("naming", "Cache keys for thumbnails are `thumb:{size}:{sha}` so one size purges with a"
     " single SCAN.", "Use the bucket path as the thumbnail cache key: `{sha}/{size}.webp`, so"
     " one string names the file in Redis and in storage."),
    # a count of attempts, in sentences with a name and a verb in common
    ("quantity", "`send_invoice` retries 3 times on `SmtpError`, then marks the invoice unsent.",
     "When the relay errors, `send_invoice` keeps retrying and gives up only after the fifth"
     " attempt; relay restarts routinely eat the first few."),
    # the same names in two case styles
    ("naming", "Stream keys are snake_case and past tense: `invoice_sent`, `refund_issued`.",
     "Name the streams after the event in camelCase (`invoiceSent`, `refundIssued`) to match"
     " the handlers."),
    # how often, said as so many times per unit
    ("schedule", "During a run the tracker takes a GPS fix every 5 seconds to save battery.",
     "GPS is sampled once per second during runs; coarser made the pace chart jagged."),
    # a version setting's name says what it is a version of, and that it is a floor
    ("version", "manifest.json sets minimum_chrome_version to 116 for chrome.sidePanel.open().",
     "We still support Chrome 110 and later; sidePanel is feature-detected."),
]  # fmt: skip


@pytest.mark.parametrize(("klass", "a", "b"), MORE_BY_CLASS)
def test_more_kinds_of_disagreement(klass, a, b):
    verdict = compare(a, b)
    assert verdict.kind == CONFLICT, verdict.evidence
    assert klass in verdict.evidence["classes"]


AGREEING = [
    # one quantity in other words: thousands with commas, halves, quarters, hyphenated units
    ("The export writes batches of 1,000 rows.", "The export writes batches of 1000 rows."),
    ("Refresh tokens last one and a half hours.", "Refresh tokens last 90 minutes."),
    ("The cache entry lives for a quarter of an hour.", "The cache entry lives for 15 minutes."),
    ("Each export job has a five-minute timeout.", "Export jobs time out after 300 seconds."),
    ("The importer commits 10k rows per batch.", "The importer commits 10,000 rows per batch."),
    # "uses two pins" and "in use" prescribe no tool
    ("Certificate pinning for api.example.org uses two SHA-256 pins (current key and backup) in"
     " pinning.xml.", "res/xml/pinning.xml pins the API host's public key twice over: the one in"
     " use plus a spare for rotation."),
    # "uses three stages" says how many, not what is used
    ("The deploy pipeline uses three stages: build, test, release.",
     "The deploy pipeline uses GitHub Actions."),
    # "on" before what it places is no switch
    ("Learned in run-12: a pipeline shipped with autosync on and flooded the queue. Turn"
     " autosync off unless a full rebuild is wanted.",
     "Set `autosync=False` on every new pipeline unless you intend a full rebuild."),
    # each schedules a thing of its own name
    ("Google Play releases go out on Fridays.",
     "TestFlight (iOS) releases happen on Mondays; Apple review is slow over weekends."),
    # two bounds of one product in sentences about other things, neither a requirement
    ("Use raw strings to avoid escape errors in Python 3.6+ (#1219)",
     "Properly stop the reloader thread to avoid crashes at exit (#1158). Daemon threads can"
     " crash the interpreter on exit. This was fixed for Python 3.2+ but the reloader still ran"
     " into it."),
    # the usual case against a scope's own
    ("In normal operation only the flow controller writes the main valve register.",
     "Test builds (SERVICE_MODE=1) let the test tool set every valve register from the console,"
     " the main valve included."),
    # "first" in an order of steps is no rule about names
    ("Hotfix branch names start with the Jira key.",
     "For a hotfix, rebase the branch on main first."),
    ("Metric names start with the service name.",
     "When adding a metric, register its name in the catalog first."),
    # a daily schedule that adds something on one day is still daily
    ("The report job runs daily at 06:00; on Mondays it also attaches the weekly summary.",
     "The report job runs every day at 06:00."),
    # two jobs named in code are two jobs, whatever words their names share
    ("`cleanup_stale_uploads` runs hourly.", "`cleanup_stale_sessions` runs daily."),
    # one start said two ways
    ("Branch names start with the ticket number.",
     "Put the ticket number first in every branch name."),
    # two settings are two things, whatever words their names share
    ("Every model has freshness warn_after: 12 hours from the defaults in sources.yml.",
     "The stripe model additionally sets error_after: 24 hours so very stale data fails the run."),
    # two jobs of one namespace are two jobs
    ("The weekly ladder resets Monday 00:00 UTC (Arena.Jobs.ResetLadder).",
     "Daily quests reset at 09:00 UTC for everyone (Arena.Jobs.RefreshQuests)."),
    # a series in use inside the range another memory requires
    ("The app is on Kotlin 2.0.x with the K2 compiler.",
     "The Compose plugin needs Kotlin 2.0 or newer."),
    # a value the other memory states in another sentence: the rest measures other things
    ("Exports page through results 500 rows at a time.",
     "The orders table has 2M rows. Exports read it 500 rows at a time."),
    # "don't X" and "X does harm" say the same
    ("Don't call Variable.get() at the top level of a DAG file.",
     "Module-level Variable.get calls slow the scheduler's parser down."),
    # "only on the main actor" and "all on the main actor" say the same
    ("View models are @MainActor; UI state is only mutated on the main actor.",
     "All UI updates must happen on the main actor, so annotate view models with @MainActor."),
    # a setting both memories give both values of
    ("Eval runs `tessera.eval suite=core`; use suite=smoke for a quick check.",
     "Use suite=smoke for a 3 min subset; suite=core is the full eval."),
    # a function's arity is no place: these are the same party, not two places
    ("Raid parties hold 8 players (lib/raidhall/party.ex).",
     "A raid party holds eight players; Party.join/2 refuses the ninth."),
    # a bug report mentions a name, it does not deny it
    ("This fixes a bug with the SharedDataMiddleware that broke file loading.",
     "The SharedDataMiddleware serves files with an ETag."),
    # two sentences alike in words, each about a thing of its own (memories otherwise apart)
    (":meth:`Response.freeze` now sets the content length, so cached copies keep one.",
     "make_conditional no longer sets content lengths when the application already gave one."),
    # "instead of X for Y" denies X, not Y
    ("Added comment on unicode values on dump_cookie",
     "use arg instead of const for dump_cookie max_size, add changelog"),
    # a version retired is not its product retired
    ("Documented that support for Python 2.6 was dropped with 1.0.",
     "Mark the package compatible with Python 3.12."),
    # a plain word after "use" is no tool: one more word in common is not enough
    ("Use feature flags for every risky change.",
     "Feature flags are not evaluated in the worker process."),
    # "no more than" limits, it does not deny
    ("Run no more than 5 Celery workers per host.", "We use Celery workers for background jobs."),
    # a duration setting is no schedule
    ("The web pods set terminationGracePeriodSeconds: 30.",
     "The web pods are restarted nightly by the cron job."),
    # patterns of names with the same separators name two things
    ("Cache keys look like user:<id> in Redis.", "Session keys look like session:<sid> in Redis."),
    # "only" a list for one verb, another list for another
    ("Only admins and owners can delete projects.",
     "Admins, owners and members can view projects."),
    # an order says when, not whether
    ("Run database migrations before deploying the web service.",
     "Warm the cache after deploying the web service."),
    # named after a ticket and starting with feat/ can both hold
    ("Feature branches are named after the Jira ticket.", "Feature branch names start with feat/."),
    # the same prohibition, once as a rule and once as the harm it prevents: a tool quoted
    # without a value is no setting
    ("Learned in run-12: resizing the `pgbouncer` pool from the cloud console makes the chart"
     " drift; change `pgbouncer.poolSize` in the values file instead.",
     "Don't resize the `pgbouncer` pool in the console, the chart drifts. Change"
     " `pgbouncer.poolSize` in the values file."),
    # a prohibition, and the harm (drift) of doing it
    ("Learned in run-51: bumping the `coredns` add-on from the cloud console makes Terraform"
     " drift; change `cluster_addons.coredns.version` in code instead.", "Don't bump the"
     " `coredns` add-on in the console, Terraform drifts. Change"
     " `cluster_addons.coredns.version` in code."),
    # "no" before a name and what it names denies the latter ("no Event Hubs connection
    # strings" leaves Event Hubs)
    ("Event Hubs are reached with managed identity (`DefaultAzureCredential`); no connection"
     " strings in `appsettings.json` or Key Vault.", "No Event Hubs connection strings anywhere,"
     " not in Key Vault, not in `appsettings.json`. We connect with managed identity through"
     " `DefaultAzureCredential`."),
    # "without it" prohibits nothing; nor does the `.stop()` of code
    ("Reserve stock inside a transaction with `SELECT ... FOR UPDATE` on the item row. Without"
     " it two orders got the last unit in the spring sale.", "Learned in run-12: stock has to be"
     " reserved inside a transaction with `SELECT ... FOR UPDATE` on the item row; otherwise two"
     " orders can take the last unit (it happened in the spring sale)."),
    ("The rider app's logout handler must call `TripTracker.stop()`. Otherwise Android keeps"
     " the foreground service alive and riders see a sticky notification.",
     "Call `TripTracker.stop()` in the rider app's logout handler: if you skip it, Android"
     " keeps the foreground service running and the rider is left with a sticky notification."),
    # "needs v2.x" needs that series, which "~> v2" admits; a setting's span is no command
    ("The `.goreleaser.yaml` uses the `version: 2` schema, so it needs GoReleaser v2.x.",
     "CI runs `goreleaser/goreleaser-action@v6` with `version: '~> v2'`."),
    # who "only" allows, said by the other too
    ("Only the on-call engineer can page the database team.",
     "The on-call engineer can page the database team at any hour."),
    # a route with a placeholder, in a sentence about no names
    ("The list view fetches authors from `/api/articles/{id}/authors` lazily.",
     "Article pages render from `/articles/{slug}` on the server."),
    # a lone placeholder is no pattern of names
    ("Cache keys carry the <id> of their owner.", "Cache keys follow user:<id>:profile."),
]  # fmt: skip


@pytest.mark.parametrize(("a", "b"), AGREEING)
def test_claims_that_agree_are_no_conflict(a, b):
    assert compare(a, b).kind != CONFLICT
    assert compare(b, a).kind != CONFLICT


def test_two_change_log_entries_are_history_not_claims():
    # Each says what was done then: neither contradicts nor repeats the other.
    a, b = "Added werkzeug bootstrapping script.", "Dropped werkzeug bootstrap."
    assert compare_words(a, b, cosine=0.9).kind is None
    assert (
        compare_words("Finished url generation.", "Improved url generation.", cosine=0.95).kind
        is None
    )
    # Word for word, they repeat.
    assert (
        compare_words("Removed unnecessary import", "removed unnecessary imports", cosine=1.0).kind
        == REPEAT
    )
    # A change log entry against a standing claim still disagrees.
    assert (
        compare_words("Use pnpm for installs.", "Moved from pnpm to npm for installs.").kind
        == CONFLICT
    )


def test_versions_of_one_product_are_compared_however_little_else_is_shared():
    a = (
        "Build the firmware with ESP-IDF v5.1.x: the status LED driver changed its RMT calls"
        " in later releases and breaks."
    )
    b = "The CI image builds firmware on espressif/idf:v5.2.1 cleanly; nobody checks older ones."
    verdict = compare_words(a, b)
    assert verdict.similarity < NAMED
    assert verdict.kind == CONFLICT
    assert verdict.evidence["class"] == "version"
    # Sentences that share no words besides the product say two things.
    assert (
        compare_words(
            "Node 18.19.0 is used by the legacy admin panel.",
            "The marketing site is built with Node 20.11.1 on Netlify.",
        ).kind
        is None
    )


def test_only_before_a_verb_restricts_the_verb_not_the_name():
    def only(a: str, b: str) -> rules.Finding | None:
        (first,), (second,) = split(a), split(b)
        words = frozenset(sentence_words(first)), frozenset(sentence_words(second))
        return exclusive.exclusivity(first, second, *words, frozenset())

    # "GC only runs when ...": GC runs only then; it is not "GC-only".
    assert (
        only(
            "Blob file GC only runs when the last level of blob files is compacted.",
            "Values over 64 KiB are written to blob files with a pointer in the SSTable.",
        )
        is None
    )
    finding = only(
        "Dependencies are SPM-only for the app target.",
        "The app target gets its dependencies from CocoaPods.",
    )
    assert finding is not None
    assert finding.about == "spm"


def test_an_abbreviation_ends_no_sentence():
    sentences = split("Use a prefix, e.g. CS_SAVE, i.e. the sender's. Then a verb, etc. Done.")
    assert [sentence.text for sentence in sentences] == [
        "Use a prefix, e.g. CS_SAVE, i.e. the sender's.",
        "Then a verb, etc.",
        "Done.",
    ]


def test_what_use_prescribes_is_a_tool_not_a_count():
    from knowledge import tools

    assert tools.prescribed(read("The service uses pgbouncer in front of PostgreSQL.")) == {
        "pgbouncer"
    }
    assert tools.prescribed(read("Pinning uses two keys: the one in use plus a spare.")) == set()
