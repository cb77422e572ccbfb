"""Context assembly against the database and over the API."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from assembly.requests import ContextRequest
from assembly.services import context_assemble
from memories import services
from memories.actors import Actor
from memories.models import Memory, Run
from memories.tokens import count_tokens
from tests.api.conftest import client_with_key, url
from tests.factories import distinct_sentence

pytestmark = pytest.mark.django_db
SYSTEM = Actor.system("tests")


def assemble(project, **kwargs):
    kwargs.setdefault("token_budget", 2000)
    return context_assemble(project=project, request=ContextRequest(**kwargs), actor=SYSTEM)


def test_section_lists_tag_matches_first_one_line_each(project, make_memory):
    make_memory(project=project, type="pattern", content="Keep views thin.", relevance_score=1.0)
    make_memory(
        project=project, type="warning", tags=["src/core/**"],
        content="Full test suite required\nwhen modifying src/core/.", relevance_score=0.2,
    )  # fmt: skip
    result = assemble(project, write_scope=("src/core/models.py",))
    assert result.text == (
        "## Memories\n"
        "- [warning] Full test suite required when modifying src/core/.\n"
        "- [pattern] Keep views thin."
    )
    assert result.metadata.total_tokens == count_tokens(result.text, "o200k_base")
    first = result.items[0]
    assert (first.rank, first.source, first.score_parts["tag_match"]) == (1, "project", 1.0)


def test_the_budget_is_never_exceeded_and_drops_say_why(project, make_memory):
    for index in range(8):
        long = " ".join(distinct_sentence(100 * index + part) for part in range(5))
        make_memory(project=project, content=long)
    result = assemble(project, token_budget=120, response_reserve=20, lod="atomic")
    assert count_tokens(result.text, "o200k_base") <= 100
    assert result.items
    assert {d.reason for d in result.dropped} == {"budget"}


def test_limit_defaults_to_the_policy(project, make_memory):
    for index in range(12):
        make_memory(project=project, content=distinct_sentence(index))
    assert len(assemble(project).items) == 10
    assert len(assemble(project, limit=3).items) == 3


def test_selection_rules_and_the_reasons_for_left_out_matches(project, make_memory):
    kept = make_memory(project=project, tags=["src/**"], content="kept")
    low = make_memory(project=project, tags=["src/**"], content="low")
    Memory.objects.filter(pk=low.pk).update(confidence=0.25)
    old = make_memory(project=project, tags=["src/**"], content="old", type="context")
    Memory.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(days=1))
    off = make_memory(project=project, tags=["src/**"], content="off")
    Memory.objects.filter(pk=off.pk).update(active=False)
    result = assemble(project, write_scope=("src/a.py",))
    assert [item.id for item in result.items] == [kept.pk]
    reasons = {d.id: d.reason for d in result.dropped}
    assert reasons == {low.pk: "below_confidence", old.pk: "expired"}


def test_intent_relevance_ranks_matching_memories_higher(project, make_memory):
    make_memory(project=project, content="Deploys happen on Tuesday.")
    migration = make_memory(project=project, content="Migrations lock the events table.")
    result = assemble(project, intent="add a migration to the events table")
    assert result.items[0].id == migration.pk
    assert result.items[0].score_parts["text_relevance"] > 0


def test_sources_global_project_and_run(project, make_memory, make_run, reviewer_actor):
    run = make_run(project=project)
    own = make_memory(project=project, content="project memory")
    scratch = make_memory(project=project, scope="run", source_run=run, content="scratch note")
    shared = services.memory_create(
        project=None, type="pattern", content="global memory", source="run", actor=SYSTEM
    )
    services.memory_approve(memory=shared, actor=reviewer_actor)
    everything = assemble(project, run_id=run.pk)
    assert {i.id: i.source for i in everything.items} == {
        own.pk: "project", scratch.pk: "run", shared.pk: "global",
    }  # fmt: skip
    only_project = assemble(project, sources=("project",))
    assert [i.id for i in only_project.items] == [own.pk]
    coverage = everything.metadata.source_coverage
    # The shares add up to the budget less the section's heading.
    budget = everything.metadata.budget
    assert budget - 10 < sum(c.allocated for c in coverage.values()) < budget


def test_levels_of_detail(project, make_memory):
    make_memory(project=project, content="First sentence. " + "More detail here. " * 10)
    macro = assemble(project, lod="macro")
    atomic = assemble(project, lod="atomic")
    assert macro.text == "## Memories\n- [pattern] First sentence."
    assert "More detail here." in atomic.text
    assert macro.items[0].detail == "macro"


def test_same_memories_and_request_give_byte_identical_text(project, make_memory, settings):
    for index in range(5):
        make_memory(project=project, content=f"Memory {index}", relevance_score=0.5)
    first = assemble(project, write_scope=("src/a.py",), intent="memory")
    settings.ASSEMBLY_CACHE_SECONDS = 0
    from django.core.cache import caches

    caches["assembly"].clear()
    second = assemble(project, write_scope=("src/a.py",), intent="memory")
    assert second.metadata.cache_hit is False
    assert (first.text, first.metadata.prompt_hash) == (
        second.text,
        second.metadata.prompt_hash,
    )


def test_run_records_what_it_was_given_and_its_outcome_moves_it(project, make_memory, make_run):
    # Three memories that say different things (three one-word ones mean the same to the
    # embedding model, and two would be repeats).
    memories = [make_memory(project=project, content=distinct_sentence(i)) for i in range(3)]
    run = make_run(project=project)
    result = assemble(project, run_id=run.pk)
    run.refresh_from_db()
    assert run.prompt_hash == result.metadata.prompt_hash
    given = list(run.given.order_by("rank").values_list("memory_id", "rank"))
    assert given == [(item.id, item.rank) for item in result.items]
    services.run_record_outcome(run=run, outcome="succeeded", actor=SYSTEM)
    assert {Memory.objects.get(pk=m.pk).confidence for m in memories} == {0.6}


def test_chosen_memories_count_an_access(project, make_memory):
    memory = make_memory(project=project)
    assemble(project)
    assemble(project)
    memory.refresh_from_db()
    assert memory.access_count == 2
    assert memory.last_accessed_at is not None


def test_over_the_api_access_is_counted_once_the_response_is_sent(project, make_memory):
    memory = make_memory(project=project)
    then = []
    result = context_assemble(
        project=project,
        request=ContextRequest(token_budget=2000),
        actor=SYSTEM,
        defer=then.append,
    )
    assert [item.id for item in result.items] == [memory.pk]
    memory.refresh_from_db()
    assert memory.access_count == 0  # handed over, not yet run
    then[0]()
    memory.refresh_from_db()
    assert memory.access_count == 1
    # The API hands it to the response, which runs it when the server closes it.
    response = client_with_key(project).post(
        url(project, "context"), {"tokenBudget": 2000}, format="json"
    )
    assert response.status_code == 200
    memory.refresh_from_db()
    assert memory.access_count == 2


def test_cache_hit_until_a_memory_changes(project, make_memory, django_capture_on_commit_callbacks):
    memory = make_memory(project=project, content="cached")
    assert assemble(project).metadata.cache_hit is False
    assert assemble(project).metadata.cache_hit is True
    with django_capture_on_commit_callbacks(execute=True):
        services.memory_update(memory=memory, actor=SYSTEM, content="changed")
    again = assemble(project)
    assert again.metadata.cache_hit is False
    assert "changed" in again.text


def test_an_edited_policy_is_not_served_from_the_cache(project, make_memory):
    make_memory(project=project, content="Kept until the policy asks for more.")
    assert assemble(project).items
    policy = project.policy
    policy.min_confidence = 0.99
    policy.save()
    again = assemble(project)
    assert again.metadata.cache_hit is False
    assert again.items == []


def test_a_result_assembled_across_a_write_is_never_served(
    project, make_memory, django_capture_on_commit_callbacks, monkeypatch
):
    """The entry keeps the versions read before assembling; a write that commits meanwhile
    moves them, so the next request assembles again and sees the write."""
    from assembly import services as assembly_services

    memory = make_memory(project=project, content="before")
    real_assemble = assembly_services._assemble

    def assemble_while_someone_writes(*args, **kwargs):
        result = real_assemble(*args, **kwargs)
        with django_capture_on_commit_callbacks(execute=True):
            services.memory_update(memory=memory, actor=SYSTEM, content="after")
        return result

    monkeypatch.setattr(assembly_services, "_assemble", assemble_while_someone_writes)
    assert "before" in assemble(project).text
    monkeypatch.setattr(assembly_services, "_assemble", real_assemble)
    again = assemble(project)
    assert again.metadata.cache_hit is False
    assert "after" in again.text


def test_assembly_runs_a_fixed_number_of_queries(
    project, make_memory, make_run, django_assert_num_queries, settings
):
    settings.ASSEMBLY_CACHE_SECONDS = 0
    run = make_run(project=project)
    for count in (3, 30):
        for _ in range(count):
            make_memory(project=project, tags=["src/**"])
        project = type(project).objects.select_related("policy").get(pk=project.pk)
        from django.core.cache import caches

        caches["assembly"].clear()
        # run lookup; the task's words (the first time); for each of run, project (with its
        # left-out matches) and global: savepoint, then in one pipeline set the timeout,
        # SELECT, RESET its three settings; release; recording the run: savepoint, lock,
        # INSERT given, UPDATE prompt hash, release; access UPDATE; the open pairs among the
        # candidates
        with django_assert_num_queries(30 if count == 3 else 29):
            assemble(project, write_scope=("src/a.py",), run_id=run.pk, limit=5)
        Run.objects.filter(pk=run.pk).update(prompt_hash="")
        run.given.all().delete()


def test_prompt_format_places_memories_between_read_first_and_constraints(project, make_memory):
    make_memory(project=project, content="Remember me.")
    result = assemble(
        project, format="prompt",
        prompt={"role": "Engineer", "readFirst": "README.md", "constraints": "No new deps."},
    )  # fmt: skip
    assert result.text == (
        "## Role\nEngineer\n\n## Read First\nREADME.md\n\n"
        "## Memories\n- [pattern] Remember me.\n\n## Constraints\nNo new deps."
    )


def test_budget_exceeded_when_not_one_memory_fits(project, make_memory):
    make_memory(project=project, content="word " * 200)
    result = assemble(project, token_budget=5, lod="atomic")
    assert result.text == ""
    assert [w.code for w in result.metadata.warnings] == ["BUDGET_EXCEEDED"]


@pytest.mark.django_db(transaction=True)
def test_a_slow_source_is_cut_off_with_source_timeout(project, make_memory):
    import psycopg

    make_memory(project=project)
    settings = connection.settings_dict
    blocker = psycopg.connect(
        dbname=settings["NAME"], user=settings["USER"], host=settings["HOST"] or None,
        port=settings["PORT"] or None, password=settings["PASSWORD"] or None,
    )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        (default_timeout,) = cursor.fetchone()
    try:
        blocker.execute("LOCK TABLE project_memories IN ACCESS EXCLUSIVE MODE")
        result = assemble(project, time_budget_ms=150)
    finally:
        blocker.rollback()
        blocker.close()
    # The connection goes on with its own timeout, not the cancelled source's.
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone() == (default_timeout,)
    codes = [w.code for w in result.metadata.warnings]
    assert codes.count("SOURCE_TIMEOUT") >= 1
    assert result.text == ""
    assert result.metadata.source_coverage["project"].timed_out is True


def test_a_prompt_whose_own_sections_do_not_fit_returns_nothing_and_says_why(project, make_memory):
    make_memory(project=project)
    result = assemble(project, token_budget=10, format="prompt", prompt={"task": "word " * 50})
    assert result.text == ""
    (warning,) = result.metadata.warnings
    assert warning.code == "BUDGET_EXCEEDED"
    assert "the budget is 10" in warning.message


def test_the_same_store_and_request_give_the_same_answer_all_day(
    project, make_memory, settings, monkeypatch
):
    """Forty memories that differ only in their number, tagged alike: asked again and again
    through a day (cache off), the selection and the text never change; recency may not
    move a ranking between two requests seconds apart, and ties have a stable order."""
    from datetime import datetime

    from assembly import services as assembly_services

    settings.ASSEMBLY_CACHE_SECONDS = 0
    day = datetime.now(tz=UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    for number in range(40):
        memory = make_memory(project=project, tags=["src/**"], content=f"Rule {number}: keep it.")
        # Written by an agent over half a minute, as agents write.
        Memory.objects.filter(pk=memory.pk).update(
            created_at=day - timedelta(days=3) + timedelta(seconds=0.7 * number)
        )
    answers = set()
    for seconds in [1, 1.5, 2, 2.5, 3, 600, 3600, 43200, 86399]:
        at = day + timedelta(days=1, seconds=seconds)
        monkeypatch.setattr(assembly_services.timezone, "now", lambda at=at: at)
        result = assemble(project, write_scope=("src/a.py",), token_budget=120, limit=5)
        answers.add((result.text, tuple(item.id for item in result.items)))
    assert len(answers) == 1


def test_a_rare_word_of_the_intent_weighs_more_than_a_common_one(project, make_memory):
    """IDF: among memories that each hold one word of the intent, the one holding the word
    few memories hold ranks first; a word every other memory holds says little."""
    for number in range(30):
        make_memory(project=project, content=f"Fix the flaky test number {number} in the suite.")
    rare = make_memory(project=project, content="The session cookie keeps SameSite=Lax.")
    result = assemble(project, intent="fix samesite", limit=5)
    assert result.items[0].id == rare.pk
    parts = result.items[0].score_parts
    assert parts["text_relevance"] == 1.0
    assert result.items[1].score_parts["text_relevance"] < 0.5


def test_among_write_scope_matches_the_more_specific_and_covering_rank_first(project, make_memory):
    """Matches still come first; among them, the very file beats a deep directory, which
    beats a shallow one, which beats a keyword, and covering more of the scope counts (the
    scope part alone: the path's words count apart, below)."""
    project.policy.weight_path = 0.0
    project.policy.save()
    path = "src/pkg/sub/views.py"
    tags = [["views"], ["src/**"], ["src/pkg/**"], ["src/pkg/sub/**"], [path]]
    made = [make_memory(project=project, tags=t, content=f"Note {i}.") for i, t in enumerate(tags)]
    unrelated = make_memory(project=project, tags=["docs/**"], content="Note on docs.")
    result = assemble(project, write_scope=(path,))
    order = [item.id for item in result.items]
    assert order[:5] == [memory.pk for memory in reversed(made)]
    assert order[5] == unrelated.pk
    assert [item.score_parts["scope"] for item in result.items][:5] == sorted(
        (item.score_parts["scope"] for item in result.items[:5]), reverse=True
    )
    covering = make_memory(project=project, tags=["src/**", "tests/**"], content="Both.")
    half = make_memory(project=project, tags=["src/**"], content="One.")
    result = assemble(project, write_scope=("src/a.py", "tests/test_a.py"))
    ids = [item.id for item in result.items]
    assert ids.index(covering.pk) < ids.index(half.pk)


def test_a_near_repeat_is_not_given_twice_and_says_which_it_repeats(project, make_memory):
    rule = "API errors use the shape {error: {code, message, fields}}."
    first = make_memory(project=project, content=rule, relevance_score=0.9)
    again = make_memory(project=project, content=rule + " (seen again in run-002)")
    other = make_memory(project=project, content="Deploys happen on Tuesday.")
    result = assemble(project)
    assert [item.id for item in result.items] == [first.pk, other.pk]
    (dropped,) = [d for d in result.dropped if d.id == again.pk]
    assert (dropped.reason, dropped.repeats) == ("similar", first.pk)
    set_similar = type(project.policy).objects.filter(project=project)
    set_similar.update(similar_threshold=1.0)  # a repeat with an addition is still a repeat
    project.policy.refresh_from_db()
    assert again.pk not in [item.id for item in assemble(project).items]


def test_memories_that_mention_the_requests_entities_rank_higher(project, make_memory):
    """Entities (identifiers, package names, paths) bring and rank the memories that
    mention them; a longer identifier that merely contains one is no mention."""
    plain = make_memory(project=project, content="Keep the routing table small.", relevance_score=1)
    partial = make_memory(project=project, content="Call url_for_static for the assets.")
    mentioned = make_memory(project=project, content="Never build links by hand: use url_for.")
    tagged = make_memory(project=project, content="Auth notes.", tags=["src/auth/**"])
    result = assemble(project, entities=("url_for", "src/auth/login.py"))
    parts = {item.id: item.score_parts["entities"] for item in result.items}
    assert parts[mentioned.pk] == parts[tagged.pk] == 0.5
    assert parts[partial.pk] == parts[plain.pk] == 0.0
    order = [item.id for item in result.items]
    assert order.index(mentioned.pk) < order.index(plain.pk)
