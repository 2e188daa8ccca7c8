"""Who made a model: the basis of the self-evaluation guard.

The route a model is reached through (`hosted_vllm/`, `openrouter/`, `openai/` for any
OpenAI-compatible server, ...) says nothing about who trained it, so routes are stripped
before the family table is consulted. Explicit configuration always wins over the table.
"""

from __future__ import annotations

import re

# Route prefixes of LiteLLM that name a transport or host, never the maker.
ROUTES = frozenset(
    {
        "hosted_vllm",
        "vllm",
        "openrouter",
        "openai",
        "text-completion-openai",
        "azure",
        "azure_ai",
        "bedrock",
        "vertex_ai",
        "vertex_ai_beta",
        "together_ai",
        "fireworks_ai",
        "groq",
        "deepinfra",
        "anyscale",
        "huggingface",
        "ollama",
        "ollama_chat",
        "lm_studio",
        "litellm_proxy",
        "sagemaker",
        "databricks",
        "nvidia_nim",
        "cerebras",
        "sambanova",
        "replicate",
        "perplexity",
        "custom_openai",
        "openai_like",
        "nebius",
        "novita",
        "anthropic",
        "gemini",
        "mistral",
        "cohere",
        "cohere_chat",
        "xai",
        "deepseek",
    }
)

# (pattern on the model's own name, maker). Order matters: the first match wins.
FAMILIES: tuple[tuple[str, str], ...] = (
    (r"^(gpt-|gpt\d|chatgpt|o\d(-|$)|o\d-mini|text-davinci|davinci|babbage|openai)", "openai"),
    (r"^claude", "anthropic"),
    (r"^(gemini|gemma|palm|bison)", "google"),
    (r"^(meta-)?llama|^codellama", "meta"),
    (r"^(qwen|qwq)", "alibaba"),
    (r"^(mistral|mixtral|ministral|codestral|magistral|devstral|pixtral)", "mistral"),
    (r"^deepseek", "deepseek"),
    (r"^grok", "xai"),
    (r"^(command|aya|c4ai)", "cohere"),
    (r"^jais", "inception"),
    (r"^fanar", "qcri"),
    (r"^allam", "sdaia"),
    (r"^(phi-|phi\d)", "microsoft"),
    (r"^silma", "silma"),
    (r"^acegpt", "freedomintelligence"),
)

# Hugging Face organisations, for ids such as 'meta-llama/Llama-3.1-8B-Instruct'.
ORGS = {
    "meta-llama": "meta",
    "facebook": "meta",
    "qwen": "alibaba",
    "google": "google",
    "mistralai": "mistral",
    "deepseek-ai": "deepseek",
    "cohereforai": "cohere",
    "coherelabs": "cohere",
    "inceptionai": "inception",
    "core42": "inception",
    "qcri": "qcri",
    "allam-ai": "sdaia",
    "microsoft": "microsoft",
    "openai": "openai",
    "anthropic": "anthropic",
    "xai-org": "xai",
    "silma-ai": "silma",
    "freedomintelligence": "freedomintelligence",
    "qadi-stand-in": "qadi-stand-in",  # qadi's own stand-in judges (judges/standins.py)
}


def model_name(route_and_model: str) -> str:
    """Strip LiteLLM route prefixes: 'hosted_vllm/meta-llama/Llama-3' -> 'meta-llama/Llama-3'."""
    parts = route_and_model.strip().split("/")
    while len(parts) > 1 and parts[0].lower() in ROUTES:
        parts = parts[1:]
    return "/".join(parts)


def maker_from_table(route_and_model: str) -> str | None:
    """The maker by organisation or family name, or None when the table does not know it."""
    name = model_name(route_and_model)
    org, _, base = name.rpartition("/")
    if org and org.split("/")[-1].lower() in ORGS:
        return ORGS[org.split("/")[-1].lower()]
    for pattern, maker in FAMILIES:
        if re.search(pattern, base.lower()):
            return maker
    return None
