"""The reference's terminal_bench benchmark (tinker-cookbook 0.6.1 eval/benchmarks/_terminal_bench.py)
on the cases eval-terminal-bench.parity.test.ts sends on stdin: _parse_task on the shipped rows (read
with `datasets` as the reference loads them) and on edge rows (archives this script builds with
tarfile in each format, task.yaml texts, fallback columns); the bash tool's spec and its output for
given command results; the reward for given test-run outcomes and histories; the system prompt.
Prints one JSON object; bytes travel as base64."""

import asyncio
import base64
import gzip
import io
import json
import logging
import sys
import tarfile

from datasets import load_dataset

from tinker_cookbook.eval.benchmarks._terminal_bench import (
    MAX_TURNS,
    _SYSTEM_PROMPT,
    _BashTool,
    _parse_task,
    _TerminalBenchReward,
)
from tinker_cookbook.sandbox.sandbox_interface import SandboxResult
from tinker_cookbook.tool_use.types import ToolInput

logging.disable(logging.CRITICAL)


def tar_gz(members: list[tuple[str, str, bytes]], fmt: int) -> bytes:
    """members: (kind, name, data) with kind file, dir, symlink or hardlink."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for kind, name, data in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE}[kind]
            info.linkname = data.decode()
            tar.addfile(info)
    return gzip.compress(buf.getvalue(), mtime=0)


LONG = "deep/" * 30 + "notes.txt"
EDGE_ARCHIVES = {
    "gnu_long_names": tar_gz(
        [("dir", "./tests", b""), ("file", f"./{LONG}", b"long"), ("file", "./tests/run-tests.sh", b"nested tests"), ("file", "./run-tests.sh", b"top tests")],
        tarfile.GNU_FORMAT,
    ),
    "pax_unicode": tar_gz(
        [("file", "./données/é.txt", "héllo".encode()), ("file", "./run-tests.sh", b"#!/bin/bash\nexit 0\n"), ("symlink", "./link.sh", b"run-tests.sh")],
        tarfile.PAX_FORMAT,
    ),
    "ustar_prefix": tar_gz(
        [("file", "a" * 60 + "/" + "b" * 60 + "/c.txt", b"split name"), ("file", "solution.sh", b"secret"), ("file", "solutions/x.py", b"also secret"), ("file", "tests/solution_test.py", b"kept")],
        tarfile.USTAR_FORMAT,
    ),
    "hidden_and_dots": tar_gz(
        [("file", "./.env", b"A=1"), ("file", "../up.txt", b"up"), ("file", ".//x.sh", b"x"), ("hardlink", "./copy.sh", b".env"), ("file", "./.env", b"A=2")],
        tarfile.PAX_FORMAT,
    ),
    "bad_utf8": tar_gz([("file", "bin.dat", b"ok\xff\xfe\x80end\xe2\x82"), ("file", "run-tests.sh", b"\xc3\x28 exit 1")], tarfile.GNU_FORMAT),
    "empty_tar": tar_gz([], tarfile.PAX_FORMAT),
    "not_gzip": b"plain bytes, not gzip",
    "gzip_not_tar": gzip.compress(b"x" * 700, mtime=0),
}


def shown(instruction: object) -> str:
    """The instruction as the prompt shows it (f"## Task\n{x}"); None, which skips the row, as ""."""
    return "" if instruction is None else instruction if isinstance(instruction, str) else str(instruction)


def parsed(row: dict) -> dict:
    instruction, test_script, setup_files = _parse_task(row)
    return {"instruction": shown(instruction), "test_script": test_script, "setup_files": list(setup_files.items())}


def decode_row(row: dict) -> dict:
    out = dict(row)
    if isinstance(row.get("archive_b64"), str):
        out["archive"] = base64.b64decode(out.pop("archive_b64"))
    return out


class FakeSandbox:
    def __init__(self, result: dict | None):
        self.result = result
        self.calls: list[dict] = []

    async def run_command(self, command, workdir=None, timeout=60, max_output_bytes=None):
        self.calls.append({"command": command, "workdir": workdir, "timeout": timeout, "max_output_bytes": max_output_bytes})
        if self.result is None:
            raise RuntimeError("sandbox gone")
        return SandboxResult(stdout=self.result["stdout"], stderr=self.result["stderr"], exit_code=self.result["exit_code"])


async def tool_case(case: dict) -> dict:
    sandbox = FakeSandbox(case)
    tool = _BashTool(sandbox)
    result = await tool.bash.run(ToolInput(arguments={"command": case["command"]}))
    contents = [m["content"] for m in result.messages]
    return {"contents": contents, "calls": sandbox.calls, "commands_executed": tool.commands_executed}


async def reward_case(case: dict) -> dict:
    sandbox = FakeSandbox(case["run"])
    reward, metrics = await _TerminalBenchReward(sandbox, case["test_script"])(case["history"])
    return {"reward": reward, "metrics": metrics, "calls": sandbox.calls}


async def main() -> None:
    req = json.load(sys.stdin)
    shipped = load_dataset("parquet", data_files=req["shipped"], split="train")
    edge_rows = [{"task_id": name, "task_yaml": "instruction: edge\n", "archive": data} for name, data in EDGE_ARCHIVES.items()]
    spec = _BashTool(FakeSandbox(None)).bash.to_spec()
    out = {
        "shipped": [parsed(dict(r)) for r in shipped],
        "edge_archives": [{"archive_b64": base64.b64encode(r["archive"]).decode(), **parsed(r)} for r in edge_rows],
        "rows": [parsed(decode_row(r)) for r in req["rows"]],
        "yaml": [shown(_parse_task({"task_yaml": y})[0]) for y in req["yaml"]],
        "tool": [await tool_case(c) for c in req["tool"]],
        "reward": [await reward_case(c) for c in req["reward"]],
        "spec": spec if isinstance(spec, dict) else dict(spec),
        "system_prompt": _SYSTEM_PROMPT,
        "max_turns": MAX_TURNS,
    }
    json.dump(out, sys.stdout)


asyncio.run(main())
