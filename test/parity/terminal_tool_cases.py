"""The reference's harbor_rl recipe (tinker-cookbook 0.6.1 harbor_tools.py, harbor_env.py) on the cases
terminal-tool.parity.test.ts sends on stdin: the bash tool's spec and the rendered conversation prefix
(_initial_messages) per renderer, the bash tool's message for given sandbox results, HarborReward's
sandbox calls and reward, load_harbor_tasks on a folder, and HarborDataset's batches. Prints one JSON
object.

The sandbox is a scripted fake (the same script the test's TypeScript fake follows): run_command
answers from `commands` by command (else empty output, exit 0), read_file from `files` by path (else
cat's missing-file answer), write_file succeeds; every call is recorded with the interface's defaults
filled in, and the call numbered `raise_on` raises after being recorded.

harbor_env.py imports modal (through ModalSandbox) at module level; modal is not installed here and
nothing compared uses it, so an empty module stands in for it. The reference walks a task's tests/ with
Path.rglob, which lists each folder in the filesystem's directory order (arbitrary); Path._scandir is
made to list in name order so that what is compared is the walk itself.
"""

import asyncio
import json
import logging
import math
import os
import sys
import types
from pathlib import Path
from typing import Any

sys.modules["modal"] = types.ModuleType("modal")

from transformers import AutoTokenizer  # noqa: E402

from tinker_cookbook import renderers  # noqa: E402
from tinker_cookbook.recipes.harbor_rl import harbor_env  # noqa: E402
from tinker_cookbook.recipes.harbor_rl.harbor_tools import HarborBashTool, HarborReward  # noqa: E402
from tinker_cookbook.renderers.base import ToolCall  # noqa: E402
from tinker_cookbook.sandbox.sandbox_interface import SandboxResult  # noqa: E402
from tinker_cookbook.tool_use import handle_tool_call  # noqa: E402


class _NameOrderScandir:
    def __init__(self, path: Path) -> None:
        with os.scandir(path) as it:
            self._entries = sorted(it, key=lambda e: e.name)

    def __enter__(self):
        return iter(self._entries)

    def __exit__(self, *exc: object) -> None:
        return None


Path._scandir = lambda self: _NameOrderScandir(self)  # type: ignore[method-assign]


def jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return {"float": repr(x)}
    return x


class FakeSandbox:
    def __init__(self, script: dict[str, Any]) -> None:
        self.commands: dict[str, dict] = script.get("commands", {})
        self.files: dict[str, dict] = script.get("files", {})
        self.raise_on: int | None = script.get("raise_on")
        self.calls: list[dict] = []

    @property
    def sandbox_id(self) -> str:
        return "fake"

    def _record(self, call: dict) -> None:
        self.calls.append(call)
        if self.raise_on is not None and len(self.calls) - 1 == self.raise_on:
            raise RuntimeError(f"sandbox died during {call['op']}")

    @staticmethod
    def _result(r: dict) -> SandboxResult:
        return SandboxResult(stdout=r["stdout"], stderr=r["stderr"], exit_code=r["exit_code"])

    async def send_heartbeat(self, timeout: int = 30) -> None:
        return None

    async def run_command(self, command: str, workdir: str | None = None, timeout: int = 60, max_output_bytes: int | None = None) -> SandboxResult:
        self._record({"op": "run_command", "command": command, "workdir": workdir, "timeout": timeout, "max_output_bytes": max_output_bytes})
        return self._result(self.commands.get(command, {"stdout": "", "stderr": "", "exit_code": 0}))

    async def read_file(self, path: str, max_bytes: int | None = None, timeout: int = 60) -> SandboxResult:
        self._record({"op": "read_file", "path": path, "max_bytes": max_bytes, "timeout": timeout})
        missing = {"stdout": "", "stderr": f"cat: {path}: No such file or directory", "exit_code": 1}
        return self._result(self.files.get(path, missing))

    async def write_file(self, path: str, content: str | bytes = "", executable: bool = False, timeout: int = 60) -> SandboxResult:
        self._record({"op": "write_file", "path": path, "content": content, "executable": executable, "timeout": timeout})
        return self._result({"stdout": "", "stderr": "", "exit_code": 0})

    async def cleanup(self) -> None:
        return None


async def bash_case(case: dict) -> dict:
    sandbox = FakeSandbox(case["script"])
    tool = HarborBashTool(sandbox, command_timeout=case["command_timeout"]).bash  # type: ignore[arg-type]
    call = ToolCall(function=ToolCall.FunctionBody(name="bash", arguments=json.dumps({"command": case["command"]})), id="call-1")
    result = await handle_tool_call({"bash": tool}, call)
    return {
        "calls": sandbox.calls,
        "result": {"messages": result.messages, "should_stop": result.should_stop, "metrics": result.metrics, "metadata": result.metadata},
    }


async def reward_case(case: dict) -> dict:
    sandbox = FakeSandbox(case["script"])
    reward_fn = HarborReward(tests_dir=Path(case["tests_dir"]), sandbox=sandbox, grader_timeout=case["grader_timeout"])  # type: ignore[arg-type]
    reward, metrics = await reward_fn([{"role": "user", "content": "done"}])
    return {"calls": sandbox.calls, "reward": jsonable(reward), "metrics": jsonable(metrics)}


def prefixes(family: dict, tasks: list[harbor_env.HarborTask]) -> dict:
    tokenizer = AutoTokenizer.from_pretrained(family["tokenizer_dir"])
    renderer = renderers.get_renderer(family["renderer"], tokenizer)
    bash = HarborBashTool(FakeSandbox({}))  # type: ignore[arg-type]
    out = []
    for task in tasks:
        messages = harbor_env._initial_messages(task, renderer, bash)
        out.append({"messages": messages, "tokens": renderer.build_generation_prompt(messages).to_ints()})
    return {"renderer": family["renderer"], "prefixes": out}


async def main() -> None:
    logging.disable(logging.CRITICAL)
    cases = json.load(sys.stdin)
    tasks_dir = Path(cases["tasks_dir"])
    harbor_env.HARBOR_CACHE_DIR = tasks_dir.parent
    tasks = harbor_env.load_harbor_tasks(tasks_dir.name)
    prompt_tasks = [t for t in tasks if t.task_name in cases["prompt_tasks"]] + [
        harbor_env.HarborTask(task_name=t["task_name"], instruction=t["instruction"], task_dir=Path(t["task_dir"])) for t in cases["extra_prompt_tasks"]
    ]
    batching = []
    for b in cases["batching"]:
        dataset = harbor_env.HarborDataset(list(range(b["n"])), b["batch_size"])  # type: ignore[arg-type]
        batching.append({"len": len(dataset), "batches": {str(i): list(dataset.get_batch(i)) for i in b["indices"]}})
    print(
        json.dumps(
            {
                "system_prompt": harbor_env.HARBOR_SYSTEM_PROMPT,
                "spec": HarborBashTool(FakeSandbox({})).bash.to_spec(),  # type: ignore[arg-type]
                "tasks": [{"task_name": t.task_name, "instruction": t.instruction, "task_dir": str(t.task_dir), "config": t.config} for t in tasks],
                "renderers": [prefixes(f, prompt_tasks) for f in cases["renderers"]],
                "bash": [await bash_case(c) for c in cases["bash"]],
                "rewards": [await reward_case(c) for c in cases["rewards"]],
                "batching": batching,
            }
        )
    )


asyncio.run(main())
