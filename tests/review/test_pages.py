"""Pages that explain themselves: the dashboard's links, the runs and a run's page, the
memory list's stale filter and labels."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memories import services
from memories.models import Memory

pytestmark = pytest.mark.django_db


def test_dashboard_links_stale_and_global_and_names_jobs_in_words(
    reviewer_client, project, make_memory, reviewer_actor
):
    from policies.models import JobState

    memory = make_memory(project=project)
    services.memory_flag(memory=memory, actor=reviewer_actor, reason="looks old")
    JobState.objects.create(name="decay_memories")
    page = reviewer_client.get(reverse("review:dashboard")).text
    stale = reverse("review:memories", args=[project.slug]) + "?stale=yes&amp;active=yes"
    assert f'href="{stale}">1</a>' in page
    assert f'href="{reverse("review:queue")}?scope=global"' in page
    assert "Confidence decay" in page


def test_the_stale_filter_lists_flagged_memories_only(
    reviewer_client, project, make_memory, reviewer_actor
):
    flagged, other = make_memory(project=project), make_memory(project=project)
    services.memory_flag(memory=flagged, actor=reviewer_actor, reason="x")
    url = reverse("review:memories", args=[project.slug])
    shown = reviewer_client.get(url, {"stale": "yes"}).context["page"].object_list
    assert [m.pk for m in shown] == [flagged.pk]
    page = reviewer_client.get(url).text
    assert "[invalid name]" not in page
    assert "Sort by" in page
    assert other.pk in [m.pk for m in reviewer_client.get(url, {"stale": "no"}).context["page"]]


def test_the_global_queue_shows_global_memories_only(reviewer_client, project, make_memory):
    from tests.factories import MemoryFactory

    proposal = MemoryFactory(project=None, scope="global", content="Use UTC everywhere.")
    mine = make_memory(project=project, content="Project rule.")
    page = reviewer_client.get(reverse("review:queue"), {"scope": "global"}).text
    assert "Use UTC everywhere." in page
    assert "Project rule." not in page
    assert f"#memory-{mine.pk}" not in page
    assert proposal.pk


def test_runs_are_filtered_counted_as_runs_and_each_has_a_page(
    reviewer_client, project, make_memory, make_run, system_actor
):
    runs = [make_run(project=project, external_id=f"deploy-{n}") for n in range(5)]
    memory = make_memory(project=project, content="Given memory")
    services.run_give_memories(run=runs[0], ranked=[(memory.pk, 0.8)])
    before = Memory.objects.get(pk=memory.pk).confidence
    services.run_record_outcome(run=runs[0], outcome="failed", actor=system_actor)
    after = Memory.objects.get(pk=memory.pk).confidence
    url = reverse("review:runs", args=[project.slug])
    page = reviewer_client.get(url).text
    assert "5 runs" in page
    assert "5 memories" not in page
    failed = reviewer_client.get(url, {"status": "failed"}).context["page"].object_list
    assert [r.pk for r in failed] == [runs[0].pk]
    found = reviewer_client.get(url, {"q": "deploy-3"}).context["page"].object_list
    assert [r.pk for r in found] == [runs[3].pk]
    run_page = reviewer_client.get(reverse("review:run", args=[project.slug, runs[0].pk])).text
    assert "Given memory" in run_page
    assert "0.800" in run_page  # its score
    assert f"{before:.2f} → {after:.2f}" in run_page  # what the outcome did
    assert "Prompt hash" in run_page


def test_history_names_the_approver(
    reviewer_client, reviewer, project, make_memory, reviewer_actor
):
    memory = make_memory(project=project)
    services.memory_approve(memory=memory, actor=reviewer_actor)
    page = reviewer_client.get(reverse("review:memory", args=[memory.pk])).text
    assert f'<td class="after">{reviewer.username}</td>' in page


def test_the_ranking_page_shows_the_weights_in_force_and_why(reviewer_client, project):
    from assembly.learning import as_dict
    from assembly.models import FitOutcome, RankingFit
    from assembly.packing import Weights

    url = reverse("review:ranking", args=[project.slug])
    page = reviewer_client.get(url).text
    assert "Words of the write scope (folders and file names) in the memory" in page
    assert "No fit yet" in page
    RankingFit.objects.create(
        project=project,
        outcome=FitOutcome.ADOPTED,
        weights_before=as_dict(Weights()),
        weights_after=as_dict(Weights(path=3.0)),
        held_before=0.41,
        held_after=0.47,
        held=10,
        trained=20,
        reason="Adopted: held-back runs 0.410 -> 0.470 nDCG@10 (fitted on 20, checked on 10).",
        actor="system:fit_ranking",
    )
    project.policy.weight_path = 3.0
    project.policy.save()
    page = reviewer_client.get(url).text
    assert "In force since the fit of" in page
    assert "0.410 &rarr; 0.470" in page
    assert "<code>path</code> 1.50 &rarr; 3.00" in page
    assert ">3.00<" in page
