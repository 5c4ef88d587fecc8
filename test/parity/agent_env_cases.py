"""The reference's tool-using agent env (tinker-cookbook 0.6.1 build_agent_tool_env with its own
renderers) stepped with the tokens agent-env-families.parity.test.ts sends: for each renderer
family and scenario, the initial observation, then per action the renderer's parse_response and
the env's step result (reward, done, metrics, logs, next observation), and the tool calls that ran.

Reads one JSON document on stdin, {"families": [{"renderer", "tokenizer_dir", "scenarios": [{"id",
"actions": [[int]], "policy": {...} | null, "max_tool_calls": int | null}]}]}; prints one JSON
document, {"families": [{"renderer", "scenarios": [{"id", "initial", "steps", "calls"}]}]}.
"""

import asyncio
import json
import logging
import math
import sys
from typing import Annotated, Any

import pydantic
from transformers import AutoTokenizer

from tinker_cookbook import renderers
from tinker_cookbook.rl.rollout_limits import ParseErrorPolicy
from tinker_cookbook.tool_use import ToolResult, build_agent_tool_env, simple_tool_result, tool


def jsonable(x: Any) -> Any:
    if isinstance(x, pydantic.BaseModel):
        return jsonable(x.model_dump())
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return {"float": repr(x)}
    if hasattr(x, "value") and isinstance(getattr(x, "value"), str):  # StrEnum
        return x.value
    return x


def make_tools(calls: list[str]):
    @tool
    async def lookup(word: Annotated[str, "The word to look up"], limit: int = 1) -> ToolResult:
        """Look a word up."""
        calls.append(f"lookup({word!r}, {limit!r})")
        return simple_tool_result(f"{word}: a small feline ({limit})")

    return [lookup]


async def reward_fn(messages: list) -> tuple[float, dict[str, float]]:
    return 1.0, {"graded": 1.0}


async def run_scenario(renderer, scenario: dict) -> dict:
    calls: list[str] = []
    tools = make_tools(calls)
    initial = [
        *renderer.create_conversation_prefix_with_tools([t.to_spec() for t in tools]),
        {"role": "user", "content": "Define cat."},
    ]
    policy = ParseErrorPolicy(**scenario["policy"]) if scenario.get("policy") else None
    env = build_agent_tool_env(
        renderer,
        tools,
        initial,
        reward_fn,
        max_turns=scenario.get("max_turns") or 5,
        max_tool_calls=scenario.get("max_tool_calls"),
        parse_error_policy=policy,
    )
    ob, _stop = await env.initial_observation()
    steps = []
    for action in scenario["actions"]:
        message, termination = renderer.parse_response(action)
        result = await env.step(action)
        steps.append(
            {
                "parse": {"message": jsonable(message), "termination": jsonable(termination)},
                "reward": result.reward,
                "episode_done": result.episode_done,
                "metrics": jsonable(result.metrics),
                "logs": jsonable(result.logs),
                "next_observation": result.next_observation.to_ints(),
            }
        )
        if result.episode_done:
            break
    return {"id": scenario["id"], "initial": ob.to_ints(), "steps": steps, "calls": calls}


async def main() -> None:
    logging.disable(logging.WARNING)
    request = json.load(sys.stdin)
    out = []
    for family in request["families"]:
        tokenizer = AutoTokenizer.from_pretrained(family["tokenizer_dir"])
        renderer = renderers.get_renderer(family["renderer"], tokenizer)
        scenarios = [await run_scenario(renderer, s) for s in family["scenarios"]]
        out.append({"renderer": family["renderer"], "scenarios": scenarios})
    print(json.dumps({"families": out}))


asyncio.run(main())
