"""The reference's swe_bench benchmark (tinker-cookbook 0.6.1 eval/benchmarks/_swe_bench.py) on the
cases eval-swe-bench.parity.test.ts sends on stdin: make_envs on the shipped rows (read with
`datasets` as the reference loads them) and on edge rows, each env's fields; _parse_test_ids on raw
values; initial_observation against a fake sandbox and renderer (the setup commands, the test
patch's apply and --3way fallback, the system prompt, the user message, the agent env's settings,
a failing clone's error); the bash tool's spec, command and output; the reward; aggregate.
Prints one JSON object."""

import asyncio
import json
import logging
import sys

from datasets import load_dataset

import tinker_cookbook.eval.benchmarks._swe_bench as swe
from tinker_cookbook.eval.benchmarks._types import BenchmarkConfig
from tinker_cookbook.sandbox.sandbox_interface import SandboxResult
from tinker_cookbook.tool_use.types import ToolInput

logging.disable(logging.CRITICAL)


class FakeSandbox:
    """Answers each command with the next of `results` (the last repeats); None raises."""

    def __init__(self, results: list):
        self.results = results
        self.calls: list[dict] = []

    def _next(self):
        return self.results[min(len(self.calls) - 1, len(self.results) - 1)]

    async def run_command(self, command, workdir=None, timeout=60, max_output_bytes=None):
        self.calls.append({"op": "run", "command": command, "workdir": workdir, "timeout": timeout, "max_output_bytes": max_output_bytes})
        r = self._next()
        if r is None:
            raise RuntimeError("sandbox gone")
        return SandboxResult(stdout=r["stdout"], stderr=r["stderr"], exit_code=r["exit_code"])

    async def write_file(self, path, content, executable=False, timeout=60):
        self.calls.append({"op": "write", "path": path, "content": content})
        return SandboxResult(stdout="", stderr="", exit_code=0)

    async def cleanup(self):
        pass


class FakeRenderer:
    def create_conversation_prefix_with_tools(self, tools, system_prompt=""):
        return [{"role": "system", "content": system_prompt}]


class Captured:
    """Stands in for EnvFromMessageEnv: keeps what the factory hands it."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs

    async def initial_observation(self):
        return None


def env_fields(env) -> dict:
    return {
        "example_id": env.example_id,
        "instance_id": env.instance_id,
        "repo": env.repo,
        "base_commit": env.base_commit,
        "problem_statement": env.problem_statement,
        "hints_text": env.hints_text,
        "test_patch": env.test_patch,
        "fail_to_pass": env.fail_to_pass,
    }


def make_envs(rows, limit=None) -> list[dict]:
    swe.load_benchmark_dataset = lambda *_a, **_k: rows
    swe.limit_dataset = lambda ds, n: ds if n is None else ds[:n]
    swe.get_sandbox_factory = lambda *_a, **_k: None
    return [env_fields(e) for e in swe.SWEBenchBenchmarkBuilder().make_envs(FakeRenderer(), BenchmarkConfig(max_examples=limit))]


async def setup_case(case: dict) -> dict:
    sandbox = FakeSandbox(case["results"])

    async def factory():
        return sandbox

    swe.EnvFromMessageEnv = Captured
    env = swe._SWEBenchEnvFactory(
        repo=case["repo"], base_commit=case["base_commit"], problem_statement=case["problem_statement"], hints_text=case["hints_text"],
        instance_id="i", fail_to_pass=["t"], test_patch=case["test_patch"], sandbox_factory=factory, renderer=FakeRenderer(), example_id="e",
        system_prompt=case.get("system_prompt"),
    )
    try:
        await env.initial_observation()
    except RuntimeError as e:
        return {"calls": sandbox.calls, "error": str(e)}
    inner = env._inner.kwargs
    msg_env = inner["message_env"]
    return {
        "calls": sandbox.calls,
        "error": None,
        "messages": msg_env.initial_messages if hasattr(msg_env, "initial_messages") else None,
        "max_turns": msg_env.max_turns,
        "failed_parse_reward": inner["failed_parse_reward"],
        "terminate_on_parse_error": inner["terminate_on_parse_error"],
        "context_overflow_reward": inner["context_overflow_reward"],
    }


async def tool_case(case: dict) -> dict:
    sandbox = FakeSandbox([case])
    result = await swe._SWEBashTool(sandbox).bash.run(ToolInput(arguments={"command": case["command"]}))
    return {"contents": [m["content"] for m in result.messages], "calls": sandbox.calls}


async def reward_case(case: dict) -> dict:
    sandbox = FakeSandbox([case["run"]])
    reward, metrics = await swe._SWEBenchReward(sandbox, case["fail_to_pass"], "i")(case["history"])
    return {"reward": reward, "metrics": metrics, "calls": sandbox.calls}


def aggregate(builder, case: dict) -> dict:
    r = builder.aggregate(case["rewards"], case["metrics"])
    return {"score": r.score, "num_examples": r.num_examples, "num_correct": r.num_correct, "metrics": r.metrics}


async def main() -> None:
    req = json.load(sys.stdin)
    shipped = [dict(r) for r in load_dataset("json", data_files=req["shipped"], split="train")]
    builder = swe.SWEBenchBenchmarkBuilder()
    out = {
        "shipped": make_envs(shipped),
        "shipped_limit_1": make_envs(shipped, 1),
        "rows": make_envs(req["rows"]),
        "test_ids": [swe._parse_test_ids(raw) for raw in req["test_ids"]],
        "setup": [await setup_case(c) for c in req["setup"]],
        "tool": [await tool_case(c) for c in req["tool"]],
        "reward": [await reward_case(c) for c in req["reward"]],
        "spec": dict(swe._SWEBashTool(FakeSandbox([None])).bash.to_spec()),
        "aggregate": [aggregate(builder, a) for a in req["aggregate"]],
        "system_prompt": swe._SYSTEM_PROMPT,
        "max_turns": swe.MAX_TURNS,
    }
    json.dump(out, sys.stdout)


asyncio.run(main())
