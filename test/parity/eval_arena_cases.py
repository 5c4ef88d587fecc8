"""The reference's Arena-Hard benchmark (tinker-cookbook 0.6.1 eval/benchmarks/_arena_hard.py) on
the cases eval-arena.parity.test.ts sends on stdin: the envs its builder makes from the given rows
(its dataset is these rows instead of the Hub's), each env's id, question, cluster and prompt
messages; for each (row, answer, judge reply) the judge prompt it sends, the reward and metrics of
its step (a reply of null: the judge raises); and its aggregate over those steps.

Its judge completer is a stand-in that records the messages and answers the given reply; its
renderer only passes text through (the response's tokens are the response's text). Prints one JSON
object."""

import asyncio
import json
import sys

from datasets import Dataset

import tinker_cookbook.eval.benchmarks._arena_hard as arena
from tinker_cookbook.eval.benchmarks._types import BenchmarkConfig


class TextRenderer:
    def get_stop_sequences(self) -> list:
        return []

    def build_generation_prompt(self, messages):
        return list(messages)

    def parse_response(self, action):
        return {"role": "assistant", "content": action}, True


class RecordingJudge:
    def __init__(self, reply):
        self.reply = reply
        self.asked = []

    async def __call__(self, messages):
        self.asked.append(messages)
        if self.reply is None:
            raise RuntimeError("judge unavailable")
        return {"role": "assistant", "content": self.reply}


async def main() -> None:
    cases = json.load(sys.stdin)
    rows = cases["rows"]
    arena.load_benchmark_dataset = lambda *a, **k: Dataset.from_list(rows)
    builder = arena.ArenaHardBenchmarkBuilder()
    renderer = TextRenderer()
    envs = builder.make_envs(renderer, BenchmarkConfig(judge_sampling_client=object()))
    examples = []
    for env in envs:
        prompt, _ = await env.initial_observation()
        examples.append({"id": env.example_id, "question": env.question, "cluster": str(env.cluster), "messages": prompt})

    steps = []
    rewards = []
    metrics_list = []
    for row, answer, reply in cases["grades"]:
        env = envs[row]
        judge = RecordingJudge(reply)
        env.judge_completer = judge
        result = await env.step(answer)
        rewards.append(result.reward)
        metrics_list.append(result.metrics)
        steps.append({"judge_messages": judge.asked[0], "reward": result.reward, "metrics": result.metrics, "score": result.logs["score"]})
    agg = builder.aggregate(rewards, metrics_list)
    ratings = [arena._extract_judge_score(r) for r in cases["ratings"]]
    print(json.dumps({
        "examples": examples,
        "steps": steps,
        "ratings": ratings,
        "aggregate": {"score": agg.score, "num_correct": agg.num_correct, "num_examples": agg.num_examples, **agg.metrics},
    }))


asyncio.run(main())
