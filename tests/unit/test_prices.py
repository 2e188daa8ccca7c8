"""qadi reads LiteLLM's shipped price table from its file, without importing LiteLLM
(judges/client.py `price_table`): it must price every model as LiteLLM itself does."""

from __future__ import annotations

import litellm
from litellm.litellm_core_utils.get_model_cost_map import GetModelCostMap

from judges.client import price, price_table
from judges.standins import PRICES

FIELDS = ("input_cost_per_token", "output_cost_per_token")


def test_the_table_read_from_litellms_file_is_litellms_own():
    ours = price_table()
    # the catalog as LiteLLM loaded it, before any registration (the stand-ins', a router's)
    theirs = GetModelCostMap.loaded_model_cost_map()
    assert len(theirs) > 1000
    assert sorted((set(ours) ^ set(theirs)) - set(PRICES)) == []
    differ = [
        name
        for name, entry in theirs.items()
        if any(entry.get(f) != ours[name].get(f) for f in FIELDS)
    ]
    assert differ == []


def test_a_listed_model_is_priced_and_an_unlisted_one_is_unknown_not_free():
    listed = litellm.model_cost["gpt-4o-mini"]
    expected = 1000 * listed["input_cost_per_token"] + 200 * listed["output_cost_per_token"]
    assert price("openai/gpt-4o-mini", 1000, 200) == expected > 0
    assert price("hosted_vllm/meta-llama/Llama-3.1-8B", 1000, 200) is None
    assert price("qadi-stand-in/good", 1000, 200) == 0.0
