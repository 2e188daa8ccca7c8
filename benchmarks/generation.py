"""Candidate answers from target models, through LiteLLM, cached by a key over model,
sampling parameters, template hash and prompt. Two ways to answer a multiple-choice item:

- `generate`: greedy generation, parsed by the strict rule (closed API models in the papers);
- `loglik`: the log-likelihood of each option label after the prompt, from the completions
  endpoint with echo + logprobs that vLLM serves (lm-eval's multiple_choice, the papers'
  open models); the highest wins, no length normalisation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal, Protocol

from benchmarks.rows import Item
from benchmarks.tasks import Task
from judges.client import JudgeClient, resolve_env
from rubrics import content_hash

Mode = Literal["generate", "loglik"]
TARGET_DELIMITER = " "  # lm-eval's target_delimiter before each choice


class AnswerCache(Protocol):
    async def find(self, key: str) -> str | None: ...


def answer_key(model: str, sampling: dict[str, Any], task: Task, item: Item, mode: Mode) -> str:
    return content_hash(
        {
            "model": model,
            "sampling": sampling,
            "mode": mode,
            "template_hash": task.template_hash,
            "prompt": item.prompt,
            "labels": item.labels if mode == "loglik" else None,
        }
    )


class CandidateModel:
    """One target model from a LiteLLM model_list entry (the same file format as judges)."""

    def __init__(self, router: JudgeClient, name: str) -> None:
        self.router = router
        self.name = name
        self.entry = router.config.judge(name)

    def sampling(self, task: Task, mode: Mode) -> dict[str, Any]:
        if mode == "loglik":
            return {"echo": True, "logprobs": 1, "max_tokens": 1, "temperature": 0}
        return {**self.entry.sampling, **task.sampling}

    async def generate(self, task: Task, item: Item) -> tuple[str | None, str | None]:
        """Greedy generation with every sampling parameter the task declares (its stop
        sequence too: Kinayat T5 stops at a blank line); the entry's own sampling is the base."""
        outcome = await self.router.complete(
            self.name, [{"role": "user", "content": item.prompt}], None, **task.sampling
        )
        return (outcome.text, None) if outcome.status == "ok" else (None, outcome.error)

    async def loglik(self, item: Item) -> tuple[str | None, str | None]:
        """The label whose continuation has the highest log-probability, as its text."""
        scores = await asyncio.gather(
            *(self._logprob(item.prompt, TARGET_DELIMITER + label) for label in item.labels)
        )
        errors = [e for _, e in scores if e]
        if errors:
            return None, errors[0]
        best = max(range(len(item.labels)), key=lambda i: scores[i][0])
        return item.labels[best], None

    async def _logprob(self, context: str, continuation: str) -> tuple[float | None, str | None]:
        import litellm

        params = resolve_env(self.entry.litellm_params)
        try:
            response = await litellm.atext_completion(
                prompt=context + continuation,
                max_tokens=1,
                echo=True,
                logprobs=1,
                temperature=0,
                timeout=self.router.config.qadi.timeout,
                num_retries=self.router.config.qadi.num_retries,
                **params,
            )
        except Exception as exc:  # noqa: BLE001 - recorded with the item, never a score
            return None, self.router.redact(f"{type(exc).__name__}: {exc}".splitlines()[0])
        logprobs = response.choices[0].logprobs
        end = len(context) + len(continuation)
        total = sum(
            lp
            for offset, lp in zip(logprobs.text_offset, logprobs.token_logprobs, strict=True)
            if lp is not None and len(context) <= offset < end
        )
        return total, None


async def answer_items(
    model: CandidateModel,
    task: Task,
    items: list[Item],
    mode: Mode,
    cache: AnswerCache,
    concurrency: int,
    on_answer: Callable[[Item, str, str | None, str | None, bool], Any],
) -> None:
    """Answer every item at bounded concurrency; cached answers are not asked again.
    `on_answer(item, key, output, error, cached)` records each one."""
    queue: asyncio.Queue = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)
    sampling = model.sampling(task, mode)

    async def worker() -> None:
        while not queue.empty():
            item = queue.get_nowait()
            key = answer_key(model.entry.model, sampling, task, item, mode)
            output = await cache.find(key)
            if output is not None:
                await _maybe_await(on_answer(item, key, output, None, True))
                continue
            output, error = await (
                model.loglik(item) if mode == "loglik" else model.generate(task, item)
            )
            await _maybe_await(on_answer(item, key, output, error, False))

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))


async def _maybe_await(value: Any) -> None:
    if asyncio.iscoroutine(value):
        await value
