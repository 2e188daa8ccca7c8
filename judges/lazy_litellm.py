"""LiteLLM, imported when first needed: its import costs about 4 s of CPU, which grading with
judges on the lean transport alone (judges/transport.py) never pays.

It fetches its price map from the internet at import unless told not to; `judges/__init__.py`
sets that flag before this module (or anything else of the package) is imported, so a
start-up never waits on a network this machine may not have.
"""

from __future__ import annotations

from types import ModuleType


def litellm_module() -> ModuleType:
    """LiteLLM, imported on first use and kept quiet (no debug banner, no telemetry)."""
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm
