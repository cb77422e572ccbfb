from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.test import RequestFactory

from knowledge.models import MemoryPair
from memories.models import Memory, MemoryType, ReviewStatus, Run, Source, Tier

pytestmark = pytest.mark.django_db


def seed(*args: str) -> str:
    out = StringIO()
    call_command("seed_demo", *args, stdout=out)
    return out.getvalue()


def test_seed_demo_covers_every_kind_of_memory(settings):
    settings.DEBUG = True  # on a development machine the published login works
    output = seed()
    memories = Memory.objects.filter(project__slug="demo")
    assert memories.count() >= 60
    for field, choices in [
        ("type", MemoryType),
        ("source", Source),
        ("review_status", ReviewStatus),
        ("tier", Tier),
    ]:
        assert set(memories.values_list(field, flat=True)) == set(choices.values), field
    assert memories.filter(pinned=True).exists()
    assert Run.objects.filter(project__slug="demo").exclude(status="running").count() >= 3
    assert memories.filter(confidence__lt=0.5).exists()
    assert Memory.objects.filter(scope="global", active=True).exists()
    assert Memory.objects.filter(scope="global", review_status="pending").exists()
    # Reviewers find a repeat and a possible conflict, one of them an agent's proposal.
    pairs = MemoryPair.objects.filter(project__slug="demo", status="open")
    assert {"repeat", "conflict"} <= set(pairs.values_list("kind", flat=True))
    assert any("supersede" in pair.evidence for pair in pairs)
    assert (
        f"Reviewer login: username {settings.DEMO_USERNAME} password {settings.DEMO_PASSWORD}"
        in output.strip().splitlines()
    )
    user = authenticate(
        RequestFactory().post("/accounts/login/"),
        username=settings.DEMO_USERNAME,
        password=settings.DEMO_PASSWORD,
    )
    assert user is not None
    assert user.is_staff
    assert user.has_perm("memories.review_memory")
    assert user.has_perm("memories.view_memory")


def test_seed_demo_is_safe_to_run_again_and_can_reset():
    seed()
    count = Memory.objects.count()
    assert "already present" in seed()
    assert Memory.objects.count() == count
    seed("--reset")
    assert Memory.objects.filter(project__slug="demo").count() == 62


@pytest.mark.parametrize("debug", [False, True])
def test_serve_collects_the_static_files_first_when_debug_is_off(settings, tmp_path, debug):
    """`make run` (serve) with DEBUG=false: WhiteNoise serves STATIC_ROOT only, so serve fills
    it before it starts anything (tests/browser/test_production.py serves such a folder)."""
    from ops.management.commands.serve import Command

    settings.DEBUG = debug
    settings.STATIC_ROOT = tmp_path / "static"
    Command(stdout=StringIO()).collect_static_files()
    assert (tmp_path / "static" / "review" / "review.css").exists() is not debug
