"""The reference's rl_numerics_check env (tinker-cookbook 0.6.1) on the cases
numerics-check.parity.test.ts sends on stdin: counting, answer parsing, the closeness reward, page
cutting, prompts, the hidden page count, problems drawn from random.Random(seed) over a given corpus,
the read_page spec, the rejection message and CountingReward's metrics. Prints one JSON object."""

import asyncio
import json
import random
import sys

from tinker_cookbook.recipes.rl_numerics_check.env import (
    _REJECTED_CALL_CONTENT,
    CountingProblem,
    CountingReward,
    CountingTaskConfig,
    EpisodeState,
    PageReader,
    build_prompt,
    closeness_reward,
    count_word,
    parse_answer,
    sample_problem,
    split_pages,
)


def task(d: dict) -> CountingTaskConfig:
    if "words" in d:
        d = {**d, "words": tuple(d["words"])}
    return CountingTaskConfig(**d)


async def main() -> None:
    cases = json.load(sys.stdin)
    problems = []
    for p in cases["problems"]:
        prob = sample_problem(random.Random(p["seed"]), cases["corpus"], task(p["task"]))
        problems.append({"word": prob.word, "num_pages": prob.num_pages, "pages": list(prob.pages), "prompt": prob.prompt, "true_count": prob.true_count})
    rewards = []
    for r in cases["rewards"]:
        problem = CountingProblem(word="x", num_pages=r["num_pages"], pages=(), prompt="", true_count=r["true_count"])
        state = EpisodeState(pages_read=set(r["pages_read"]), invalid_page_requests=r["invalid"])
        rewards.append(list(await CountingReward(problem, state, r["tolerance"])(r["history"])))
    print(
        json.dumps(
            {
                "counts": [count_word(t, w) for t, w in cases["counts"]],
                "answers": [parse_answer(t) for t in cases["answers"]],
                "closeness": [closeness_reward(p, t, tol) for p, t, tol in cases["closeness"]],
                "pages": [split_pages(c, s, n, k) for c, s, n, k in cases["pages"]],
                "prompts": [build_prompt(task(t), w, n) for t, w, n in cases["prompts"]],
                "hidden": [task(t).hidden_num_pages for t in cases["hidden"]],
                "problems": problems,
                "spec": PageReader((), EpisodeState()).read_page.to_spec(),
                "rejected": _REJECTED_CALL_CONTENT,
                "rewards": rewards,
            }
        )
    )


asyncio.run(main())
