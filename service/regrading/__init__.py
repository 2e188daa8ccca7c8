"""Regrading stored or file answers offline (`qadi regrade`): the local engine (one process,
or shards in worker processes), the Ray Data engine beside it, batch files for provider
batch endpoints and `vllm run-batch`, and the answer-file readers they share."""
