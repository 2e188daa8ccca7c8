"""Issue 16 item 3: a person opens a report in a browser through a short-lived signed link,
while every API route still wants its key."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from calibration.calibrate import CalibrationOptions
from service.api.links import LinkRefused, sign, verify
from service.app import create_app
from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.reporting.calibration import build_report
from service.settings import Settings
from service.stores.calibration import store_report
from service.stores.keys import create_key
from tests.unit.test_calibration_render import two_judges


def stored_report(url: str) -> tuple[str, str]:
    options = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=20)
    rendered = build_report(two_judges(10), options, {"source": "links.csv"})
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        key = create_key(session, "lead", ["grades"])
        return store_report(session, "default", "adhoc", "", rendered).id, key


def test_signed_link_opens_one_report_without_a_key_until_it_expires(migrated_db):
    report_id, key = stored_report(migrated_db)
    settings = Settings(database_url=migrated_db, report_link_secret="s3cret-for-tests")
    client = TestClient(create_app(settings))
    assert client.get(f"/calibration/reports/{report_id}.html").status_code == 401  # unchanged
    assert client.post(f"/calibration/reports/{report_id}/links").status_code == 401
    auth = {"Authorization": f"Bearer {key}"}
    minted = client.post(f"/calibration/reports/{report_id}/links", headers=auth, json={})
    assert minted.status_code == 201, minted.text
    url = minted.json()["url"]
    query = parse_qs(urlsplit(url).query)
    assert urlsplit(url).path == f"/calibration/reports/{report_id}/view"
    opened = client.get(url)  # no key: a browser following the link
    assert opened.status_code == 200 and opened.headers["content-type"].startswith("text/html")
    assert "<table class='trust'>" in opened.text
    assert opened.headers["referrer-policy"] == "no-referrer"
    signature = query["signature"][0]
    altered = client.get(
        f"/calibration/reports/{report_id}/view",
        params={"expires": int(query["expires"][0]) + 3600, "signature": signature},
    )
    assert altered.status_code == 403
    assert altered.json()["detail"][0]["loc"] == ["query", "signature"]
    other_id, _ = stored_report(migrated_db)
    elsewhere = client.get(
        f"/calibration/reports/{other_id}/view",
        params={"expires": query["expires"][0], "signature": signature},
    )
    assert elsewhere.status_code == 403  # a link opens the report it was signed for only
    past = sign(b"s3cret-for-tests", report_id, 60, now=1_000_000)  # expired in 1970
    expired = client.get(
        f"/calibration/reports/{report_id}/view",
        params={"expires": past.expires, "signature": past.signature},
    )
    assert expired.status_code == 403
    assert expired.json()["detail"][0]["loc"] == ["query", "expires"]
    markdown = client.post(
        f"/calibration/reports/{report_id}/links", headers=auth, json={"format": "md"}
    ).json()["url"]
    assert client.get(markdown).text.startswith("# Calibration report")
    too_short = client.post(
        f"/calibration/reports/{report_id}/links", headers=auth, json={"ttl_seconds": 5}
    )
    assert too_short.status_code == 422
    missing = client.post("/calibration/reports/nope/links", headers=auth, json={})
    assert missing.status_code == 404


def test_signature_is_hmac_sha256_of_report_and_expiry():
    """Checked against an HMAC-SHA256 computed here with the standard library directly."""
    import hashlib
    import hmac

    link = sign(b"k", "r1", 100, now=1000)
    assert link.expires == 1100
    expected = hmac.new(b"k", b"calibration-report:r1:1100", hashlib.sha256).hexdigest()
    assert link.signature == expected
    verify(b"k", "r1", 1100, expected, now=1099)  # still valid one second before expiry
    with pytest.raises(LinkRefused) as refused:  # compared as bytes: any text is refused
        verify(b"k", "r1", 1100, "\x80" * 64, now=1099)
    assert refused.value.field == "signature"


def test_without_a_configured_secret_every_process_on_the_database_shares_one(migrated_db):
    # the key is drawn once and kept in the database, so a link minted by one worker or
    # replica opens on every other (a per-process key failed on 3 of 4 workers)
    from service.db.schema import ServiceSecretRow

    report_id, key = stored_report(migrated_db)
    settings = Settings(database_url=migrated_db)
    minting, viewing = TestClient(create_app(settings)), TestClient(create_app(settings))
    auth = {"Authorization": f"Bearer {key}"}
    url = minting.post(f"/calibration/reports/{report_id}/links", headers=auth, json={})
    query = parse_qs(urlsplit(url.json()["url"]).query)
    with session_scope(make_sessionmaker(make_engine(migrated_db))) as session:
        [stored] = session.query(ServiceSecretRow).all()
    assert stored.name == "report-links" and len(stored.value) == 64
    verify(stored.value.encode(), report_id, int(query["expires"][0]), query["signature"][0])
    opened = viewing.get(url.json()["url"])
    assert opened.status_code == 200, opened.text
    assert "<table class='trust'>" in opened.text
