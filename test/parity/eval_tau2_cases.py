"""The reference's tau2-Bench benchmark (tinker-cookbook 0.6.1 eval/benchmarks/_tau2_bench.py) on
the cases eval-tau2.parity.test.ts sends on stdin. Its download cache is pointed at the given
folder (the shipped sample, in the cache's layout), so it never downloads.

Prints one JSON object: the envs its builder makes (example id, system prompt, tool definitions,
user scenario, expected actions), the tool conversion of edge-case definitions, the backend's
answers to sequences of calls (one backend per sequence: state per episode), the grading of
predicted calls, the agent's end signal, and scripted episodes through its Tau2MessageEnv (the
agent's messages and the customer's replies given; the customer prompts it builds, each step's
reward / done / metrics, the conversation's tool results) with the builder's aggregate."""

import asyncio
import json
import sys
from pathlib import Path

import tinker_cookbook.eval.benchmarks._tau2_bench as tau2
from tinker_cookbook.eval.benchmarks._types import BenchmarkConfig
from tinker_cookbook.renderers.base import ToolCall

cases = json.load(sys.stdin)
tau2._TAU2_CACHE = Path(cases["cache"])


class ScriptedUser:
    """The customer: the given replies in order; records the prompts it is asked."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.asked = []

    async def __call__(self, messages):
        self.asked.append(messages)
        return {"role": "assistant", "content": self.replies.pop(0)}


def envs_of(system_prompt, limit):
    config = BenchmarkConfig(system_prompt=system_prompt, max_examples=limit)
    envs = tau2.Tau2BenchBenchmarkBuilder().make_envs(renderer=None, config=config)
    return [
        {
            "id": e.example_id,
            "system_prompt": e.system_prompt,
            "tools": e.tool_definitions,
            "user_scenario": e.user_scenario,
            "expected_actions": e.expected_actions,
        }
        for e in envs
    ]


def backend_answers(sequence):
    _tasks, _policy, db, tools = tau2._load_tau2_data("airline")
    backend = tau2.ToolBackend(db, tools)
    return [backend.execute(name, args) for name, args in sequence]


def to_message(m):
    msg = {"role": "assistant", "content": m["content"]}
    if m.get("tool_calls"):
        msg["tool_calls"] = [
            ToolCall(function=ToolCall.FunctionBody(name=c["name"], arguments=c["arguments"]), id=c["id"])
            for c in m["tool_calls"]
        ]
    return msg


async def episode(case):
    tasks, _policy, db, tools_def = tau2._load_tau2_data("airline")
    task = tasks[case["task"]]
    backend = tau2.ToolBackend(db, tools_def)
    tools = [tau2._Tau2Tool(spec, backend) for spec in tools_def]
    user = ScriptedUser(case["replies"])
    scenario = task.get("user_scenario", {})
    opening = await tau2._simulate_user(user, scenario, [], is_opening=True)
    env = tau2.Tau2MessageEnv(
        tools=tools,
        initial_messages=[{"role": "system", "content": "policy"}, {"role": "user", "content": opening}],
        max_turns=case["max_turns"],
        backend=backend,
        expected_actions=task["evaluation_criteria"]["actions"],
        user_completer=user,
        user_scenario=scenario,
        example_id=f"tau2_bench_{task['id']}",
    )
    await env.initial_observation()
    steps = []
    for m in case["agent"]:
        result = await env.step(to_message(m))
        steps.append({"reward": result.reward, "done": result.episode_done, "metrics": result.metrics})
        if result.episode_done:
            break
    history = [
        {"role": h["role"], "content": h["content"]} for h in env.history if h["role"] in ("tool", "user")
    ]
    return {"asked": user.asked, "steps": steps, "history": history}


async def main():
    out = {
        "envs": envs_of(None, None),
        "envs_custom": [{"id": e["id"], "system_prompt": e["system_prompt"]} for e in envs_of("Be brief.", 2)],
        "converted": tau2._convert_tau2_tools_to_openai(cases["tools"]),
        "answers": [backend_answers(s) for s in cases["calls"]],
        "grades": [list(tau2._check_actions(g["predicted"], g["expected"])) for g in cases["grades"]],
        "done": [tau2.Tau2MessageEnv._is_agent_done(t) for t in cases["done"]],
        "episodes": [await episode(c) for c in cases["episodes"]],
    }
    rewards = [e["steps"][-1]["reward"] for e in out["episodes"]]
    agg = tau2.Tau2BenchBenchmarkBuilder().aggregate(rewards, [e["steps"][-1]["metrics"] for e in out["episodes"]])
    out["aggregate"] = {"score": agg.score, "num_correct": agg.num_correct, "num_examples": agg.num_examples}
    print(json.dumps(out))


asyncio.run(main())
