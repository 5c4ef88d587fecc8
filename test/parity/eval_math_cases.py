"""The reference's math-answer benchmarks (tinker-cookbook 0.6.1: aime, aime_2025, aime_2026,
hmmt_feb_2025, hmmt_nov_2025, gsm8k, math500) on rows handed in, for eval-math.parity.test.ts.

stdin: {"suites": [{"name", "rows": {split: [row, ...]}, "system_prompt", "responses": [str, ...],
"assigned": [str, ...]}], "math_equal": [[extracted, expected], ...], "gsm8k": [[response,
expected], ...]}.
Each benchmark's load_benchmark_dataset is replaced by one that serves `rows` for the splits given
(another split raises, as the Hub does for a split a dataset lacks) and records the (path, name,
split) it was asked for.
stdout: per suite the loader calls, each example's id, prompt messages and expected answer, its
reward and logged `extracted` for every response; the aggregate of example j graded on
assigned[j]; _check_math_equal (HMMT) on the pairs, and check_gsm8k / extract_gsm8k_answer on the
GSM8K cases.

HMMT's symbolic step needs sympy's parse_latex, which needs antlr4-python3-runtime 4.11 (see
requirements.txt); without it the reference silently grades every symbolic match wrong, so this
script refuses to run rather than record such verdicts.
"""

import asyncio
import json
import sys

from datasets import Dataset
from sympy.parsing.latex import parse_latex

from tinker_cookbook.eval.benchmarks import _hmmt, aime, gsm8k, math500
from tinker_cookbook.eval.benchmarks._common import check_gsm8k, extract_gsm8k_answer
from tinker_cookbook.eval.benchmarks._types import BenchmarkConfig

parse_latex("1")  # raises ImportError when antlr4-python3-runtime 4.11 is missing


class NoRenderer:
    """EnvFromMessageEnv asks its renderer for stop sequences when built; nothing here samples."""

    def get_stop_sequences(self):
        return []

BUILDERS = {
    "aime": (aime, lambda: aime._AIMEBenchmarkBuilder("2025", "aime")),
    "aime_2025": (aime, lambda: aime._AIMEBenchmarkBuilder("2025", "aime_2025")),
    "aime_2026": (aime, lambda: aime._AIMEBenchmarkBuilder("2026", "aime_2026")),
    "hmmt_feb_2025": (_hmmt, lambda: _hmmt._HMMTBenchmarkBuilder("feb_2025", "hmmt_feb_2025")),
    "hmmt_nov_2025": (_hmmt, lambda: _hmmt._HMMTBenchmarkBuilder("nov_2025", "hmmt_nov_2025")),
    "gsm8k": (gsm8k, gsm8k.GSM8KBenchmarkBuilder),
    "math500": (math500, math500.MATH500BenchmarkBuilder),
}


async def run_suite(case):
    module, make_builder = BUILDERS[case["name"]]
    calls = []

    def load(path, name=None, split="test", trust_remote_code=None):
        calls.append([path, name, split])
        rows = case["rows"].get(split)
        if rows is None:
            raise ValueError(f"no split {split}")
        return Dataset.from_list(rows)

    module.load_benchmark_dataset = load
    builder = make_builder()
    # As run_benchmark does: no system prompt given (None) takes the benchmark's recommended one.
    system_prompt = case["system_prompt"]
    if system_prompt is None and builder.recommended_system_prompt is not None:
        system_prompt = builder.recommended_system_prompt
    envs = builder.make_envs(NoRenderer(), BenchmarkConfig(system_prompt=system_prompt))
    examples, rewards, metrics = [], [], []
    for j, env in enumerate(envs):
        msg_env = env.message_env
        graded = []
        for response in case["responses"]:
            step = await msg_env.step({"role": "assistant", "content": response})
            graded.append({"reward": step.reward, "extracted": step.logs["extracted"]})
        # The expected answer as the env logs it (AIME's int as a string).
        logged = (await msg_env.step({"role": "assistant", "content": ""})).logs
        examples.append({
            "id": msg_env.example_id,
            "messages": await msg_env.initial_observation(),
            "expected": logged["expected"],
            "graded": graded,
        })
        if j < len(case["assigned"]):
            step = await msg_env.step({"role": "assistant", "content": case["assigned"][j]})
            rewards.append(step.reward)
            metrics.append(step.metrics)
    result = builder.aggregate(rewards, metrics)
    return {
        "name": case["name"],
        "calls": calls,
        "examples": examples,
        "aggregate": {"score": result.score, "num_correct": result.num_correct, "num_examples": result.num_examples},
    }


async def main():
    req = json.load(sys.stdin)
    suites = [await run_suite(c) for c in req["suites"]]
    math_equal = [_hmmt._check_math_equal(a, b) for a, b in req["math_equal"]]
    gsm = [[extract_gsm8k_answer(r), check_gsm8k(r, e)] for r, e in req["gsm8k"]]
    json.dump({"suites": suites, "math_equal": math_equal, "gsm8k": gsm}, sys.stdout)


asyncio.run(main())
