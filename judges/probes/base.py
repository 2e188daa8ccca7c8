"""What a probe is, and the registry that makes one available by name.

A probe turns one answer into a pair of answers that should get the same grade from a fair
judge: `baseline` (the original answer, unless the probe needs two altered versions) and
`treated`. The paired difference treated − baseline is the probe's effect on a judge. A
probe that does not apply to an answer returns `Skip(reason)`: it is counted, not graded.

To add a probe: subclass `Probe` in a module of judges/probes/, decorate it with
`@register`, name the source of its design in its docstring, and import the module in
judges/probes/__init__.py. Nothing else changes: the CLI, the API and the report list the
registered probes.
"""

from __future__ import annotations

import hashlib
import random
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from judges.models import AnswerRecord

ITEM_ID_MAX = 256  # AnswerRecord.item_id


class ProbeError(ValueError):
    """A probe name or option is wrong; the message names the field."""


@dataclass(frozen=True)
class ProbeContext:
    """What a probe may look at besides the answer."""

    seed: int
    paired_prompt: bool  # the judge's prompt compares two texts (gold and generated)
    judge_maker: str | None = None  # for probes that depend on the judge (self-preference)
    rewrite_column: str = "dialect_rewrite"  # item attribute holding a paired rewrite


@dataclass(frozen=True)
class Pair:
    """The two answers to grade; `baseline` None means the original answer itself."""

    treated: AnswerRecord
    baseline: AnswerRecord | None = None


@dataclass(frozen=True)
class Skip:
    """The probe does not apply to this answer (the reason is counted in the report)."""

    reason: str


class Probe(ABC):
    """One perturbation that should not matter to a fair judge."""

    name: ClassVar[str]
    version: ClassVar[int] = 1
    summary: ClassVar[str]
    source: ClassVar[str]
    per_judge: ClassVar[bool] = False  # the pair depends on the judge (its maker)

    @abstractmethod
    def perturb(self, answer: AnswerRecord, context: ProbeContext) -> Pair | Skip:
        """The pair for this answer, or why the probe does not apply to it."""

    def rng(self, answer: AnswerRecord, context: ProbeContext) -> random.Random:
        """The only randomness a probe may use: seeded by the run's seed, the probe and the
        item, so one item's perturbation does not depend on which other items are probed."""
        return random.Random(f"{context.seed}|{self.name}@{self.version}|{answer.item_id}")

    def variant(self, answer: AnswerRecord, label: str, **changes: str) -> AnswerRecord:
        """An altered copy of `answer`, stored under an item id of its own (`ID~label`) and
        marked with `probe` and `probe_of`, so calibration never mistakes it for the item.
        Templates that show the item id to the judge (Fann or Flop) keep seeing the
        original id through `poem_id`."""
        item_id = _variant_id(answer.item_id, label)
        metadata = {
            **answer.metadata,
            "probe": self.name,
            "probe_of": answer.item_id,
        }
        metadata.setdefault("poem_id", answer.item_id)
        return answer.model_copy(update={"item_id": item_id, "metadata": metadata, **changes})

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "version": self.version,
            "summary": self.summary,
            "source": self.source,
            "per_judge": self.per_judge,
        }


def _variant_id(item_id: str, label: str) -> str:
    """`ID~label`, shortened with a hash of the id when it would pass the id length limit."""
    suffix = f"~{label}"
    if len(item_id) + len(suffix) <= ITEM_ID_MAX:
        return item_id + suffix
    digest = hashlib.sha256(item_id.encode("utf-8")).hexdigest()[:12]
    return f"{item_id[: ITEM_ID_MAX - len(suffix) - 13]}-{digest}{suffix}"


PROBES: dict[str, Probe] = {}


def register(cls: type[Probe]) -> type[Probe]:
    """Class decorator: make the probe available by its name."""
    if cls.name in PROBES:
        raise ValueError(f"probe '{cls.name}' is registered twice")
    PROBES[cls.name] = cls()
    return cls


def get_probes(names: list[str] | None) -> list[Probe]:
    """The named probes in the given order (all registered ones when None); an unknown name
    is an error naming the known ones."""
    if not names:
        return list(PROBES.values())
    unknown = [n for n in names if n not in PROBES]
    if unknown:
        raise ProbeError(f"probes: unknown {unknown} (known: {', '.join(PROBES)})")
    return [PROBES[n] for n in dict.fromkeys(names)]
