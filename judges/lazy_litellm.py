"""LiteLLM, imported when first needed: its import costs about 4 s of CPU, which grading with
judges on the lean transport alone (judges/transport.py) never pays.

It fetches its price map from the internet at import unless told not to; the flag is set
first (here, and in `judges/__init__.py` before anything of qadi's is imported), so a start-up
never waits on a network this machine may not have.
"""

from __future__ import annotations

import os
from types import ModuleType

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def litellm_module() -> ModuleType:
    """LiteLLM, imported on first use and kept quiet (no debug banner, no telemetry)."""
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm
