"""Selection at run start (DESIGN.md section 3) and the glob rule behind tag matching."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st

from assembly.selection import memories_for_task
from memories import services
from memories.actors import Actor
from memories.models import Memory
from memories.tags import probe_keys, tag_keys, tag_matches_scope

pytestmark = pytest.mark.django_db

GLOB_CASES = [
    # (tag, scope entry, matches)
    ("src/core/**", "src/core/a/b.py", True),
    ("src/core/**", "src/core/a.py", True),
    ("src/core/**", "src/corex/a.py", False),
    ("src/core/**", "lib/src/core/a.py", False),
    ("src/core/*.py", "src/core/a.py", True),
    ("src/core/*.py", "src/core/a/b.py", False),
    ("src/**/test_*.py", "src/test_a.py", True),
    ("src/**/test_*.py", "src/a/b/test_c.py", True),
    ("src/**/test_*.py", "src/a/b/c.py", False),
    ("src/?.py", "src/a.py", True),
    ("src/?.py", "src/ab.py", False),
    ("src/core", "src/core/a.py", True),
    ("src/core", "src/core", True),
    ("src/core/", "src/core/a/b.py", True),
    ("src/core", "src/core_old/a.py", False),
    ("src/core.py", "src/corexpy", False),
    ("*.md", "README.md", True),
    ("*.md", "docs/README.md", False),
    ("auth", "src/auth/login.py", True),
    ("login", "src/auth/login.py", True),
    ("Auth", "src/AUTH/login.py", True),
    ("log", "src/auth/login.py", False),
    ("database", "src/db/models.py", False),
    ("src/core/db.py", "src/core/**", True),
    ("src/api/**", "src/**", True),
    ("core", "src/core/**", True),
    ("database", "src/**", False),
    ("a+b(c)", "x/a+b(c)/y", True),
    ("a.b", "x/aXb/y", False),
]


@pytest.mark.parametrize(("tag", "entry", "expected"), GLOB_CASES)
def test_glob_rule_in_python(tag, entry, expected):
    assert tag_matches_scope(tag, [entry]) is expected


@pytest.mark.parametrize(("tag", "entry", "expected"), GLOB_CASES)
def test_glob_rule_in_the_selection_query(project, make_memory, tag, entry, expected):
    make_memory(project=project, tags=[tag])
    (selected,) = memories_for_task(project=project, write_scope=[entry])
    assert selected.tag_match is expected


@pytest.mark.parametrize(("tag", "entry", "expected"), GLOB_CASES)
def test_the_match_key_index_finds_every_match(project, make_memory, tag, entry, expected):
    """A better memory without tags is what confidence alone would pick; only the write-scope
    lookup through the match keys can put the tagged one first."""
    decoy = make_memory(project=project, source="human", relevance_score=1.0)
    tagged = make_memory(project=project, tags=[tag], relevance_score=0.1)
    (selected,) = memories_for_task(project=project, write_scope=[entry], limit=1)
    assert selected.pk == (tagged.pk if expected else decoy.pk)


path_segment = st.text(alphabet="abAB.-_*?", min_size=1, max_size=4)
path = st.lists(path_segment, min_size=1, max_size=4).map("/".join)
tag_strategy = st.one_of(
    path,
    path.map(lambda value: value + "/"),
    path.map(lambda value: "./" + value),
    st.text(alphabet="abAB.-_", min_size=1, max_size=6),
)


@given(tag=tag_strategy, entry=st.one_of(path, tag_strategy))
@settings(max_examples=1000, deadline=None)
def test_match_keys_find_every_match_and_exact_keys_prove_one(tag, entry):
    probe = probe_keys([entry])
    keys = set(tag_keys([tag]))
    matches = tag_matches_scope(tag, [entry])
    if matches and probe.anchored:
        assert keys & set(probe.exact + probe.candidate), (tag, entry)
    if keys & set(probe.exact):
        assert matches, (tag, entry)


def test_match_keys_are_stored_per_owner_and_follow_the_content(project, make_memory, reviewer):
    memory = make_memory(project=project, tags=["Auth"], content="Rotate the tokens")
    stored = Memory.objects.values_list("match_keys", flat=True).get(pk=memory.pk)
    # Its words are those of its content and of its tags (memories.words).
    assert set(stored) == {
        f"{project.pk}:kw:auth",
        f"{project.pk}:w:auth",
        f"{project.pk}:w:rotat",
        f"{project.pk}:w:token",
    }
    services.memory_update(
        memory=memory, actor=Actor.for_user(reviewer), content="Cache results", tags=["src/a/"]
    )
    stored = Memory.objects.values_list("match_keys", flat=True).get(pk=memory.pk)
    assert set(stored) == {
        f"{project.pk}:tree:src/a/",
        f"{project.pk}:lit:src/",
        f"{project.pk}:lit:src/a/",
        f"{project.pk}:w:cach",
        f"{project.pk}:w:result",
    }


def test_selection_keeps_only_usable_memories(project, other_project, make_memory):
    now = timezone.now()
    usable = make_memory(project=project, content="usable")
    at_threshold = make_memory(project=project, source="learning", content="exactly 0.3")
    make_memory(project=project, content="inactive")
    Memory.objects.filter(content="inactive").update(active=False)
    make_memory(project=project, content="expired", type="context")
    Memory.objects.filter(content="expired").update(expires_at=now - timedelta(seconds=1))
    make_memory(project=project, content="unconfident")
    Memory.objects.filter(content="unconfident").update(confidence=0.29)
    make_memory(project=other_project, content="other project")

    selected = memories_for_task(project=project, write_scope=[], now=now)

    assert {m.pk for m in selected} == {usable.pk, at_threshold.pk}


def test_project_minimum_confidence_is_used(project, make_memory):
    make_memory(project=project, source="learning")
    project.policy.min_confidence = 0.4
    project.policy.save()
    assert memories_for_task(project=project, write_scope=[]) == []


def test_tag_matches_come_first_then_confidence_times_relevance(project, make_memory):
    best_unmatched = make_memory(project=project, source="human", relevance_score=1.0)
    weak_match = make_memory(project=project, tags=["src/core/**"], relevance_score=0.2)
    strong_match = make_memory(project=project, tags=["core"], relevance_score=0.9)
    middle_unmatched = make_memory(project=project, relevance_score=0.8)

    selected = memories_for_task(project=project, write_scope=["src/core/models.py"])

    assert [m.pk for m in selected] == [
        strong_match.pk,
        weak_match.pk,
        best_unmatched.pk,
        middle_unmatched.pk,
    ]


def test_ties_are_ordered_deterministically(project, make_memory):
    # Same product 0.25: higher confidence first, then the older memory.
    a = make_memory(project=project, source="run", relevance_score=0.5)
    b = make_memory(project=project, source="run", relevance_score=0.5)
    c = make_memory(project=project, source="human", relevance_score=0.25)
    selected = memories_for_task(project=project, write_scope=[])
    assert [m.pk for m in selected] == [c.pk, a.pk, b.pk]


def test_limit_defaults_to_the_policy_and_can_be_given(project, make_memory):
    for _ in range(12):
        make_memory(project=project)
    assert len(memories_for_task(project=project, write_scope=[])) == 10
    assert len(memories_for_task(project=project, write_scope=[], limit=3)) == 3
    project.policy.selection_limit = 5
    project.policy.save()
    assert len(memories_for_task(project=project, write_scope=[])) == 5


def test_approved_global_memories_are_shared_with_every_project(
    project, other_project, reviewer_actor
):
    shared = services.memory_create(
        project=None, type="pattern", content="global", source="run", actor=Actor.system("t")
    )
    assert memories_for_task(project=project, write_scope=[]) == []
    services.memory_approve(memory=shared, actor=reviewer_actor)
    for each in (project, other_project):
        assert [m.pk for m in memories_for_task(project=each, write_scope=[])] == [shared.pk]


def test_selection_is_one_query(project, make_memory, django_assert_num_queries):
    for index in range(20):
        make_memory(project=project, tags=[f"src/m{index}/**"])
    project = type(project).objects.select_related("policy").get(pk=project.pk)
    with django_assert_num_queries(1):
        memories_for_task(project=project, write_scope=["src/m3/a.py", "src/**"])
