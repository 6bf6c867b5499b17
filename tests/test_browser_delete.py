"""Deleting an attempt from its page, in Debian's Chromium: the page's own live stream hears
of the delete too, and must not reload the page that no longer exists."""

import httpx
import pytest

from tests.helpers import UI_WAIT_MS, make_attempt, make_campaign, wait_for

pytestmark = pytest.mark.browser


def test_deleting_an_attempt_lands_on_its_campaign_saying_so(
    api: httpx.Client,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    campaign = make_campaign(api)
    make_attempt(api, campaign["id"], title="Baseline")
    doomed = make_attempt(api, campaign["id"], title="Torch symmetric memory")
    page = open_page(f"/attempts/{doomed['id']}")
    page.wait_for_selector("#live-status.on", timeout=UI_WAIT_MS)
    # Every document the tab loads from here on, with its status: no Not found among them.
    documents: list[tuple[str, int]] = []
    page.on(
        "response",
        lambda r: (
            documents.append((r.url, r.status)) if r.request.resource_type == "document" else None
        ),
    )
    page.locator("summary", has_text="Edit or delete this attempt").click()
    page.get_by_label("Delete this attempt with its log").check()
    page.get_by_role("button", name="Delete attempt").click()

    flash = page.locator("#flash", has_text=f"#{doomed['id']} deleted")
    flash.wait_for(timeout=UI_WAIT_MS)
    assert page.url.split("?")[0].endswith(f"/campaigns/{campaign['id']}")
    assert page.locator(".card", has_text="Baseline").count() == 1
    assert page.locator(".card", has_text="Torch symmetric memory").count() == 0
    # The live stream settles on this page: it stays, no late reload elsewhere.
    page.wait_for_selector("#live-status.on", timeout=UI_WAIT_MS)
    assert "Not found" not in page.content()
    assert documents and all(status < 400 for _, status in documents), documents
    assert all("/attempts/" not in url or url.endswith("/delete") for url, _ in documents)
    assert api.get(f"/api/attempts/{doomed['id']}").status_code == 404

    # A flash is said once: the address no longer asks for it, and a reload is quiet.
    wait_for(lambda: "deleted=" not in page.url, timeout=10, what="the address cleaned")
    page.reload()
    page.wait_for_selector("#live-status.on", timeout=UI_WAIT_MS)
    assert page.locator("#flash").inner_text().strip() == ""


def test_another_viewer_of_a_deleted_attempt_is_taken_to_its_campaign(
    api: httpx.Client,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    campaign = make_campaign(api)
    doomed = make_attempt(api, campaign["id"], title="Torch symmetric memory")
    page = open_page(f"/attempts/{doomed['id']}")
    page.wait_for_selector("#live-status.on", timeout=UI_WAIT_MS)
    assert api.delete(f"/api/attempts/{doomed['id']}").status_code == 204
    page.locator("#flash", has_text=f"#{doomed['id']} deleted").wait_for(timeout=UI_WAIT_MS)
    assert page.url.split("?")[0].endswith(f"/campaigns/{campaign['id']}")
    assert "Not found" not in page.content()
