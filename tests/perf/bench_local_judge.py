"""The real local judge at full batch: `qadi regrade` at concurrency 1 and 8, and offline.

Against vLLM serving SmolLM2-135M-Instruct (.ci/vllm.sh; QADI_LOCAL_JUDGE_URL, else the script
starts it), grading Kinayat explanations with the service's rubric (kinayat-explanation@3,
json_schema, 10 token alternatives; `--template kinayat-explanation@2` grades with the
figure's order instead, to compare), one SQLite database and one results file for every run:

1. `qadi regrade --concurrency C` for each C (default 1 and 8), each run on its own items, so
   no run is served by qadi's cache or by the full prompts another run left in vLLM's prefix
   cache (the items pair each sample gold explanation with another sample's candidate: the
   same texts, distinct requests; each candidate text ends with a tag of this invocation, so
   an earlier invocation on the same server left none of them in the cache either). One warm-up call first, so the schema's grammar is compiled
   before any run (xgrammar compiles it once per server, ~10 s).
   Per run: calls/s and tokens/s (prompt and generated tokens from vLLM's own counters,
   /metrics, over qadi's wall time), vLLM's prefix-cache hit rate over the run
   (vllm:prefix_cache_hits / vllm:prefix_cache_queries, in tokens; vLLM 0.32's names), the
   most requests vLLM ran at once (vllm:num_requests_running, sampled every 0.2 s) and the
   machine's CPU busy share (/proc/stat, all cores). Then the ratio of the last to the first.
2. Offline: `qadi regrade --batch` writes the requests of another item set, `.ci/vllm.sh
   batch` runs them through vLLM's run_batch (its own engine: the server's model and
   settings), `qadi regrade --ingest` stores them in the same database and results file, and
   the same `qadi regrade` over HTTP then makes no call (vLLM's request counter unchanged).
   Its wall time, the engine's start (from its log) and the requests alone.

`--transport lean|litellm` sets the judge's transport (issue 40; lean is the default of its
`hosted_vllm/` route).

With `--sizes 24,96` (issue 40: the offline runner's crossover), instead: the server is
stopped and started again (timed: the start a regrade pays when no server is running; use a
port of your own, QADI_VLLM_PORT), then for each size, on items of its own, (a) offline: the
wall time of `qadi regrade --batch`, `.ci/vllm.sh batch` and `qadi regrade --ingest`, each
process timed from outside; (b) `qadi regrade --concurrency C` (the first level) to the
running server, the process timed from outside; (c) (b) plus the server's start. A line
through the two sizes gives each path's fixed cost and cost per call, and the size from which
(a) is faster than (b) and than (c).

Run: eval "$(bash .ci/vllm.sh start)"; .venv/bin/python tests/perf/bench_local_judge.py
     [--items 24] [--concurrency 1,8] [--no-batch] [--template REF] [--transport lean|litellm]
     [--sizes 24,96]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from service import local_judge  # noqa: E402

SAMPLE = ROOT / "service" / "sample" / "explanations.jsonl"
RUBRIC = "kinayat-explanation"
JUDGE = "smol"
COUNTERS = {
    "queries": "vllm:prefix_cache_queries_total",
    "hits": "vllm:prefix_cache_hits_total",
    "prompt": "vllm:prompt_tokens_total",
    "generated": "vllm:generation_tokens_total",
    "requests": "vllm:request_success_total",
}
_SAMPLE_LINE = re.compile(r"^([a-z_:]+)(?:\{[^}]*\})? ([0-9.eE+-]+)$")


def metrics(url: str) -> dict[str, float]:
    """vLLM's Prometheus counters and gauges, summed over their labels."""
    text = httpx.get(url.removesuffix("/v1") + "/metrics", timeout=10).text
    found: dict[str, float] = {}
    for line in text.splitlines():
        match = _SAMPLE_LINE.match(line)
        if match:
            found[match[1]] = found.get(match[1], 0.0) + float(match[2])
    return found


def counters(url: str) -> dict[str, float]:
    now = metrics(url)
    return {name: now.get(metric, 0.0) for name, metric in COUNTERS.items()}


class Sampler(threading.Thread):
    """The most requests vLLM runs at once, and the machine's CPU busy share, over a run."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.running, self.stop = url, 0.0, threading.Event()
        self.cpu_start = cpu_times()

    def run(self) -> None:
        while not self.stop.wait(0.2):
            try:
                self.running = max(self.running, metrics(self.url)["vllm:num_requests_running"])
            except (httpx.HTTPError, KeyError):
                continue

    def finish(self) -> tuple[float, float]:
        self.stop.set()
        self.join()
        busy, total = (b - a for a, b in zip(self.cpu_start, cpu_times(), strict=True))
        return self.running, busy / total if total else 0.0


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of all cores since boot."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


# tags every candidate text of this invocation: a server that graded the same pairs in an
# earlier invocation holds their whole prompts in its prefix cache
NONCE = f"{time.time_ns() & 0xFFFFFFFF:08x}"


def items(offsets: range, count: int) -> list[dict]:
    """`count` requests pairing sample gold i with sample candidate i + offset (tagged with
    this invocation's NONCE after the text)."""
    sample = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    found = []
    for offset in offsets:
        for i, gold in enumerate(sample):
            other = sample[(i + offset) % len(sample)]
            found.append(
                {
                    "item_id": f"{gold['item_id']}~{other['item_id']}",
                    "prompt": gold["prompt"],
                    "reference": gold["reference"],
                    "response": f"{other['response']} [{NONCE}]",
                    "candidate_model": other["candidate_model"],
                }
            )
    return found[:count]


@dataclass
class Workdir:
    folder: Path
    env: dict[str, str]
    rubric: str = RUBRIC

    def answers(self, name: str, rows: list[dict]) -> Path:
        path = self.folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
        return path

    def regrade(self, answers: Path, *extra: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "service", "regrade", str(answers), "--rubric", self.rubric,
             "--judges", JUDGE, *extra],
            cwd=ROOT, env=self.env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode not in (0, 1):
            sys.exit(f"qadi regrade failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout


def table_value(printed: str, row: str) -> str:
    """One cell of `qadi regrade`'s summary table."""
    match = re.search(rf"{re.escape(row)}\s*│\s*([^│]+?)\s*│", printed)
    if match is None:
        sys.exit(f"no '{row}' in qadi regrade's output:\n{printed}")
    return match[1]


def http_run(work: Workdir, url: str, rows: list[dict], concurrency: int) -> float:
    """One `qadi regrade` run; prints its figures and returns its calls/s."""
    answers = work.answers(f"c{concurrency}", rows)
    before, sampler = counters(url), Sampler(url)
    sampler.start()
    printed = work.regrade(
        answers, "--concurrency", str(concurrency), "--out", str(work.folder / "results.jsonl")
    )
    most, cpu = sampler.finish()
    after = counters(url)
    delta = {k: after[k] - before[k] for k in after}
    wall = float(table_value(printed, "wall time").removesuffix(" s"))
    calls = int(delta["requests"])
    tokens = delta["prompt"] + delta["generated"]
    hit = delta["hits"] / delta["queries"] if delta["queries"] else 0.0
    print(
        f"C={concurrency}: {calls} calls in {wall:.1f} s: {calls / wall:.2f} calls/s, "
        f"{tokens / wall:.0f} tokens/s ({delta['prompt'] / wall:.0f} prompt, "
        f"{delta['generated'] / wall:.1f} generated); prefix cache {hit:.1%} of "
        f"{delta['queries']:.0f} prompt tokens hit; at most {most:.0f} running at once; "
        f"CPU busy {cpu:.0%} of {os.cpu_count()} cores; "
        f"ok {table_value(printed, 'graded (new calls ok)')}, "
        f"parse errors {table_value(printed, 'parse errors')}"
    )
    return calls / wall


async def send(url: str, bodies: list[dict], concurrency: int) -> float:
    """Seconds to send `bodies` straight to vLLM, `concurrency` in flight."""
    import asyncio

    slots = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:

        async def one(body: dict) -> None:
            async with slots:
                (await client.post("/chat/completions", json=body)).raise_for_status()

        started = time.perf_counter()
        await asyncio.gather(*(one(body) for body in bodies))
        return time.perf_counter() - started


def bare_run(work: Workdir, url: str, rows: list[dict], concurrency: int, prefill: bool) -> float:
    """qadi's own request bodies (`--batch`) sent to vLLM without qadi; with `prefill`, cut to
    one generated token with no schema and no logprobs: the prompt's prefill alone."""
    import asyncio

    requests = work.folder / f"bare-{concurrency}-{prefill}.jsonl"
    work.regrade(work.answers(requests.stem, rows), "--batch", str(requests))
    bodies = [json.loads(line)["body"] for line in requests.read_text().splitlines()]
    if prefill:
        bodies = [
            {k: v for k, v in b.items() if k not in ("response_format", "logprobs", "top_logprobs")}
            | {"max_tokens": 1}
            for b in bodies
        ]
    rate = len(bodies) / asyncio.run(send(url, bodies, concurrency))
    what = "prefill only (1 token, no schema, no logprobs)" if prefill else "as qadi sends them"
    print(f"  straight to vLLM, C={concurrency}, {what}: {rate:.2f} calls/s")
    return rate


_LOG_TIME = re.compile(r"(\d\d-\d\d \d\d:\d\d:\d\d) \[run_batch\.py:\d+\] (Reading batch|Writing)")


def requests_seconds(results: Path) -> float:
    """Seconds run_batch spent on the requests, after its engine's start (its log's stamps,
    whole seconds)."""
    stamps = {kind: stamp for stamp, kind in _LOG_TIME.findall(Path(f"{results}.log").read_text())}
    parse = lambda s: datetime.strptime(s, "%m-%d %H:%M:%S")  # noqa: E731
    return (parse(stamps["Writing"]) - parse(stamps["Reading batch"])).total_seconds()


def batch_run(work: Workdir, url: str, rows: list[dict], http_rate: float) -> None:
    """Offline grading of `rows` through vLLM's run_batch, ingested, then a rerun over HTTP."""
    answers = work.answers("offline", rows)
    requests, results = work.folder / "requests.jsonl", work.folder / "batch-results.jsonl"
    work.regrade(answers, "--batch", str(requests))
    started = time.perf_counter()
    local_judge.run_batch(requests, results)
    wall = time.perf_counter() - started
    busy = requests_seconds(results)
    lines = [json.loads(line) for line in results.read_text().splitlines() if line]
    ok = sum(line["response"]["status_code"] == 200 for line in lines)
    print(
        f"offline (run_batch): {len(lines)} calls ({ok} HTTP 200) in {wall:.1f} s in all: "
        f"{len(lines) / wall:.2f} calls/s; the engine's start {wall - busy:.0f} s, the "
        f"requests {busy:.0f} s (log stamps, whole seconds): {len(lines) / max(busy, 1):.2f} "
        f"calls/s, {len(lines) / max(busy, 1) / http_rate:.2f}x HTTP at the last concurrency"
    )
    out = str(work.folder / "results.jsonl")
    ingested = work.regrade(answers, "--ingest", str(results), "--out", out)
    stored = table_value(ingested, "graded (new calls ok)")
    before = counters(url)["requests"]
    again = work.regrade(answers, "--concurrency", "8", "--out", out)
    made = counters(url)["requests"] - before
    print(
        f"--ingest stored {stored}; the same regrade over HTTP then: "
        f"{table_value(again, 'already stored (not called)')} already stored, "
        f"{table_value(again, 'graded (new calls ok)')} new, vLLM requests {made:.0f}"
    )


def rubric_with(template: str, folder: Path) -> str:
    """A copy of the service's rubric under its own id, graded with `template`."""
    from rubrics import library_rubric

    rubric = library_rubric(RUBRIC).model_copy(
        update={"id": f"{RUBRIC}-bench", "template": template}
    )
    path = folder / "rubric.yaml"
    path.write_text(yaml.safe_dump(rubric.model_dump(mode="json"), allow_unicode=True), "utf-8")
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=24, help="requests per run")
    parser.add_argument("--concurrency", default="1,8", help="comma-separated levels")
    parser.add_argument("--no-batch", action="store_true", help="skip the offline run")
    parser.add_argument("--no-bare", action="store_true", help="skip the runs without qadi")
    parser.add_argument(
        "--template", help="grade with this template instead (e.g. kinayat-explanation@2)"
    )
    parser.add_argument("--transport", choices=["lean", "litellm"], help="the judge's transport")
    parser.add_argument("--sizes", help="the offline runner's crossover at these sizes (24,96)")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    url = local_judge.url_from_environment() or local_judge.start()
    local_judge.wait_ready(url, 1800)
    per_run = -(-args.items // 24)  # offsets of the sample per run
    with tempfile.TemporaryDirectory(prefix="qadi-local-judge-") as scratch:
        folder = Path(scratch)
        config = folder / "judges.yaml"
        entry = local_judge.judge_entry(url, name=JUDGE)
        if args.transport:
            entry["transport"] = args.transport
        config.write_text(yaml.safe_dump(local_judge.judges_config(url) | {"model_list": [entry]}))
        env = {
            **os.environ,
            "QADI_DATABASE_URL": f"sqlite:///{folder / 'qadi.db'}",
            "QADI_JUDGES_CONFIG": str(config),
        }
        work = Workdir(folder, env)
        if args.template:
            work.rubric = rubric_with(args.template, folder)
        subprocess.run([sys.executable, "-m", "service", "db", "upgrade"], cwd=ROOT, env=env,
                       check=True, capture_output=True)  # fmt: skip
        work.regrade(work.answers("warm-up", items(range(23, 24), 1)), "--concurrency", "1")
        sets = (range(1 + k * per_run, 1 + (k + 1) * per_run) for k in range(24))
        if args.sizes:
            main_sizes(args, work)
            return
        rates = [http_run(work, url, items(next(sets), args.items), c) for c in levels]
        print(f"C={levels[-1]} / C={levels[0]} throughput: {rates[-1] / rates[0]:.2f}x")
        if not args.no_bare:
            print("what limits it (the same kind of requests, each run on its own items):")
            sent = [bare_run(work, url, items(next(sets), args.items), c, False) for c in levels]
            fill = [bare_run(work, url, items(next(sets), args.items), c, True) for c in levels]
            print(
                f"  vLLM alone: C={levels[-1]} / C={levels[0]} {sent[-1] / sent[0]:.2f}x; its "
                f"prefill alone tops at {max(fill):.2f} calls/s whatever the concurrency "
                f"({fill[0]:.2f} -> {fill[-1]:.2f}), so C={levels[-1]} / C={levels[0]} <= "
                f"{max(fill) / sent[0]:.2f}x; qadi reaches {rates[0] / sent[0]:.0%} and "
                f"{rates[-1] / sent[-1]:.0%} of vLLM alone"
            )
        if not args.no_batch:
            batch_run(work, url, items(next(sets), args.items), rates[-1])


def timed_regrade(work: Workdir, answers: Path, *extra: str) -> float:
    """Wall seconds of one `qadi regrade` process, its start-up included."""
    started = time.perf_counter()
    work.regrade(answers, *extra)
    return time.perf_counter() - started


def offline_seconds(work: Workdir, rows: list[dict], name: str) -> tuple[float, float]:
    """Wall seconds of the offline path for `rows` (write the batch, run it, ingest it), and
    of run_batch's requests alone."""
    answers = work.answers(name, rows)
    requests, results = work.folder / f"{name}-requests.jsonl", work.folder / f"{name}-out.jsonl"
    seconds = timed_regrade(work, answers, "--batch", str(requests))
    started = time.perf_counter()
    local_judge.run_batch(requests, results)
    seconds += time.perf_counter() - started
    out = str(work.folder / "results.jsonl")
    seconds += timed_regrade(work, answers, "--ingest", str(results), "--out", out)
    return seconds, requests_seconds(results)


def crossing(offline: tuple[float, float], other: tuple[float, float]) -> str:
    """Where the offline line (fixed, per call) is below the other's."""
    fixed, per_call = offline[0] - other[0], offline[1] - other[1]
    if per_call == 0:
        return "always" if fixed < 0 else "never"
    size = -fixed / per_call
    if per_call > 0:  # dearer per call: faster only below the crossing
        return f"up to {size:.0f} items" if size > 0 else "never"
    return f"from {size:.0f} items on" if size > 0 else "always"


def crossover(work: Workdir, sizes: list[int], concurrency: int, start: float) -> None:
    """Each path's seconds at each size, the line through them, and where the lines cross."""
    measured: dict[str, list[float]] = {"offline": [], "http": [], "http+start": []}
    offset = 1  # each run grades items of its own (sample offsets 1-21; the warm-ups 22, 23)

    def fresh(n: int) -> list[dict]:
        nonlocal offset
        blocks = -(-n // 24)  # 24 items per offset
        offset += blocks
        return items(range(offset - blocks, offset), n)

    for n in sizes:
        http = timed_regrade(work, work.answers(f"http-{n}", fresh(n)), "--concurrency",
                             str(concurrency), "--out", str(work.folder / "results.jsonl"))  # fmt: skip
        offline, engine_busy = offline_seconds(work, fresh(n), f"offline-{n}")
        measured["http"].append(http)
        measured["http+start"].append(http + start)
        measured["offline"].append(offline)
        print(f"{n} items: (a) offline {offline:.1f} s (run_batch's requests {engine_busy:.0f} s "
              f"of it), (b) HTTP C={concurrency} {http:.1f} s, (c) HTTP with the server's start "
              f"{http + start:.1f} s (load average {os.getloadavg()[0]:.1f})")  # fmt: skip
    lines = {}
    for path, seconds in measured.items():
        per_call = (seconds[-1] - seconds[0]) / (sizes[-1] - sizes[0])
        lines[path] = (seconds[0] - per_call * sizes[0], per_call)
        print(f"{path:11s}: {lines[path][0]:6.1f} s fixed + {per_call:.3f} s per call "
              f"({1 / per_call:.2f} calls/s at the margin)")  # fmt: skip
    for other in ("http", "http+start"):
        print(f"offline faster than {other}: {crossing(lines['offline'], lines[other])}")


def main_sizes(args: argparse.Namespace, work: Workdir) -> None:
    """--sizes: restart the server (timed), then the crossover."""
    local_judge.stop()
    started = time.perf_counter()
    url = local_judge.start()
    local_judge.wait_ready(url, 1800)
    start = time.perf_counter() - started
    print(f"server start (stopped -> ready): {start:.1f} s")
    work.regrade(work.answers("warm-up-2", items(range(22, 23), 1)), "--concurrency", "1")
    sizes = sorted(int(n) for n in args.sizes.split(","))
    crossover(work, sizes, int(args.concurrency.split(",")[0]), start)


if __name__ == "__main__":
    main()
