"""POST /calibration/reports is computed in a report worker process, off the process that
serves requests (issue 39), on SQLite and PostgreSQL: the report is the one the in-thread
path (QADI_REPORT_WORKERS=0) gives, its refusals cross back as the same 422s, and while a
report of seconds computes, the serving process spends next to no CPU on it and answers
/healthz at once. The database is tests/perf/judgment_db.py's, built through SQL."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import httpx

from tests.conftest import ROOT, free_port
from tests.integration.test_service_api import Service
from tests.perf.judgment_db import populate
from tests.perf.load_judge import Service as ServiceProcess

REPORT = {"rubric": "kinayat-explanation", "by": ["candidate_model"], "bootstrap": 200,
          "seed": 0}  # fmt: skip
# computed in the serving process (QADI_REPORT_WORKERS=0), the slowest /healthz during the
# report took 423-643 ms here, and the process spent the report's whole time on the CPU
HEALTHZ_LIMIT_MS = 400.0
CPU_SHARE_LIMIT = 0.3  # of the report's wall time; its /healthz answers take about 0.1


def report_in(url: str, workers: int, body: dict) -> httpx.Response:
    return Service(url, None, report_workers=workers).post(
        "/calibration/reports", scope="grades", json=body
    )


def test_a_report_from_a_worker_process_is_the_one_computed_in_a_thread(db_url):
    populate(db_url, 3000)
    found = {}
    for workers in (0, 1):
        response = report_in(db_url, workers, REPORT)
        assert response.status_code == 201, response.text
        found[workers] = {k: v for k, v in response.json().items() if k not in ("id", "created_at")}
    assert found[1]["judges"] and found[1]["n_items"] > 900
    assert found[1] == found[0]


def test_a_refusal_raised_in_the_worker_is_the_same_422(db_url):
    """CalibrationInputError(field, problems) does not unpickle by itself: were it not
    carried, the pool would take it for a dead worker and answer 503."""
    populate(db_url, 300)
    nobody = report_in(db_url, 1, {**REPORT, "judges": ["judge-good", "nobody"]})
    assert nobody.status_code == 422, nobody.text
    assert nobody.json()["detail"] == [
        {"loc": ["body", "judges"], "msg": "no usable grade by ['nobody'] in this selection",
         "type": "value_error"}
    ]  # fmt: skip
    too_narrow = report_in(db_url, 1, {**REPORT, "scale_min": 1, "scale_max": 2})
    assert too_narrow.status_code == 422, too_narrow.text
    [problem, *_] = too_narrow.json()["detail"]
    assert problem["loc"] == ["body", "rubric"] and "outside" in problem["msg"], problem


def test_the_service_answers_at_once_while_a_report_computes(db_url, tmp_path):
    populate(db_url, 30_000)
    service = ServiceProcess(db_url, ROOT / "service/sample/judges.yaml", free_port(),
                             tmp_path, {"QADI_REPORT_WORKERS": "1"})  # fmt: skip
    service.start()
    try:
        base = f"http://127.0.0.1:{service.port}"
        during = healthz_during_report(base, service.process.pid)
    finally:
        service.stop()
    latencies, seconds, cpu = during
    assert seconds > 1 and len(latencies) > 20, (seconds, len(latencies))  # a window to watch
    assert cpu < CPU_SHARE_LIMIT * seconds, f"the service computed {cpu:.1f} s of {seconds:.1f} s"
    slowest = 1000 * max(latencies)
    assert slowest < HEALTHZ_LIMIT_MS, f"/healthz took {slowest:.0f} ms during the report"


def healthz_during_report(base: str, serving: int) -> tuple[list[float], float, float]:
    """/healthz every 20 ms while one report computes: its latencies, the report's time,
    and the CPU seconds the serving process (not its children) spent meanwhile."""
    with httpx.Client(base_url=base, timeout=600) as client:
        empty = client.post("/calibration/reports", json={**REPORT, "since": "2100-01-01"})
        assert empty.status_code == 422, empty.text  # the worker started, nothing computed
        timed: dict[str, float] = {}
        report = threading.Thread(target=timed_report, args=(base, timed))
        before = cpu_seconds(serving)
        report.start()
        latencies = []
        while report.is_alive():
            began = time.perf_counter()
            assert client.get("/healthz").status_code == 200
            latencies.append(time.perf_counter() - began)
            time.sleep(0.02)
        report.join()
    assert timed["status"] == 201
    return latencies, timed["seconds"], cpu_seconds(serving) - before


def cpu_seconds(pid: int) -> float:
    """The process's own user and system CPU (Linux /proc; its children not counted)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_report(base: str, timed: dict[str, float]) -> None:
    began = time.perf_counter()
    # 2000 resamples: long enough (seconds) to watch /healthz through, on a fast machine too
    response = httpx.post(f"{base}/calibration/reports", json={**REPORT, "bootstrap": 2000},
                          timeout=600)  # fmt: skip
    timed["status"], timed["seconds"] = response.status_code, time.perf_counter() - began
