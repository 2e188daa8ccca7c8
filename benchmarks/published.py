"""Published accuracies to print beside a run: seed 000 Tables 7-10 (Llama-3.1-70B Kinayat
general is the corrected 0.8831), seed 001 Tables 3, 4, 5 and 12 (overall columns; the bias
probe's figurative share), seed 003 Table 2 (English, the language of the published prompt).
Model names are matched without route, organisation, case, punctuation and a trailing
Instruct/it/chat."""

from __future__ import annotations

import re

COLUMNS = {
    "maps-understanding": 0,
    "maps-context": 1,
    "jawaher-understanding": 2,
    "jawaher-understanding-srl": 3,
    "kinayat-understanding": 4,
    "kinayat-understanding-srl": 5,
    "jawaher-negation": 6,
    "kinayat-negation": 7,
}
KINAYAT_TABLE = """
Llama-3.1-8B-Instruct 0.8655 0.9213 0.7475 0.7475 0.5754 0.6400 0.7424 0.6492
Llama-3.1-70B-Instruct 0.9239 0.9873 0.8990 0.9141 0.8831 0.8492 0.6919 0.5508
Gemma-2-9B-it 0.9365 0.9670 0.9091 0.8838 0.7354 0.7692 0.8384 0.6031
Gemma-2-27b-it 0.9340 0.9721 0.8990 0.8939 0.7908 0.8123 0.9192 0.8123
Qwen2.5-7B-Instruct 0.9239 0.9492 0.8535 0.8687 0.7262 0.7815 0.7677 0.6277
Qwen2.5-14B-Instruct 0.9391 0.9695 0.8990 0.9293 0.7938 0.8431 0.8737 0.7908
Qwen2.5-32B-Instruct 0.9391 0.9924 0.9192 0.9545 0.8000 0.8308 0.9141 0.8000
Aya-expanse-8b 0.8858 0.9315 0.7929 0.7677 0.6338 0.7323 0.7020 0.5754
Aya-expanse-32b 0.9340 0.9797 0.8939 0.9242 0.8154 0.8185 0.8586 0.8092
Mistral-7B-Instruct-v0.3 0.8579 0.9213 0.6061 0.5960 0.5169 0.5262 0.5808 0.4923
Jais-family-6p7b-chat 0.7640 0.8680 0.7525 0.7929 0.7046 0.7262 0.7374 0.6062
Jais-family-13b-chat 0.8376 0.9162 0.7626 0.7879 0.6769 0.7446 0.7020 0.5846
Fanar-1-9B-Instruct 0.9010 0.9442 0.8737 0.8737 0.7508 0.7446 0.7980 0.5815
SILMA-9B-Instruct-v1.0 0.9492 0.9569 0.8737 0.8485 0.6277 0.7415 0.8131 0.5354
ALLaM-7B-Instruct-preview 0.8807 0.9365 0.8636 0.8586 0.7846 0.8462 0.8990 0.8000
AceGPT-v2-8B-Chat 0.9112 0.9543 0.7475 0.7576 0.5754 0.6585 0.7374 0.5969
Claude-Sonnet-4 0.9340 0.9797 0.9798 0.9848 0.9662 0.9077 0.9697 0.9446
Claude-3.5-Sonnet 0.9543 0.9772 0.9848 0.9646 0.9415 0.9046 0.9747 0.9169
Gemini-1.5-flash 0.9239 0.9746 0.9343 0.8990 0.8185 0.8738 0.8939 0.7785
Gemini-2.5-flash-lite-preview-06-17 0.8832 0.9746 0.9596 0.9343 0.9077 0.8431 0.9242 0.8308
GPT-4o 0.9619 0.9873 0.9798 0.9596 0.9415 0.9138 0.9798 0.9477
GPT-4o-mini 0.9492 0.9848 0.9141 0.8586 0.8185 0.7662 0.8788 0.7785
"""


# model | midi-mcq overall | midi-memorization | midi-reasoning | midi-bias Fig. (%)
MIDI_TABLE = {
    "GPT-5.2": (74.4, 89.3, 96.4, 77.4),
    "Gemini 2.5 Pro": (75.5, 95.0, 98.0, 89.7),
    "DeepSeek-R1 (70B)": (44.0, 38.4, 54.7, 47.5),
    "Gemma-3 (27B)": (71.0, 78.9, 93.9, 78.7),
    "Llama-3.1 (8B)": (49.5, 51.4, 78.1, 53.9),
    "Llama-3.3 (70B)": (63.6, 51.4, 85.2, 66.1),
    "Mixtral (8x7B)": (57.5, 55.4, 80.8, 48.9),
    "Qwen-3 (4B)": (30.8, 33.3, 36.9, 66.7),
    "Qwen-3 (30B-MoE)": (31.2, 33.4, 43.0, 57.4),
}
MIDI_TASKS = ("midi-mcq", "midi-memorization", "midi-reasoning", "midi-bias")
MIDAS_EN = {"Aya-Expanse-32B": 81.71, "Qwen2.5-32B": 83.71, "DeepSeek-V3": 90.34, "GPT-4o": 91.13}
_SUFFIX = re.compile(r"[-_ ](instruct|it|chat)$", re.IGNORECASE)


def normalize(model: str) -> str:
    name = _SUFFIX.sub("", model.rsplit("/", 1)[-1].strip())
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _table() -> dict[tuple[str, str], float]:
    out = {}
    for line in KINAYAT_TABLE.strip().splitlines():
        model, *values = line.split()
        for task, column in COLUMNS.items():
            out[(normalize(model), task)] = float(values[column])
    for model, values in MIDI_TABLE.items():
        for task, value in zip(MIDI_TASKS, values, strict=True):
            out[(normalize(model), task)] = value / 100
    for model, value in MIDAS_EN.items():
        out[(normalize(model), "midas-mcq")] = value / 100
    return out


PUBLISHED = _table()


def published(task: str, model: str) -> float | None:
    """The paper's number for this model and task, or None."""
    return PUBLISHED.get((normalize(model), task))
