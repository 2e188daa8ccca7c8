"""How much of each judge prompt a prefix cache can reuse: the shared-prefix share per template.

vLLM's automatic prefix caching reuses the KV cache of a request's longest prefix that an
earlier request already computed, in whole KV blocks (`--block-size`: 16 tokens by default on
a GPU, 128 on the CPU; .ci/vllm.sh serves the CPU judge with 32). A template
that renders what many requests share (instructions, the rubric, the scale) before the item
(question, reference, answer) lets every request after the first skip most of its prefill.

For each bundled template, the sample items are rendered in order with qadi's own
`build_call`, and for each request after the first: the longest common prefix with any
earlier request, as a share of its length. Two measures:

- `chars`: qadi's messages alone, concatenated (what the template decides);
- `tokens`: the prompt as the local judge sees it, the messages through SmolLM2's chat
  template and tokenizer (`--model-dir`, default the prepared model of .ci/vllm.sh), and the
  share counted in whole blocks (`--block`, default 32, the local judge's) as vLLM's cache
  reuses them. SmolLM2's template adds a
  default system prompt to a conversation without one, which every request shares.

Items: the 24 explanations of service/sample/explanations.jsonl for the rating templates
(the idiom as the MIDAS `prompt` and `metadata.idiom`, the gold explanation as the meaning,
the candidate as the sentence or translation), the same explanations grouped four to a poem
for Fann or Flop, and the sample's SME answers (service/sample/answers.jsonl) for the
criteria templates, each request with the rubric its answer names (requests of different
rubrics share less, as on a real judge).

Run: .venv/bin/python tests/perf/prefix_share.py [--model-dir DIR] [--block 32]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from collections.abc import Iterator
from pathlib import Path

from judges import GradeRequest, build_call
from judges.templates import BUNDLED
from rubrics import library_rubric

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "service" / "sample"
MODEL_DIR = (
    Path(os.environ.get("QADI_VLLM_HOME") or Path.home() / ".cache" / "qadi-vllm")
    / "smollm2-135m-instruct-bf16"
)
BLOCK = 32  # the local judge's KV block size (.ci/vllm.sh): the unit its prefix cache reuses

# template -> the rubric it renders (a rating template with the library rubric of its paper)
RATING = {
    "kinayat-explanation@1": "kinayat-explanation-paper",
    "kinayat-explanation@2": "kinayat-explanation",
    "kinayat-explanation@3": "kinayat-explanation",
    "midas-sentence@1": "midas-sentence",
    "midas-sentence-no-meaning@1": "midas-sentence-no-meaning",
    "midas-translation@1": "midas-translation",
    "midas-translation-no-meaning@1": "midas-translation-no-meaning",
    "neutral-scale@1": "kinayat-explanation",
}
CRITERIA = ("rubric-criteria@1", "arabic-sme-criteria@1", "neutral-criteria@1")
# why a template renders in its order: a paper's published prompt keeps the paper's order;
# the others put the shared parts first
ORDER = {
    "kinayat-explanation@1": "paper's (verbatim)",
    "kinayat-explanation@2": "paper's (kept: its hash)",
    "midas-sentence@1": "paper's (verbatim)",
    "midas-sentence-no-meaning@1": "paper's (verbatim)",
    "midas-translation@1": "paper's (verbatim)",
    "midas-translation-no-meaning@1": "paper's (verbatim)",
    "fann-or-flop-explanation@1": "paper's (verbatim)",
    "rubric-criteria@1": "item first (kept: its hash)",
}


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def requests_for(template: str) -> Iterator[GradeRequest]:
    """The sample requests a template renders, in file order."""
    explanations = lines(SAMPLE / "explanations.jsonl")
    if template in RATING:
        rubric = library_rubric(RATING[template]).model_copy(update={"template": template})
        for item in explanations:
            yield GradeRequest(
                rubric=rubric,
                prompt=item["prompt"],
                reference=item["reference"],
                response=item["response"],
                candidate_model=item["candidate_model"],
                metadata={"idiom": item["prompt"], "language": "TR"},
            )
    elif template == "fann-or-flop-explanation@1":
        rubric = library_rubric("fann-or-flop-explanation")
        for start in range(0, len(explanations), 4):
            poem = explanations[start : start + 4]
            yield GradeRequest(
                rubric=rubric,
                reference=json.dumps([i["reference"] for i in poem], ensure_ascii=False),
                response=json.dumps([i["response"] for i in poem], ensure_ascii=False),
                candidate_model="gpt-4o",
                metadata={"item_id": f"poem-{start // 4}", "title": f"poem {start // 4}"},
            )
    else:
        for answer in lines(SAMPLE / "answers.jsonl"):
            rubric = library_rubric(answer["rubric_id"])
            if rubric.kind != "penalty_weighted":
                continue  # the sample's scale answers: not for a criteria template
            yield GradeRequest(
                rubric=rubric.model_copy(update={"template": template}),
                prompt=answer["prompt"],
                response=answer["response"],
                candidate_model=answer["candidate_model"],
            )


class ChatTokens:
    """The judge's prompt as token ids: SmolLM2's chat template, then its tokenizer."""

    def __init__(self, model_dir: Path) -> None:
        import jinja2
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        source = (model_dir / "chat_template.jinja").read_text(encoding="utf-8")
        self.template = jinja2.Environment().from_string(source)

    def __call__(self, messages: list[dict[str, str]]) -> list[int]:
        text = self.template.render(messages=messages, add_generation_prompt=True)
        return self.tokenizer.encode(text, add_special_tokens=False).ids


def common(a, b) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def shares(sequences: list, block: int = 1) -> list[float]:
    """For each sequence after the first: its longest common prefix with an earlier one, in
    whole blocks, as a share of its length."""
    found = []
    for i, seq in enumerate(sequences[1:], start=1):
        shared = max(common(seq, earlier) for earlier in sequences[:i])
        found.append((shared // block * block) / len(seq))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    parser.add_argument("--block", type=int, default=BLOCK, help="KV block size in tokens")
    args = parser.parse_args()
    tokens = ChatTokens(args.model_dir) if (args.model_dir / "tokenizer.json").exists() else None
    if tokens is None:
        print(f"(no tokenizer at {args.model_dir}: characters only; run .ci/vllm.sh start once)")
    templates = [*RATING, "fann-or-flop-explanation@1", *CRITERIA]
    print(
        f"{'template':32} {'n':>3} {'chars':>7} {'mean share (chars)':>19} "
        f"{'tokens':>7} {f'mean share ({args.block}-token blocks)':>29}  order"
    )
    for ref in templates:
        template = BUNDLED.resolve(ref)
        calls = [build_call(template, request) for request in requests_for(ref)]
        texts = ["\n".join(m["content"] for m in call.messages) for call in calls]
        char_share = statistics.mean(shares(texts))
        row = f"{ref:32} {len(calls):3} {statistics.mean(map(len, texts)):7.0f} {char_share:19.1%}"
        if tokens is not None:
            ids = [tokens(call.messages) for call in calls]
            row += f" {statistics.mean(map(len, ids)):7.0f} {statistics.mean(shares(ids, args.block)):29.1%}"
        order = ORDER.get(ref, "shared parts first")
        print(f"{row}  {order}")


if __name__ == "__main__":
    main()
