"""The production recipe in a real browser: ``config/start-web`` as the container runs it
(collectstatic into a temporary STATIC_ROOT, migrate, gunicorn with DEBUG=false). Every
stylesheet and script of the sign-in pages (the review pages' and the admin's) and a review
page answers 200, under a hashed name
with a long cache header; the stylesheet's rules apply; an htmx action works; and the
browser's console shows no error."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from memories.models import ReviewStatus
from tests.support import gunicorn_server

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "production-pages-password"
# A name with the content's hash in it (the manifest storage's): cached for ten years.
HASHED = re.compile(r"/static/.+\.[0-9a-f]{12}\.(css|js)$")
TEN_YEARS = "max-age=315360000"


def _check_assets(page, responses: dict) -> None:
    """Every stylesheet and script the page references was answered 200, hashed and cached."""
    urls = page.eval_on_selector_all(
        "link[rel=stylesheet], script[src]", "elements => elements.map(e => e.href || e.src)"
    )
    assert len(urls) >= 3, urls
    for url in urls:
        response = responses.get(url)
        assert response is not None, f"{url} was not loaded: {responses.get('failed ' + url)}"
        assert response.status == 200, f"{url} answered {response.status}"
        assert HASHED.search(url), url
        cache = response.headers.get("cache-control", "")
        assert TEN_YEARS in cache, (url, cache)
        assert "immutable" in cache, (url, cache)


def test_the_production_server_serves_styles_and_htmx(
    browser, tmp_path, reviewer, project, make_memory
):
    # The server's own password hasher (the tests' fast one is not among its hashers).
    hasher = PBKDF2PasswordHasher()
    reviewer.password = hasher.encode(PASSWORD, hasher.salt())
    reviewer.save(update_fields=["password"])
    memory = make_memory(project=project, content="Run the full suite when src/core/ changes.")

    with gunicorn_server(tmp_path, workers=2, start_script=True) as port:
        context = browser.new_context(base_url=f"http://127.0.0.1:{port}")
        page = context.new_page()
        page.set_default_timeout(10_000)
        problems: list[str] = []
        page.on(
            "console",
            lambda m: m.type == "error" and problems.append(f"{m.text} ({m.location['url']})"),
        )
        page.on("pageerror", lambda error: problems.append(str(error)))
        responses: dict = {}
        page.on("response", lambda response: responses.__setitem__(response.url, response))
        page.on(
            "requestfailed",
            lambda request: responses.__setitem__(f"failed {request.url}", request.failure),
        )

        page.goto("/accounts/login/")
        _check_assets(page, responses)
        # review.css: the top bar is dark (--ink).
        bar = page.eval_on_selector("header.top", "e => getComputedStyle(e).backgroundColor")
        assert bar == "rgb(29, 35, 48)"

        page.goto("/admin/login/")
        _check_assets(page, responses)

        page.goto("/accounts/login/")
        page.fill("#id_username", reviewer.username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url("**/review/")

        page.goto(f"/review/projects/{project.slug}/queue/")
        _check_assets(page, responses)
        page.evaluate("window.__sameDocument = true")
        row = page.locator(f"#memory-{memory.pk}")
        row.get_by_role("button", name="Approve").click()
        row.wait_for(state="detached")
        assert page.evaluate("window.__sameDocument === true"), "htmx did not answer: a reload"
        assert "Approved:" in page.locator("#messages").inner_text()
        context.close()

    memory.refresh_from_db()
    assert memory.review_status == ReviewStatus.APPROVED
    assert problems == []
