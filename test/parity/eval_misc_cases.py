"""The reference's LongBench, BFCL and IFBench benchmarks (tinker-cookbook 0.6.1, eval/benchmarks)
on the cases eval-misc.parity.test.ts sends on stdin. Prints one JSON object.

Each builder's make_envs runs on the given rows (its dataset loader pointed at them, as plain dicts:
the Hub's Arrow schema would add null fields to BFCL's differently shaped rows, see docs/eval.md),
and each env's step grades the given response texts (decode_response / the raw decode replaced by
the text itself, which is what our graders receive). IFBench's verdicts need its checker library,
which no registry here serves; its goldens come from test/fixtures/ifbench_gen_goldens.py."""

import asyncio
import json
import sys

import datasets

import tinker_cookbook.eval.benchmarks._bfcl as bfcl_mod
import tinker_cookbook.eval.benchmarks._longbench as longbench_mod
import tinker_cookbook.eval.benchmarks.ifbench as ifbench_mod
from tinker_cookbook.eval.benchmarks._types import BenchmarkConfig


class _Renderer:
    """What make_envs and step touch: nothing but a raw decode that is the text itself."""

    class tokenizer:  # noqa: N801
        @staticmethod
        def decode(action):
            return action


async def _grade(env, response):
    result = await env.step(response)
    return {"reward": result.reward, "metrics": result.metrics, "logs": result.logs}


def _result(r):
    return {"score": r.score, "num_examples": r.num_examples, "num_correct": r.num_correct, "metrics": r.metrics}


async def main() -> None:
    cases = json.load(sys.stdin)
    config = BenchmarkConfig()
    renderer = _Renderer()
    out = {}

    # LongBench: prompts, then each response graded against each example.
    longbench_mod._load_longbench = lambda: cases["longbench"]["rows"]
    longbench_mod.decode_response = lambda action, _renderer: action
    builder = longbench_mod.LongBenchBenchmarkBuilder()
    envs = builder.make_envs(renderer, config)
    out["longbench"] = {
        "examples": [
            {"id": e.example_id, "prompt": e.user_content, "expected": e.expected, "subtask": e.subtask, "is_mcq": e.is_mcq}
            for e in envs
        ],
        "grades": [[await _grade(e, r) for r in cases["longbench"]["responses"]] for e in envs],
    }
    # --limit: limit_dataset shuffles a datasets.Dataset (rows of one shape, so Arrow adds no nulls).
    longbench_mod._load_longbench = lambda: datasets.Dataset.from_list(cases["longbench"]["limit_rows"])
    limited = builder.make_envs(renderer, BenchmarkConfig(max_examples=cases["longbench"]["limit"]))
    out["longbench"]["limited"] = [e.example_id for e in limited]
    graded = [await _grade(envs[i % len(envs)], r) for i, r in enumerate(cases["longbench"]["responses"])]
    out["longbench"]["aggregate"] = _result(builder.aggregate([g["reward"] for g in graded], [g["metrics"] for g in graded]))

    # BFCL: the question file's rows and the possible_answer file's, as the loader would hand them.
    def load_dataset(_repo, data_files, split, **_kwargs):
        return cases["bfcl"]["answers"] if data_files.startswith("possible_answer/") else cases["bfcl"]["rows"]

    bfcl_mod.load_dataset = load_dataset
    envs = bfcl_mod.BFCLBenchmarkBuilder().make_envs(renderer, config)
    out["bfcl"] = {
        "examples": [{"id": e.example_id, "prompt": e.prompt, "expected": e.expected} for e in envs],
        "grades": [[(await _grade(e, r))["reward"] for r in cases["bfcl"]["responses"]] for e in envs],
    }

    # IFBench: prompts and ids, and the aggregate of given rewards and fractions.
    ifbench_mod.load_benchmark_dataset = lambda *_a, **_k: cases["ifbench"]["rows"]
    builder = ifbench_mod.IFBenchBenchmarkBuilder()
    envs = builder.make_envs(renderer, config)
    agg = cases["ifbench"]["aggregate"]
    out["ifbench"] = {
        "examples": [{"id": e.example_id, "prompt": e.prompt, "ids": e.instruction_ids, "kwargs": e.kwargs_list} for e in envs],
        "aggregate": _result(builder.aggregate(agg["rewards"], [{"fraction": f} for f in agg["fractions"]])),
    }
    print(json.dumps(out))


asyncio.run(main())
