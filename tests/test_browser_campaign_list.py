"""The campaign list in Debian's Chromium: live, as the campaign page is, so an engineer (or
the demo) watching it sees attempts arrive without reloading."""

import httpx
import pytest

from tests.helpers import UI_WAIT_MS, make_attempt, make_campaign

pytestmark = pytest.mark.browser


def test_the_campaign_list_counts_attempts_live(
    api: httpx.Client,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    eagle = make_campaign(api, name="EAGLE-3 on PCIe")
    other = make_campaign(api, name="Kimi on H200", baseline=140.0)
    make_attempt(api, eagle["id"], title="Baseline")
    page = open_page("/")
    page.wait_for_selector("#live-status.on", timeout=UI_WAIT_MS)
    page.evaluate("window.__marker = 'no reload'")
    row = page.locator("#campaign-list li", has_text="EAGLE-3 on PCIe")
    assert "1 attempt ·" in row.inner_text()

    make_attempt(api, eagle["id"], title="Torch symmetric memory")
    make_attempt(api, eagle["id"], title="NCCL Tree")
    page.locator("#campaign-list li", has_text="3 attempts").wait_for(timeout=UI_WAIT_MS)
    # Another campaign's attempt reaches its own row; a campaign made elsewhere appears.
    make_attempt(api, other["id"], title="FP8 KV cache")
    kimi = page.locator("#campaign-list li", has_text="Kimi on H200")
    kimi.filter(has_text="1 attempt ·").wait_for(timeout=UI_WAIT_MS)
    make_campaign(api, name="Llama on MI300X")
    page.locator("#campaign-list li", has_text="Llama on MI300X").wait_for(timeout=UI_WAIT_MS)
    # A changed baseline too.
    assert api.patch(f"/api/campaigns/{eagle['id']}", json={"baseline": 89.5}).status_code == 200
    row.filter(has_text="baseline 89.5").wait_for(timeout=UI_WAIT_MS)
    assert page.evaluate("window.__marker") == "no reload"
    assert "3 attempts" in row.inner_text()
