"""Reading benchmark records: a local file in the published schema, else Hugging Face
`datasets` by id (the `hf` extra, `pip install 'qadi[hf]'`: a large dependency, and the
hub needs the network)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from benchmarks.tasks import Source
from calibration.formats.lines import csv_reader, jsonl_records

SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")


class DatasetUnavailable(RuntimeError):
    pass


def load_records(source: Source, data_dir: Path | None) -> list[dict[str, Any]]:
    if data_dir is not None:
        for suffix in SUFFIXES:
            path = data_dir / f"{source.file}{suffix}"
            if path.is_file():
                return read_file(path)
        if source.bundled is None:
            raise DatasetUnavailable(
                f"{data_dir}: no {source.file}{{{','.join(SUFFIXES)}}} for {source.hf_id}"
            )
    if source.bundled is not None:
        return read_file(source.bundled)
    if not source.hub:
        raise DatasetUnavailable(
            f"{source.hf_id} is not on the Hugging Face hub; download it and pass --data-dir "
            f"with {source.file}.jsonl"
        )
    try:
        import datasets
    except ImportError:
        raise DatasetUnavailable(
            f"{source.hf_id}: loading from Hugging Face needs the hf extra "
            f"(pip install 'qadi[hf]'), or pass --data-dir with {source.file}.jsonl in the "
            "same schema"
        ) from None
    dataset = datasets.load_dataset(source.hf_id, source.config, split=source.split)
    return [dict(row) for row in dataset]


def read_file(path: Path) -> list[dict[str, Any]]:
    text_suffix = path.suffix.lower()
    if text_suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise DatasetUnavailable(f"{path}: reading parquet needs pyarrow") from None
        return pq.read_table(path).to_pylist()
    text = path.read_text(encoding="utf-8-sig")
    if text_suffix == ".csv":
        try:
            return list(csv_reader(text))
        except csv.Error as exc:
            raise DatasetUnavailable(f"{path}: {exc}") from None
    if text_suffix == ".json":
        data = json.loads(text)
        return data if isinstance(data, list) else data.get("data", [])
    records, problems = jsonl_records(text)
    if problems:
        raise DatasetUnavailable(f"{path}: " + "; ".join(problems[:10]))
    return [record for _, record in records]
