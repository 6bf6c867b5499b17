"""A campaign's runs as CSV: one row per benchmark run, matching the API; on a share link,
masked as the rest of the shared story; a cell a spreadsheet would run as a formula is
written as text."""

import csv
import io

import httpx

from tests.helpers import attempt_of, make_attempt, make_campaign


def rows_of(answer: httpx.Response) -> list[dict[str, str]]:
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "text/csv; charset=utf-8"
    return list(csv.DictReader(io.StringIO(answer.text)))


def test_runs_recorded_without_the_runner_are_a_row_each_and_match_the_api(
    api: httpx.Client,
) -> None:
    campaign = make_campaign(api, name="EAGLE-3", baseline=89.5)
    measured = make_attempt(api, campaign["id"], title="CUDA 13 upgrade")
    for value in (92.4, 92.8, 92.6):
        api.post(f"/api/attempts/{measured['id']}/measurements", json={"value": value})
    api.patch(f"/api/attempts/{measured['id']}", json={"verdict": "the pivot"})
    make_attempt(api, campaign["id"], title="not measured yet")
    answer = api.get(f"/api/campaigns/{campaign['id']}/runs.csv")
    assert "campaign-" in answer.headers["content-disposition"]
    rows = rows_of(answer)
    attempt = attempt_of(api, measured["id"])
    assert [float(r["value"]) for r in rows] == attempt["metric"]["samples"]
    said = {(r["attempt_id"], r["title"], r["status"], r["verdict"], r["metric"]) for r in rows}
    assert said == {
        (str(measured["id"]), "CUDA 13 upgrade", attempt["status"], "the pivot", "tok/s")
    }
    assert [r["run"] for r in rows] == ["1", "2", "3"] and {r["counted"] for r in rows} == {"yes"}
    assert all(r["started"] for r in rows) and {r["campaign"] for r in rows} == {"EAGLE-3"}


def test_a_cell_a_spreadsheet_would_run_is_written_as_text(api: httpx.Client) -> None:
    campaign = make_campaign(api, name='=HYPERLINK("http://evil","x")')
    attempt = make_attempt(api, campaign["id"], title="@SUM(A1:A9)")
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 1.5})
    api.patch(f"/api/attempts/{attempt['id']}", json={"verdict": "-2+3 faster, =cmd|' /C calc'!A0"})
    (row,) = rows_of(api.get(f"/api/campaigns/{campaign['id']}/runs.csv"))
    assert row["campaign"] == '\'=HYPERLINK("http://evil","x")'
    assert row["title"] == "'@SUM(A1:A9)"
    assert row["verdict"].startswith("'-2+3")
    assert row["value"] == "1.5"  # a number stays a number


def test_the_share_links_csv_is_masked_like_its_page_and_gone_with_it(
    api: httpx.Client, anonymous: httpx.Client
) -> None:
    campaign = make_campaign(api, name="on root@10.1.230.174")
    attempt = make_attempt(api, campaign["id"], title="graphs on root@10.1.230.174")
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 89.5})
    link = api.post(f"/api/campaigns/{campaign['id']}/shares").json()
    (row,) = rows_of(anonymous.get(f"/s/{link['token']}.csv"))
    assert "10.1.230.174" not in anonymous.get(f"/s/{link['token']}.csv").text
    shared = anonymous.get(f"/s/{link['token']}.json").json()
    assert row["title"] == shared["attempts"][0]["title"] and row["value"] == "89.5"
    assert api.delete(f"/api/shares/{link['token']}").status_code == 204
    assert anonymous.get(f"/s/{link['token']}.csv").status_code == 404
    assert anonymous.get(f"/api/campaigns/{campaign['id']}/runs.csv").status_code == 401
