"""The reference's DeepCoder loading (tinker-cookbook 0.6.1 recipes/code_rl/code_env.py
load_deepcoder_tasks) on the small DeepCoder snapshot code-rl-hf.parity.test.ts builds: its
`load_dataset("agentica-org/DeepCoder-Preview-Dataset", name=…, split=…)` calls are answered by
`datasets` reading that snapshot folder (the Hub cannot be reached here), everything after them is
the reference's own code. argv: the snapshot folder, then the seeds. Prints one JSON object:
{"train": {seed: [task, …]}, "test": [task, …]} with each task {problem, tests, starter_code}."""

import json
import logging
import sys

import datasets

from tinker_cookbook.recipes.code_rl import code_env

SNAPSHOT = sys.argv[1]
SEEDS = [int(s) for s in sys.argv[2:]]
calls: list[list[str]] = []


def load_from_snapshot(path: str, name: str, split: str):
    assert path == "agentica-org/DeepCoder-Preview-Dataset", path
    calls.append([name, split])
    return datasets.load_dataset(SNAPSHOT, name=name, split=split)


code_env.load_dataset = load_from_snapshot
logging.disable(logging.WARNING)
datasets.disable_progress_bars()


def view(tasks) -> list[dict]:
    return [{"problem": t.problem, "tests": t.tests, "starter_code": t.starter_code} for t in tasks]


out = {
    "train": {str(seed): view(code_env.load_deepcoder_tasks("train", seed=seed)) for seed in SEEDS},
    "test": view(code_env.load_deepcoder_tasks("test")),
}
out["calls"] = calls
print(json.dumps(out))
