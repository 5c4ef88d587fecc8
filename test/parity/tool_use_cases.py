"""The reference's tool_use and sandbox packages (tinker-cookbook 0.6.1) on the cases of
tool-use.parity.test.ts: @tool specs, handle_tool_call's messages, and its SandboxFusionClient
against the URL given as argv[1]. Prints one JSON object."""

import asyncio
import json
import sys
from typing import Annotated, Literal

from tinker_cookbook.renderers.base import ToolCall
from tinker_cookbook.sandbox import SandboxFusionClient
from tinker_cookbook.tool_use import ToolResult, handle_tool_call, simple_tool_result, tool


@tool
async def search(
    query: Annotated[str, "Search query"],
    max_results: Annotated[int, "How many"] = 5,
    mode: Literal["a", "b"] = "a",
    tags: list[str] | None = None,
) -> ToolResult:
    """Search for information."""
    return simple_tool_result(f"{query}:{max_results}:{mode}")


@tool
async def run_python(code: Annotated[str, "Python source to run"], timeout_s: float = 2.5, verbose: bool = False) -> ToolResult:
    """Run Python code and return its output."""
    return simple_tool_result("ran")


@tool
async def boom() -> ToolResult:
    """Always fails."""
    raise RuntimeError("disk on fire")


def call(name: str, arguments: str, id: str | None = "c1") -> ToolCall:
    return ToolCall(function=ToolCall.FunctionBody(name=name, arguments=arguments), id=id)


async def main() -> None:
    tools = {t.name: t for t in (search, run_python, boom)}
    calls = [
        call("search", '{"query": "cats"}'),
        call("search", '{"query": "cats", "max_results": 2, "mode": "b"}'),
        call("nope", "{}", None),
        call("search", "{bad"),
        call("boom", "{}"),
    ]
    results = [await handle_tool_call(tools, c) for c in calls]
    out: dict = {
        "specs": [t.to_spec() for t in (search, run_python, boom)],
        "results": [{"messages": r.messages, "metadata": r.metadata, "should_stop": r.should_stop} for r in results],
    }
    if len(sys.argv) > 1:
        client = SandboxFusionClient(url=sys.argv[1], max_concurrency=2)
        runs = []
        for code, files, timeout in [
            ("print(open('in.txt').read()[::-1])", {"in.txt": "olleh"}, 5),
            ("import sys; print('partial'); sys.exit(4)", {}, 5),
            ("import time; time.sleep(30)", {}, 1),
        ]:
            ok, response = await client.run(code=code, files=files, timeout=timeout)
            runs.append([ok, response])
        await client.close()
        out["sandbox"] = runs
    print(json.dumps(out))


asyncio.run(main())
