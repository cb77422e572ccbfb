"""Every review page at 1400 and 390 px wide: axe-core finds no serious or critical
violation, and nothing scrolls sideways on a phone. A screenshot of each page and width
is left in var/screenshots/ (named page-WIDTH.png)."""

from __future__ import annotations

from importlib import resources

import pytest

from knowledge.models import Entity, MemoryPair
from memories import services
from memories.models import Memory
from memories.services import bulk
from people import preferences
from tests.browser.conftest import SCREENSHOTS

pytestmark = pytest.mark.django_db(transaction=True)

# Evaluated, not added as a script tag: the pages' Content-Security-Policy refuses inline
# scripts (as it should).
AXE = resources.files("axe_playwright_python").joinpath("axe.min.js").read_text()
WIDTHS = [1400, 390]


@pytest.fixture
def world(project, make_memory, make_run, reviewer_actor, system_actor):
    memories = [
        make_memory(project=project, content=f"Rule {n}: run the full suite for src/core/.",
                    tags=["src/core/**"])
        for n in range(4)
    ]  # fmt: skip
    make_memory(project=project, content="Ledger calls time out after 10 seconds.")
    make_memory(project=project, content="Ledger calls time out after 30 seconds.")
    services.memory_approve(memory=memories[0], actor=reviewer_actor)
    run = make_run(project=project, external_id="run-a11y", task_title="Check the pages")
    services.run_give_memories(run=run, ranked=[(m.pk, 0.7) for m in memories[:2]])
    services.run_record_outcome(run=run, outcome="succeeded", actor=system_actor)
    preferences.set_preference(
        project=project, user_ref="ana@example.com", key="answer.length",
        value={"max_sentences": 3, "lists": True}, category="style", actor=system_actor,
    )  # fmt: skip
    preferences.propose_global(
        user_ref="ana@example.com", key="language", value="de", actor=system_actor,
        proposed_in=project,
    )  # fmt: skip
    # A bulk edit, done (its page offers the undo).
    job = bulk.bulk_edit_start(
        memories=Memory.objects.filter(project=project, content__startswith="Rule"),
        action="pin",
        actor=reviewer_actor,
        enqueue=False,
    )
    bulk.bulk_edit_run(job_id=job.pk)
    return {
        "memory": memories[0],
        "run": run,
        "pair": MemoryPair.objects.filter(project=project).first(),
        "job": job,
    }


def pages(project, world):
    slug = project.slug
    found = {
        "dashboard": "/review/",
        "queue": f"/review/projects/{slug}/queue/",
        "queue-every-project": "/review/queue/",
        "memories": f"/review/projects/{slug}/memories/",
        "memory": f"/review/memories/{world['memory'].pk}/",
        "preview": f"/review/projects/{slug}/preview/?intent=core&write_scope=src/core/a.py"
        "&token_budget=60",
        "runs": f"/review/projects/{slug}/runs/",
        "run": f"/review/projects/{slug}/runs/{world['run'].pk}/",
        "conflicts": f"/review/projects/{slug}/conflicts/",
        "preferences": f"/review/projects/{slug}/preferences/",
        "preferences-every-project": "/review/preferences/",
        "bulk-edit": f"/review/projects/{slug}/memories/bulk-edit/?type=pattern",
        "bulk-job": f"/review/jobs/{world['job'].pk}/",
    }
    named = Entity.objects.get(project=project, key="src/core")  # the memories' tag glob
    found["entity"] = f"/review/entities/{named.pk}/"
    if world["pair"] is not None:
        found["conflict"] = f"/review/conflicts/{world['pair'].pk}/"
    return found


@pytest.mark.parametrize("width", WIDTHS)
def test_every_review_page_passes_axe_and_fits(page, project, world, width):
    page.set_viewport_size({"width": width, "height": 900})
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems = []
    for name, url in pages(project, world).items():
        page.goto(url)
        page.evaluate(AXE)
        result = page.evaluate("async () => await axe.run(document)")
        for violation in result["violations"]:
            if violation["impact"] in ("serious", "critical"):
                targets = [node["target"] for node in violation["nodes"][:3]]
                problems.append(f"{name} at {width}px: {violation['id']} {targets}")
        if width <= 390:
            scroll = page.evaluate("document.documentElement.scrollWidth")
            if scroll > width:
                problems.append(f"{name} at {width}px scrolls sideways ({scroll}px)")
        page.screenshot(path=str(SCREENSHOTS / f"{name}-{width}.png"), full_page=True)
    assert not problems, "\n".join(problems)
