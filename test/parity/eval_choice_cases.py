"""The reference's multiple-choice benchmarks (tinker-cookbook 0.6.1: gpqa, mmlu_pro, mmlu_redux,
supergpqa, ceval) on rows handed in, for eval-choice.parity.test.ts.

stdin: {"suites": [{"name", "rows": {config or "default": [row, ...]}, "limits": [int|null, ...],
"responses": [str, ...], "system_prompt": str|null,
"assigned": [str, ...]}], "extract": [[text, letters], ...]}.
Each benchmark's load_benchmark_dataset is replaced by one that serves `rows` (a config absent
from them raises, as a missing subject does) and records the (path, name, split) it was asked for.
stdout: per suite and limit, each example's id, prompt messages, expected letter, and its reward
and extracted letter for every response; the aggregate of example j graded on assigned[j]; and
extract_mcq_answer on the extra cases.
"""

import asyncio
import importlib
import json
import sys

from datasets import Dataset

from tinker_cookbook.eval.benchmarks._common import extract_mcq_answer
from tinker_cookbook.eval.benchmarks._types import BenchmarkConfig


class NoRenderer:
    """EnvFromMessageEnv asks its renderer for stop sequences when built; nothing here renders."""

    def get_stop_sequences(self):
        return []


def builder_of(module):
    for value in vars(module).values():
        if isinstance(value, type) and value.__name__.endswith("BenchmarkBuilder") and value.__module__ == module.__name__:
            return value()
    raise RuntimeError(f"no builder in {module.__name__}")


async def run_suite(case):
    module = importlib.import_module(f"tinker_cookbook.eval.benchmarks.{case['name']}")
    calls = []

    def load(path, name=None, split="test", trust_remote_code=None):
        calls.append([path, name, split])
        rows = case["rows"].get(name or "default")
        if rows is None:
            raise ValueError(f"no config {name}")
        return Dataset.from_list(rows)

    module.load_benchmark_dataset = load
    builder = builder_of(module)
    runs = []
    for limit in case["limits"]:
        calls.clear()
        envs = builder.make_envs(NoRenderer(), BenchmarkConfig(max_examples=limit, system_prompt=case["system_prompt"]))
        examples = []
        rewards, metrics = [], []
        for j, env in enumerate(envs):
            msg_env = env.message_env
            graded = []
            for response in case["responses"]:
                step = await msg_env.step({"role": "assistant", "content": response})
                graded.append({"reward": step.reward, "extracted": step.logs["extracted"]})
            examples.append({
                "id": msg_env.example_id,
                "messages": await msg_env.initial_observation(),
                "expected": msg_env.expected,
                "graded": graded,
            })
            if j < len(case["assigned"]):
                step = await msg_env.step({"role": "assistant", "content": case["assigned"][j]})
                rewards.append(step.reward)
                # The subject the aggregate reads is in the step's logs (see the test).
                metrics.append({**step.metrics, **({"subject": step.logs["subject"]} if "subject" in step.logs else {})})
        result = builder.aggregate(rewards, metrics) if rewards else None
        runs.append({
            "limit": limit,
            "calls": list(calls),
            "examples": examples,
            "aggregate": None if result is None else {
                "score": result.score,
                "num_correct": result.num_correct,
                "num_examples": result.num_examples,
                "metrics": result.metrics,
            },
        })
    return {"name": case["name"], "runs": runs}


async def main():
    req = json.load(sys.stdin)
    suites = [await run_suite(c) for c in req["suites"]]
    extract = [extract_mcq_answer(text, letters) for text, letters in req["extract"]]
    json.dump({"suites": suites, "extract": extract}, sys.stdout)


asyncio.run(main())
