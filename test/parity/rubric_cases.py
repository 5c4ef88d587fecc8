"""The reference's rubric recipe (tinker-cookbook 0.6.1) on the cases rubric.parity.test.ts sends
on stdin: generate_data's files for (num_train, num_test, seed); PrometheusDatapointListBuilder on a
local copy of the Feedback Collection (load_dataset of the folder) with each datapoint's JSON, its
policy prompt (the qwen3 renderer on a local tokenizer) and its grader prompt for a completion;
Rubric.get_grader_prompt and extract_score on given strings; RubricGradedEnv.step with a grader
that answers given replies; and prometheus_experimental's CLIConfig defaults. Prints one JSON object."""

import asyncio
import contextlib
import json
import sys
import tempfile

from transformers import AutoTokenizer

from tinker_cookbook.recipes.rubric.data import PrometheusDatapointListBuilder, Rubric, RubricBasedDatapoint
from tinker_cookbook.recipes.rubric.env import RubricGradedEnv
from tinker_cookbook.recipes.rubric.generate_data import generate_dataset
from tinker_cookbook.recipes.rubric.prometheus_experimental import CLIConfig
from tinker_cookbook.renderers import get_renderer


# The prometheus_experimental CLIConfig fields configs/rl_rubric_prometheus.json carries.
CLI_FIELDS = [
    "model_name", "lora_rank", "renderer_name", "seed", "train_group_size", "groups_per_batch", "learning_rate",
    "max_tokens", "temperature", "kl_penalty_coef", "grader_llm_name", "grader_renderer_name", "num_substeps",
    "compute_post_kl", "eval_every", "save_every", "loss_fn", "max_steps", "load_checkpoint_path",
]


def generated(case: dict) -> dict:
    with tempfile.TemporaryDirectory() as d:
        train, test = generate_dataset(case["num_train"], case["num_test"], case["seed"], d)
        with open(train) as f_train, open(test) as f_test:
            return {"train": f_train.read(), "test": f_test.read()}


def rubric_of(d: dict) -> Rubric:
    return Rubric(**d)


class ScriptedGrader:
    def __init__(self, replies: list[str]):
        self.replies = list(replies)
        self.prompts: list[str] = []

    async def __call__(self, messages):
        self.prompts.append(messages[0]["content"])
        return {"role": "assistant", "content": self.replies.pop(0)}


async def step(case: dict, renderer, tokenizer) -> dict:
    grader = ScriptedGrader(case["grader_replies"])
    env = RubricGradedEnv(renderer, RubricBasedDatapoint.from_json(json.dumps(case["datapoint"])), grader)
    ob, _stop = await env.initial_observation()
    action = tokenizer.encode(case["action"], add_special_tokens=False)
    result = await env.step(action)
    return {
        "ob": ob.to_ints(),
        "reward": result.reward,
        "done": result.episode_done,
        "metrics": result.metrics,
        "format_valid": result.logs["format_valid"],
        "grader_prompts": grader.prompts,
        "next_ob": result.next_observation.to_ints(),
    }


def main() -> dict:
    cases = json.load(sys.stdin)
    tokenizer = AutoTokenizer.from_pretrained(cases["tokenizer_dir"])
    renderer = get_renderer("qwen3", tokenizer)
    datapoints = PrometheusDatapointListBuilder(data_path=cases["prometheus_dir"])()
    completion = {"role": "assistant", "content": cases["completion"]}
    return {
        "generated": [generated(c) for c in cases["generate"]],
        "prometheus": [
            {
                "json": d.to_json(),
                "prompt": renderer.build_generation_prompt(d.convo).to_ints(),
                "grader_prompt": d.rubric_items[0].get_grader_prompt(d.convo + [completion])[0]["content"],
            }
            for d in datapoints
        ],
        "grader_prompts": [rubric_of(c["rubric"]).get_grader_prompt(c["convo"])[0]["content"] for c in cases["grader_prompts"]],
        "scores": [rubric_of(c["rubric"]).extract_score(c["response"]) for c in cases["scores"]],
        "steps": [asyncio.run(step(c, renderer, tokenizer)) for c in cases["steps"]],
        "cli_defaults": {f: getattr(CLIConfig(), f) for f in CLI_FIELDS},
    }


if __name__ == "__main__":
    # generate_dataset and extract_score print notes of their own: stdout is kept for the answer.
    with contextlib.redirect_stdout(sys.stderr):
        answer = main()
    print(json.dumps(answer))
