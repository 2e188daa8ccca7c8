"""`qadi serve --workers 2` as an operator runs it: /metrics adds up both workers' counters
(issue 31.5), and an idle keep-alive connection outlives common client-pool idle times
(issue 31.6: uvicorn's own default closed it after 5 s, under pools that reuse it)."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import yaml
from prometheus_client.mmap_dict import MmapedDict

from service.db.engine import upgrade
from tests.conftest import ROOT, free_port, judges_config_data, wait_for_http

BODY = {
    "kind": "rubric",
    "response": "شكو يعني شنو اكو",
    "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
    "rubric_id": "iraqi-linguistic-shaku-maku",
}


@pytest.fixture(scope="module")
def two_workers(llm_server_process, tmp_path_factory):
    folder = tmp_path_factory.mktemp("workers")
    url = f"sqlite:///{folder / 'qadi.db'}"
    upgrade(url)
    config = folder / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server_process)))
    port = free_port()
    env = {**os.environ, "QADI_DATABASE_URL": url, "QADI_JUDGES_CONFIG": str(config),
           "QADI_AUTH": "off"}
    (folder / "metrics").mkdir()
    env["PROMETHEUS_MULTIPROC_DIR"] = str(folder / "metrics")  # to see each worker's files
    process = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--port", str(port), "--workers", "2"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(folder / "service.log").open("w"),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{base}/healthz", timeout=180, process=process)
        yield base, port, folder / "metrics"
    finally:
        process.terminate()
        process.wait(timeout=30)


def counter(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus text, 0 when absent."""
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    match = re.search(rf"^{name}\{{{re.escape(wanted)}\}} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def served_by_worker(folder: Path, route: str) -> dict[str, float]:
    """Requests to `route` each worker counted, by process id, read from the worker's own
    multiprocess file (counter_<pid>.db), not through the sum /metrics answers with."""
    served = {}
    for path in folder.glob("counter_*.db"):
        total = 0.0
        for key, value, *_ in MmapedDict.read_all_values_from_file(str(path)):
            _metric, sample, labels, _help = json.loads(key)
            if sample == "qadi_http_requests_total" and labels.get("route") == route:
                total += value
        served[path.stem.removeprefix("counter_")] = total
    return served


def test_metrics_add_up_every_workers_counters(two_workers, llm_server_process):
    base, _, folder = two_workers
    llm_server_process.reset()

    def fresh(method: str, path: str, **kwargs) -> httpx.Response:
        # a new connection each time, so the kernel spreads them over both workers
        with httpx.Client(base_url=base, timeout=30) as client:
            return client.request(method, path, **kwargs)

    health_before = counter(fresh("GET", "/metrics").text, "qadi_http_requests_total",
                            method="GET", route="/healthz", status="200")
    sent = 0
    with ThreadPoolExecutor(8) as pool:  # concurrent: an idle worker takes what a busy one can't
        while sent < 400:  # rounds until both workers have served (a sum of one proves nothing)
            answers = list(pool.map(lambda _: fresh("GET", "/healthz").status_code, range(40)))
            assert answers == [200] * 40
            sent += 40
            if sum(n > 0 for n in served_by_worker(folder, "/healthz").values()) == 2:
                break
    served = served_by_worker(folder, "/healthz")
    assert len(served) == 2 and all(n > 0 for n in served.values()), served
    for i in range(10):
        assert fresh("POST", "/judge", json={**BODY, "response": f"r{i}"}).status_code == 200
    scrapes = [fresh("GET", "/metrics").text for _ in range(8)]
    for text in scrapes:
        health = counter(text, "qadi_http_requests_total", method="GET", route="/healthz",
                         status="200")
        assert health - health_before == sent
        assert counter(text, "qadi_judge_calls_total", judge="gpt-judge", project="default",
                       status="ok") == 10
        assert counter(text, "qadi_judge_tokens_total", judge="gpt-judge", kind="prompt",
                       project="default") == 1000
    assert llm_server_process.calls() == 10


def test_an_idle_keep_alive_connection_stays_open_past_five_seconds(two_workers):
    _, port, _ = two_workers
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/healthz")
        assert connection.getresponse().read() == b'{"status":"ok"}'
        opened = connection.sock
        time.sleep(6.5)  # past uvicorn's default keep-alive of 5 s
        connection.request("GET", "/healthz")  # raises RemoteDisconnected once it is closed
        assert connection.getresponse().read() == b'{"status":"ok"}'
        assert connection.sock is opened  # the same connection, not a new one
    finally:
        connection.close()
