"""A stopped dashboard is gone: nothing outside it keeps its app (and with it the engine,
templates and caches) alive."""

import gc
import weakref

from app.config import Settings
from tests.conftest import LiveServer, owner_client
from tests.helpers import make_campaign


def test_a_stopped_app_is_freed(settings: Settings) -> None:
    # FastAPI keeps what it learns of each endpoint in module-level caches: an endpoint
    # closing over its app kept every app a process ever made. In the test process that
    # was a heap whose full collections paused a live server for 4 s.
    live = LiveServer(settings).start()
    try:
        with owner_client(live.url) as client:
            assert client.get("/docs").status_code == 200
            campaign = make_campaign(client)
            assert client.get(f"/campaigns/{campaign['id']}").status_code == 200
    finally:
        live.stop()
    app = weakref.ref(live.app)
    del live
    gc.collect()
    assert app() is None, [type(holder).__qualname__ for holder in gc.get_referrers(app())]
