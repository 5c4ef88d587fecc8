"""The reference's forecasting recipe (tinker-cookbook 0.6.1 recipes/forecasting) on the cases
forecasting.parity.test.ts sends on stdin: parse_forecast, _score, brier_reward, parse_utc_datetime,
_parse_structured, the loader and the temporal split of given CSV files, render_prompt, logging tags,
roc_auc, ForecastRLDataset batches, and whole evaluated groups (ForecastEnv behind
EnvFromMessageEnv on given action tokens, compute_group_rewards, ForecastEvaluator's metrics).
Prints one JSON object; a refusal is {"error": <exception type>}."""

import asyncio
import json
import sys
from dataclasses import replace

import tinker
from transformers import AutoTokenizer

from tinker_cookbook import renderers
from tinker_cookbook.recipes.forecasting import data, env
from tinker_cookbook.rl.types import TokensWithLogprobs, Trajectory, TrajectoryGroup, Transition


def outcome(fn):
    try:
        return {"ok": fn()}
    except Exception as exc:  # noqa: BLE001 - the type is the answer
        return {"error": type(exc).__name__, "message": str(exc)}


def tagged(value):
    """A parsed cell in a form JSON keeps: ints apart from floats, bools from ints, tuples apart."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return {"int": str(value)}
    if isinstance(value, float):
        return {"float": repr(value)}
    if isinstance(value, list):
        return [tagged(v) for v in value]
    if isinstance(value, dict):
        return {
            "dict": [[k, tagged(v)] for k, v in value.items() if isinstance(k, str)],
            "other_keys": sum(1 for k in value if not isinstance(k, str)),
        }
    return {"other": type(value).__name__}


def example_view(e: data.ForecastExample):
    return {
        "submission_id": e.submission_id,
        "event_ticker": e.event_ticker,
        "event_title": e.event_title,
        "market": e.market,
        "reference_material": e.reference_material,
        "resolution_criteria": e.resolution_criteria,
        "snapshot_time": e.snapshot_time.isoformat(),
        "close_time": e.close_time.isoformat(),
        "category": e.category,
        "outcome": e.outcome,
    }


def split_case(c):
    s = data.load_prophet_arena_split(
        c["path"],
        split_time=data.parse_utc_datetime(c["split_date"], "split_date"),
        max_train_questions=c["max_train"],
        max_validation_questions=c["max_validation"],
        seed=c["seed"],
    )
    return {
        "train": [example_view(e) for e in s.train],
        "validation": [example_view(e) for e in s.validation],
        "split_time": s.split_time.isoformat(),
        "excluded": s.excluded_crossing_events,
    }


def dataset_case(examples, c):
    ds = env.ForecastRLDataset(examples, batch_size=c["batch_size"], group_size=c["group_size"], renderer=None, epochs=c["epochs"])  # type: ignore[arg-type]
    return {
        "len": len(ds),
        "batches": [[(b.example.submission_id, b.example.market, b.group_size) for b in ds.get_batch(i)] for i in range(len(ds))],
    }


async def groups_case(c, examples, renderer):
    builders, results = [], []
    for g in c["groups"]:
        example = replace(examples[g["example"]], category=g["category"], outcome=g["outcome"])
        builder = env.ForecastGroupBuilder(example=example, renderer=renderer, group_size=len(g["rollouts"]))
        trajectories = []
        for e, r in zip(await builder.make_envs(), g["rollouts"]):
            ob, _ = await e.initial_observation()
            step = await e.step(r["tokens"], extra={"stop_reason": r["stop_reason"]})
            transition = Transition(
                ob=ob,
                ac=TokensWithLogprobs(tokens=r["tokens"], maybe_logprobs=[0.0] * len(r["tokens"])),
                reward=step.reward,
                episode_done=step.episode_done,
                metrics=step.metrics,
                logs=step.logs,
            )
            trajectories.append(Trajectory(transitions=[transition], final_ob=step.next_observation))
        rewards_and_metrics = await builder.compute_group_rewards(trajectories, [])
        group = TrajectoryGroup(trajectories, [r for r, _ in rewards_and_metrics], [m for _, m in rewards_and_metrics])
        builders.append(builder)
        results.append(group)
    evaluator = env.ForecastEvaluator.__new__(env.ForecastEvaluator)
    evaluator.env_group_builders_P = builders
    evaluator.name = "test"
    evaluator.last_result = None
    return {
        "logs": [[t.transitions[0].logs for t in group.trajectories_G] for group in results],
        "rewards": [[t.transitions[0].reward for t in group.trajectories_G] for group in results],
        "group_metrics": [group.metrics_G for group in results],
        "tags": [b.logging_tags() for b in builders],
        "metrics": evaluator._collect_eval_metrics(results, None),
    }


async def main() -> None:
    cases = json.load(sys.stdin)
    tok = AutoTokenizer.from_pretrained(cases["tokenizer_dir"])
    renderer = renderers.get_renderer(cases["renderer"], tokenizer=tok)
    examples = data.load_prophet_arena_examples(cases["shipped"])
    out = {
        "parsed": [env.parse_forecast(s) for s in cases["responses"]],
        "scores": [outcome(lambda p=p, y=y: env._score(p, y)) for p, y in cases["scores"]],
        "brier": [outcome(lambda p=p, y=y: env.brier_reward(p, y)) for p, y in cases["brier"]],
        "datetimes": [outcome(lambda s=s: data.parse_utc_datetime(s).isoformat()) for s in cases["datetimes"]],
        "structured": [outcome(lambda s=s: tagged(data._parse_structured(s, "cell"))) for s in cases["structured"]],
        "examples": [example_view(e) for e in examples],
        "prompts": [env.render_prompt(e) for e in examples],
        "initial_messages": [await env.ForecastEnv(e).initial_observation() for e in examples[:3]],
        "splits": [outcome(lambda c=c: split_case(c)) for c in cases["splits"]],
        "csv_files": [outcome(lambda p=p: [example_view(e) for e in data.load_prophet_arena_examples(p)]) for p in cases["csv_files"]],
        "tags": [env.ForecastGroupBuilder(example=replace(examples[0], category=c), renderer=renderer, group_size=1).logging_tags() for c in cases["categories"]],
        "auc": [env.roc_auc([tuple(p) for p in pairs]) for pairs in cases["auc"]],
        "datasets": [dataset_case(examples, c) for c in cases["datasets"]],
        "groups": await groups_case(cases, examples, renderer),
    }
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
