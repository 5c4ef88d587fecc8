"""The reference's code benchmarks (tinker-cookbook 0.6.1 eval/benchmarks/mbpp.py and
_livecodebench.py) on the cases eval-code.parity.test.ts sends on stdin: the envs its builders make
from the given rows (their datasets are these rows instead of the Hub's), each env's prompt and id,
the code extract_python_code takes from each response, each response's verdict, and the aggregate.

The reference runs code in a sandbox given as BenchmarkConfig.sandbox_factory (Modal by default);
here it is a host sandbox: files written under a private temporary folder (the commands' /tmp/
paths pointed there) and commands run by the shell with their timeout. Prints one JSON object."""

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile

from datasets import Dataset

import tinker_cookbook.eval.benchmarks._livecodebench as lcb_module
import tinker_cookbook.eval.benchmarks.mbpp as mbpp_module
from tinker_cookbook.eval.benchmarks._common import extract_python_code
from tinker_cookbook.eval.benchmarks._types import BenchmarkConfig
from tinker_cookbook.sandbox.sandbox_interface import SandboxResult


class HostSandbox:
    def __init__(self) -> None:
        self.root = tempfile.mkdtemp(prefix="eval-code-parity-")
        self.sandbox_id = self.root

    def _here(self, text: str) -> str:
        return text.replace("/tmp/", self.root + "/")

    async def write_file(self, path: str, content: str, executable: bool = False, timeout: int = 60) -> SandboxResult:
        with open(self._here(path), "w") as f:
            f.write(content)
        return SandboxResult(stdout="", stderr="", exit_code=0)

    async def run_command(self, command: str, workdir=None, timeout: int = 60, max_output_bytes=None) -> SandboxResult:
        try:
            p = subprocess.run(self._here(command), shell=True, capture_output=True, text=True, timeout=timeout, cwd=self.root)
        except subprocess.TimeoutExpired:
            return SandboxResult(stdout="", stderr="timeout", exit_code=124)
        return SandboxResult(stdout=p.stdout, stderr=p.stderr, exit_code=p.returncode)

    async def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


async def host_sandbox() -> HostSandbox:
    return HostSandbox()


class NoRenderer:
    """MBPP's env wrapper asks its renderer for stop sequences when made; nothing here renders."""

    def get_stop_sequences(self) -> list:
        return []


def make_envs(module, builder_cls, rows, system_prompt):
    module.load_benchmark_dataset = lambda *args, **kwargs: Dataset.from_list(rows)
    config = BenchmarkConfig(sandbox_factory=host_sandbox, system_prompt=system_prompt)
    return builder_cls().make_envs(NoRenderer(), config)


async def mbpp_case(case) -> dict:
    envs = make_envs(mbpp_module, mbpp_module.MBPPBenchmarkBuilder, case["rows"], case["system_prompt"])
    out: dict = {"examples": [], "verdicts": []}
    for env in envs:
        msg_env = env.message_env
        messages = await msg_env.initial_observation()
        await msg_env.cleanup()
        out["examples"].append({"id": msg_env.example_id, "messages": messages})
    for row, response in case["responses"]:
        msg_env = envs[row].message_env
        msg_env._cleaned_up = False
        await msg_env.initial_observation()
        result = await msg_env.step({"role": "assistant", "content": response})
        out["verdicts"].append({"code": extract_python_code(response), "reward": result.reward})
    return out


async def lcb_case(case) -> dict:
    builder = lcb_module.LiveCodeBenchBenchmarkBuilder()
    envs = make_envs(lcb_module, lcb_module.LiveCodeBenchBenchmarkBuilder, case["rows"], None)
    out: dict = {"examples": [{"id": e.example_id, "prompt": e.prompt, "difficulty": e.difficulty} for e in envs], "verdicts": []}
    rewards, metrics = [], []
    for row, response in case["responses"]:
        env = envs[row]
        env.sandbox = await host_sandbox()
        code = extract_python_code(response)
        passed = await env._check_solution(code)
        await env.sandbox.cleanup()
        out["verdicts"].append({"code": code, "reward": 1.0 if passed else 0.0})
        rewards.append(1.0 if passed else 0.0)
        metrics.append({"correct": float(passed), "difficulty": env.difficulty})
    out["aggregate"] = builder.aggregate(rewards, metrics).metrics
    return out


async def main() -> None:
    cases = json.load(sys.stdin)
    print(
        json.dumps(
            {
                "extracted": [extract_python_code(t) for t in cases["extract"]],
                "mbpp": await mbpp_case(cases["mbpp"]),
                "livecodebench": await lcb_case(cases["livecodebench"]),
            }
        )
    )


asyncio.run(main())
