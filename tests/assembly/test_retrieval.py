"""Retrieval that reads the whole task: every write-scope match is graded before the pool is
cut, code names and the write scope's own words count, and the statements stay few."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from assembly.requests import ContextRequest
from assembly.scope import scope_grade, scope_keys, specificity
from assembly.services import context_assemble
from memories.actors import Actor
from memories.models import Memory
from memories.statistics import forget_common_words
from memories.words import task_words

pytestmark = pytest.mark.django_db
SYSTEM = Actor.system("tests")


def assemble(project, **kwargs):
    kwargs.setdefault("token_budget", 4000)
    return context_assemble(project=project, request=ContextRequest(**kwargs), actor=SYSTEM)


def clone(memory: Memory, count: int) -> None:
    """``count`` more memories like ``memory``, each (and ``memory`` too) naming a client of
    its own, so that none repeats another; their words and keys are the database's
    (generated columns)."""
    columns = [
        f.column
        for f in Memory._meta.concrete_fields
        if not f.generated and not f.primary_key and f.column != "content"
    ]
    names = ", ".join(columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO project_memories (content, {names})"
            f" SELECT content || ' Client ' || md5(n::text) || '.', {names} FROM project_memories,"
            " generate_series(1, %s) AS n WHERE id = %s",
            [count, memory.pk],
        )
        cursor.execute(
            "UPDATE project_memories SET content = content || ' Client ' || md5('0') || '.'"
            " WHERE id = %s",
            [memory.pk],
        )
        cursor.execute("ANALYZE project_memories")
    forget_common_words()


def test_the_memory_tagged_with_the_very_file_is_first_among_500_sharing_the_intent(
    project, make_memory
):
    """500 memories under a broad glob say every word of the intent; one names the very file
    being changed and none of the words: graded before any is cut, it comes first."""
    crowd = make_memory(
        project=project,
        tags=["src/**"],
        content="Invoice totals round VAT half up, per line, before the sum.",
        relevance_score=1.0,
    )
    clone(crowd, 499)
    exact = make_memory(
        project=project,
        tags=["src/billing/invoices.py"],
        content="Keep the ledger import at the bottom of the module.",
        relevance_score=0.5,
    )
    result = assemble(
        project,
        write_scope=("src/billing/invoices.py",),
        intent="round VAT in invoice totals",
        limit=10,
    )
    assert result.items[0].id == exact.pk
    assert result.items[0].score_parts["scope"] == 1.0
    assert len(result.items) == 10


def test_a_memory_naming_the_changed_module_ranks_high_without_an_intent_word(project, make_memory):
    """The files being changed name the task: a memory that says "converters" ranks first
    for a change to routing/converters.py, although it shares no word with the intent."""
    for index in range(8):
        make_memory(
            project=project,
            content=f"Keep the release notes short, item {index} of the checklist.",
            relevance_score=1.0,
        )
    naming = make_memory(
        project=project,
        content="Converters parse path segments lazily: validate in to_python, not in the rule.",
        relevance_score=0.5,
    )
    result = assemble(
        project,
        write_scope=("src/app/routing/converters.py",),
        intent="accept negative numbers",
        limit=5,
    )
    assert result.items[0].id == naming.pk
    parts = result.items[0].score_parts
    assert (parts["path_text"], parts["text_relevance"], parts["tag_match"]) == (1.0, 0.0, 0.0)
    assert all(item.score_parts["path_text"] == 0.0 for item in result.items[1:])


def test_tag_words_count_as_the_memorys_words(project, make_memory):
    """A memory tagged with the changed package's folder ranks above one tagged with its
    parent, though both match the scope and say as much."""
    parent = make_memory(project=project, tags=["httpx/**"], content="Close the pool on exit.")
    folder = make_memory(
        project=project, tags=["httpx/_transports/**"], content="Close the client on exit."
    )
    result = assemble(project, write_scope=("httpx/_transports/default.py",), limit=5)
    order = [item.id for item in result.items]
    assert order.index(folder.pk) < order.index(parent.pk)
    assert result.items[0].score_parts["path_text"] == 1.0


@pytest.mark.parametrize(
    ("content", "found_by"),
    [
        ("Tiny refactor of _multipart.py and _main.py.", "multipart"),
        ("Use MultiDict for repeated query keys.", "dict"),
        ("HTTPServer needs the socket closed.", "server"),
        ("Moved helpers to src/werkzeug/routing/rules.py.", "rules"),
        ("utils.invalidate_cached_property() is new.", "invalidate"),
    ],
)
def test_code_names_are_searched_by_their_parts(project, make_memory, content, found_by):
    memory = make_memory(project=project, content=content)
    found = Memory.objects.filter(
        pk=memory.pk, search_vector=_query(found_by)
    ).exists()  # the API's full-text filter reads the same words
    assert found


def _query(word: str):
    from django.contrib.postgres.search import SearchQuery

    return SearchQuery(word, config="english")


def test_a_tasks_words_are_its_intents_and_its_paths():
    words = task_words("Fix _multipart.py encoding", ["src/app/routing/rules.py", "tests/x.py"])
    assert {"multipart", "encod", "fix"} <= set(words.intent)
    # Folders and file names, without src, tests and extensions.
    assert set(words.path) == {"app", "rout", "rule", "x"}


def test_a_root_file_tag_names_that_file_as_exactly_as_a_path():
    assert specificity("setup.py", "setup.py") == 1.0
    assert specificity("README.md", "readme.md") == 1.0
    assert specificity("setup.py", "pkg/setup.py") == 0.1  # a keyword elsewhere


@pytest.mark.parametrize(
    "tags",
    [
        ["src/pkg/sub/views.py"],
        ["src/pkg/sub/**"],
        ["src/pkg/**"],
        ["src/**"],
        ["src/pkg"],
        ["views"],
        ["src/pkg/**", "views"],
        ["setup.py"],
        ["docs/**"],
    ],
)
@pytest.mark.parametrize(
    "scope", [["src/pkg/sub/views.py"], ["src/pkg/sub/views.py", "setup.py"], ["setup.py"]]
)
def test_the_keys_grade_plain_tags_exactly_as_the_scope_grade(tags, scope):
    """The statement grades through the tags' keys; Python grades the tags themselves: for
    plain paths, globs below a folder and keywords they agree (the keys' grade is never
    above the real one)."""
    from memories.tags import tag_keys

    held = set(tag_keys(tags))
    by_entry: dict[int, float] = {}
    for key in scope_keys(scope):
        if key.key in held:
            by_entry[key.entry] = max(by_entry.get(key.entry, 0.0), key.grade)
    assert round(sum(by_entry.values()) / len(scope), 6) == scope_grade(tags, scope)


def test_same_store_and_request_give_the_same_text_with_words_and_paths(project, make_memory):
    for index in range(30):
        make_memory(
            project=project,
            tags=[f"src/app/part{index % 4}/**"],
            content=f"Rule {index}: converters parse lazily, routing builds once ({index}).",
        )
    request = {
        "write_scope": ("src/app/part2/routing.py",),
        "intent": "lazy converters",
        "token_budget": 300,
    }
    first = assemble(project, **request)
    forget_common_words()
    again = assemble(project, **request)
    assert first.text == again.text
    assert [item.score_parts for item in first.items] == [item.score_parts for item in again.items]


def test_the_context_path_runs_a_fixed_number_of_statements(
    project, make_memory, django_assert_num_queries, settings
):
    """Cache off, a task with an intent and a write scope: each source's candidates in one
    pipeline (settings, SELECT, their RESETs), the open pairs among them, the access
    counts. The first time a task's words are read, and each word's frequency counted
    (once per version of the project's memories): at most one statement a source more."""
    settings.ASSEMBLY_CACHE_SECONDS = 0
    for n in range(30):
        make_memory(
            project=project, tags=[f"src/app/part{n % 3}/**"], content=f"Converters note {n}."
        )
    project = type(project).objects.select_related("policy").get(pk=project.pk)
    request = {"write_scope": ("src/app/part1/routing.py",), "intent": "lazy converters"}
    # The first time: the task's words; for project and global, their size and mean length
    # (every 5 minutes), and the frequencies of the words the statistics do not list.
    with django_assert_num_queries(21):
        assemble(project, **request)
    # Then, for project and global: a savepoint (inside the tests' transaction), in one
    # pipeline set the settings, SELECT, RESET each of the three; release (14); the open
    # pairs among the candidates (1); the access counts (1).
    with django_assert_num_queries(16):
        assemble(project, **request)
    # The statistics read again (every 5 minutes), and with them the words' frequencies
    # counted afresh: 5 statements more.
    forget_common_words()
    with django_assert_num_queries(21):
        assemble(project, **request)


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_sources_are_asked_at_once_and_answer_the_same(
    project, make_memory, settings
):
    from assembly import sources

    settings.ASSEMBLY_CACHE_SECONDS = 0
    for n in range(12):
        make_memory(project=project, tags=["src/app/**"], content=f"Project note {n} on routing.")
    services_global = [
        make_memory(project=None, scope="global", content=f"Global note {n} on routing.")
        for n in range(4)
    ]
    approved = {"active": True, "review_status": "approved", "approved_at": timezone.now()}
    Memory.objects.filter(pk__in=[m.pk for m in services_global]).update(confidence=1.0, **approved)
    seen: list[str] = []
    real = sources.fetch

    def spy(source, **kwargs):
        import threading

        seen.append(f"{source}@{threading.current_thread().name.split('_')[0]}")
        return real(source, **kwargs)

    request = {"write_scope": ("src/app/routing.py",), "intent": "routing", "token_budget": 800}
    try:
        sources.fetch = spy
        at_once = assemble(project, **request)
        assert "project@MainThread" in seen
        assert "global@sources" in seen  # on a helper, with its own connection
        seen.clear()
        from django.db import transaction

        with transaction.atomic():  # a transaction's reads stay on its connection
            in_turn = assemble(project, **request)
        assert "global@MainThread" in seen
    finally:
        sources.fetch = real
        sources.close_helper_connections()
    assert at_once.text == in_turn.text
    assert {item.source for item in at_once.items} == {"project", "global"}
