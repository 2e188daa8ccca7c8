"""The Hugging Face loading path of `qadi bench run` (issue 16, item 12), offline.

`benchmarks.loading.load_records` calls `datasets.load_dataset(hf_id, config, split=...)`.
Here the id is a local folder laid out as a dataset repository on the hub is
(`data/<split>-00000-of-00001.parquet`, written by `datasets` itself from the Kinayat test
rows of tests/data/bench), so the real call runs with the hub switched off.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from benchmarks.kinayat import KINAYAT
from benchmarks.loading import DatasetUnavailable, load_records, read_file
from benchmarks.runner import build_items
from benchmarks.suites import tasks_of

DATA = Path(__file__).resolve().parents[1] / "data" / "bench"


@pytest.fixture
def offline_hub(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))


def test_a_dataset_saved_by_datasets_loads_through_load_dataset(offline_hub, tmp_path):
    import datasets

    rows = read_file(DATA / "kinayat.jsonl")
    repo = tmp_path / "menaattia-Kinayat"
    (repo / "data").mkdir(parents=True)
    datasets.Dataset.from_list(rows).to_parquet(repo / "data" / "test-00000-of-00001.parquet")

    source = dataclasses.replace(KINAYAT, hf_id=str(repo))
    loaded = load_records(source, data_dir=None)
    # same rows, same order, Arabic text intact; a field a row lacks is None in a table
    columns = list(dict.fromkeys(k for row in rows for k in row))
    assert loaded == [{c: row.get(c) for c in columns} for row in rows]
    assert any(None in row.values() for row in loaded)  # the sample has such a row
    # and the published Kinayat task builds its items from them as from the local file
    task = next(t for t in tasks_of("kinayat") if t.source == KINAYAT)
    from_hub = build_items(dataclasses.replace(task, source=source), loaded, 0, None)
    from_file = build_items(task, rows, 0, None)
    assert from_hub.items and from_hub.items == from_file.items


def test_without_datasets_the_skip_names_the_hf_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    with pytest.raises(DatasetUnavailable, match=r"pip install 'qadi\[hf\]'"):
        load_records(KINAYAT, data_dir=None)
