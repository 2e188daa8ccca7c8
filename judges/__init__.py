"""Talking to judge models: prompts, LiteLLM routing, verdict parsing, the guard, panels."""

import os

# LiteLLM fetches its price map from the internet at import unless told not to. Set before
# anything in qadi can import litellm, so no start-up waits on the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# LiteLLM calls `openai/` and the other OpenAI-compatible providers through the OpenAI SDK
# unless this switch sends them through its own HTTP handler, the one its `hosted_vllm/`
# route already takes. Same replies, usage and prices; about a third less CPU a call
# (10.7 -> 6.8 ms with token probabilities, tests/perf/bench_client_overhead.py --live;
# 5.3 -> 3.6 ms without: docs/explanation/performance.md; issue 40). It is LiteLLM's
# experimental switch: set it to false in the environment to keep the SDK. One difference
# qadi handles: without a key the handler sends the call unauthenticated (the SDK refused
# it), so the provider's 401 is what names the missing key (judges/credentials.py).
os.environ.setdefault("EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", "true")

from judges import fann_or_flop  # noqa: F401  (registers the fann_or_flop message builder)
from judges.batch import BatchGrader, BatchOptions, BatchStats
from judges.builders import RequestError
from judges.cache import InMemoryJudgmentStore, JudgmentStore, cache_key
from judges.config import JudgeConfigError, JudgeEntry, JudgesConfig, load_config, parse_config
from judges.grading import Grader, PlannedGrade, grade
from judges.guard import GuardError, SkippedJudge, choose_panel
from judges.models import (
    AnswerRecord,
    CriterionVerdict,
    Graded,
    GradeRequest,
    GradeResult,
    JudgeResult,
)
from judges.prompts import build_call
from judges.templates import TemplateError, load_template

__all__ = [
    "AnswerRecord",
    "BatchGrader",
    "BatchOptions",
    "BatchStats",
    "CriterionVerdict",
    "Graded",
    "GradeRequest",
    "GradeResult",
    "Grader",
    "GuardError",
    "InMemoryJudgmentStore",
    "JudgeConfigError",
    "JudgeEntry",
    "JudgeResult",
    "JudgesConfig",
    "PlannedGrade",
    "JudgmentStore",
    "RequestError",
    "SkippedJudge",
    "TemplateError",
    "build_call",
    "cache_key",
    "choose_panel",
    "grade",
    "load_config",
    "load_template",
    "parse_config",
]
