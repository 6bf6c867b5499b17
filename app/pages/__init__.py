"""The pages between the engines and the browser, one module per page (its context, its live
partials, its cursor), and the registry that the live streams and the routes look pages up in.
Page modules import app.pages.live, never this package's names: the registry needs them."""

from app.pages import attempt, campaign, share
from app.pages.live import PageEntry

PAGES: dict[str, PageEntry] = {
    page.name: page for page in (campaign.ENTRY, attempt.ENTRY, share.ENTRY)
}
