"""Parity cases computed by the Python reference (tinker-cookbook 0.6.1) at test time.

Run by test/parity/*.test.ts with the cached reference venv (scripts/lib/reference-env.mjs):

    <reference venv>/bin/python test/parity/reference_cases.py '[{"topic": ..., "args": {...}}, ...]'

prints one JSON document, {"results": [{"topic", "args", "cases": [{"id", "input", "expected"}]}]}
(with --serve: one request list per stdin line, one document per line). The inputs are chosen here; every expected value is what the reference itself returns for them, so nothing
is hand-copied. A reference call that raises is recorded as {"error": <exception type>} and the
TypeScript side must refuse the same input.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Callable

import pydantic


def _jsonable(x: Any) -> Any:
    if isinstance(x, pydantic.BaseModel):
        return _jsonable(x.model_dump())
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return {"float": repr(x)}
    if hasattr(x, "tolist"):
        return x.tolist()
    if hasattr(x, "value") and isinstance(getattr(x, "value"), str):  # StrEnum
        return x.value
    return x


def _attempt(fn: Callable[[], Any]) -> Any:
    try:
        return {"ok": _jsonable(fn())}
    except Exception as e:  # the reference refusing an input is a case too
        return {"error": type(e).__name__, "message": str(e)[:300]}


# ---------------------------------------------------------------------------- renderers

CONVERSATIONS: dict[str, list[dict]] = {
    "single_turn": [
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "2 + 2 = 4."},
    ],
    "system_multi_turn": [
        {"role": "system", "content": "You are a terse assistant."},
        {"role": "user", "content": "Name a prime."},
        {"role": "assistant", "content": "7"},
        {"role": "user", "content": "Another one, bigger."},
        {"role": "assistant", "content": "11, then 13."},
    ],
    "unicode_and_whitespace": [
        {"role": "user", "content": "  Übersetze: «naïve café» → 日本語?\n\n"},
        {"role": "assistant", "content": "ナイーブなカフェ 🙂\n  (trailing spaces)  "},
    ],
    "thinking_string": [
        {"role": "user", "content": "Is 91 prime?"},
        {"role": "assistant", "content": "<think>\n91 = 7 * 13.\n</think>\n\nNo: 91 = 7 × 13."},
    ],
    "thinking_parts_history": [
        {"role": "user", "content": "Compute 3*4."},
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "3*4=12"}, {"type": "text", "text": "12"}],
        },
        {"role": "user", "content": "And 5*6?"},
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "5*6=30"}, {"type": "text", "text": "30"}],
        },
    ],
    "consecutive_assistants": [
        {"role": "user", "content": "Count to two, one message each."},
        {"role": "assistant", "content": "one"},
        {"role": "assistant", "content": "two"},
    ],
    "tool_call_round_trip": [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "type": "function",
                    "id": "call_1",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "content": '{"temp_c": 18}', "tool_call_id": "call_1", "name": "get_weather"},
        {"role": "assistant", "content": "It is 18 °C in Paris."},
    ],
    "empty_assistant": [
        {"role": "user", "content": "Say nothing."},
        {"role": "assistant", "content": ""},
    ],
    "ends_with_user": [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi!"},
        {"role": "user", "content": "Bye"},
    ],
}

TRAIN_ON_WHAT = [
    "last_assistant_message",
    "last_assistant_turn",
    "all_assistant_messages",
    "all_messages",
    "all_tokens",
    "all_user_and_system_messages",
]

# Completions to parse, as text the model could emit after a generation prompt; "<stop>" is
# replaced by the renderer's stop token (when its stop sequences are token ids).
COMPLETIONS = {
    "plain": "The answer is 4.<stop>",
    "thinking": "<think>\nadd them\n</think>\n\nThe answer is 4.<stop>",
    "truncated": "The answer is",
    "tool_call": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><stop>',
    "bad_tool_call": "<tool_call>\n{not json}\n</tool_call><stop>",
}


def _tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def _with_tool_call_objects(convo: list[dict]) -> list[dict]:
    from tinker_cookbook.renderers import ToolCall

    return [
        {**m, "tool_calls": [ToolCall.model_validate(tc) for tc in m["tool_calls"]]} if "tool_calls" in m else m
        for m in convo
    ]


def renderer_cases(args: dict) -> list[dict]:
    import logging

    from tinker_cookbook import renderers
    from tinker_cookbook.renderers import TrainOnWhat

    logging.disable(logging.WARNING)  # the extension-property warning, once per case

    tokenizer = _tokenizer(args["tokenizer_dir"])
    renderer = renderers.get_renderer(args["renderer"], tokenizer)
    cases: list[dict] = []
    cases.append(
        {
            "id": "meta",
            "input": {},
            "expected": _attempt(
                lambda: {
                    "stop_sequences": renderer.get_stop_sequences(),
                    "has_extension_property": renderer.has_extension_property,
                }
            ),
        }
    )
    for name, convo in CONVERSATIONS.items():
        for tow in TRAIN_ON_WHAT:

            def example(convo=convo, tow=tow):
                mi, weights = renderer.build_supervised_example(
                    _with_tool_call_objects(convo), train_on_what=TrainOnWhat(tow)
                )
                return {"tokens": mi.to_ints(), "weights": [float(w) for w in weights.tolist()]}

            cases.append(
                {
                    "id": f"supervised/{name}/{tow}",
                    "input": {"messages": convo, "train_on_what": tow},
                    "expected": _attempt(example),
                }
            )
        prefix = convo[:-1] if convo[-1]["role"] == "assistant" else convo
        cases.append(
            {
                "id": f"generation_prompt/{name}",
                "input": {"messages": prefix},
                "expected": _attempt(
                    lambda prefix=prefix: renderer.build_generation_prompt(_with_tool_call_objects(prefix)).to_ints()
                ),
            }
        )
    cases.append(
        {
            "id": "generation_prompt/prefill",
            "input": {"messages": CONVERSATIONS["single_turn"][:1], "prefill": "The answer"},
            "expected": _attempt(
                lambda: renderer.build_generation_prompt(
                    CONVERSATIONS["single_turn"][:1], prefill="The answer"
                ).to_ints()
            ),
        }
    )
    stops = renderer.get_stop_sequences()
    for name, text in COMPLETIONS.items():
        if stops and isinstance(stops[0], int):
            pieces = text.split("<stop>")
            tokens: list[int] = []
            for i, piece in enumerate(pieces):
                if piece:
                    tokens += tokenizer.encode(piece, add_special_tokens=False)
                if i < len(pieces) - 1:
                    tokens.append(stops[0])
        else:
            tokens = tokenizer.encode(text.replace("<stop>", stops[0] if stops else ""), add_special_tokens=False)

        def parse(tokens=tokens):
            message, termination = renderer.parse_response(tokens)
            return {"message": message, "termination": termination}

        cases.append({"id": f"parse/{name}", "input": {"tokens": tokens}, "expected": _attempt(parse)})
    return cases


# ---------------------------------------------------------------------------- model info

def model_info_cases(args: dict) -> list[dict]:
    from tinker_cookbook import hyperparam_utils, model_info

    names = []
    for table in (
        model_info.get_llama_info,
        model_info.get_qwen_info,
        model_info.get_deepseek_info,
        model_info.get_gpt_oss_info,
        model_info.get_moonshot_info,
        model_info.get_zai_info,
        model_info.get_nvidia_info,
        model_info.get_thinkingmachines_info,
    ):
        for version, attrs in table().items():
            names.append(f"{attrs.organization}/{version}")
    names += ["Qwen/Qwen3-8B:peft:131072", "thinkingmachines/Inkling-Next", "acme/Unknown-1B", "Qwen/Qwen9-1B"]
    cases = []
    for name in names:

        def attrs(name=name):
            a = model_info.get_model_attributes(name)
            return {
                "organization": a.organization,
                "version_str": a.version_str,
                "size_str": a.size_str,
                "is_chat": a.is_chat,
                "recommended_renderers": list(a.recommended_renderers),
                "is_vl": a.is_vl,
                "is_audio_in": a.is_audio_in,
            }

        lora = {}
        for rank, flags in [(32, (True, True, True)), (8, (True, False, False)), (1, (False, True, True))]:
            lora[f"{rank}/{'-'.join(str(int(f)) for f in flags)}"] = _attempt(
                lambda name=name, rank=rank, flags=flags: hyperparam_utils.get_lora_param_count(
                    name, lora_rank=rank, train_mlp=flags[0], train_attn=flags[1], train_unembed=flags[2]
                )
            )
        cases.append(
            {
                "id": name,
                "input": {"model_name": name},
                "expected": {
                    "attributes": _attempt(attrs),
                    "lr_lora": _attempt(lambda name=name: hyperparam_utils.get_lr(name, is_lora=True)),
                    "lr_full": _attempt(lambda name=name: hyperparam_utils.get_lr(name, is_lora=False)),
                    "lora_params": lora,
                },
            }
        )
    return cases


# ---------------------------------------------------------------------------- numbers

def lr_schedule_cases(args: dict) -> list[dict]:
    from tinker_cookbook.utils.lr_scheduling import compute_schedule_lr_multiplier

    cases = []
    for schedule in ("linear", "cosine", "constant"):
        for total in (1, 7, 100):
            for step in sorted({0, 1, total // 3, total // 2, total - 1}):
                cases.append(
                    {
                        "id": f"{schedule}/{step}/{total}",
                        "input": {"schedule": schedule, "step": step, "total": total},
                        "expected": _attempt(lambda s=schedule, st=step, t=total: compute_schedule_lr_multiplier(s, st, t)),
                    }
                )
    return cases


def advantage_cases(args: dict) -> list[dict]:
    import numpy as np
    from tinker_cookbook.rl.data_processing import compute_advantages
    from tinker_cookbook.rl.types import TrajectoryGroup

    rng = np.random.default_rng(1234)
    groups = [
        [1.0, 0.0, 0.0, 1.0],
        [0.5, 0.5, 0.5],
        [0.1, 0.2, 0.3000001, 1e-8, -7.25],
        [3.0],
        rng.normal(size=16).astype(np.float32).tolist(),
        (rng.random(8) * 1e6).tolist(),
        [1 / 3, 2 / 3, 0.7, 0.1],
    ]
    # Group sizes and reward shapes RL configs use: binary, graded, shaped with format penalties.
    for size in (2, 4, 8, 16, 32, 64):
        groups.append(rng.integers(0, 2, size=size).astype(float).tolist())
        groups.append((rng.integers(0, 11, size=size) / 10 - 0.1 * rng.integers(0, 2, size=size)).tolist())
    cases = []
    for i, rewards in enumerate(groups):

        def adv(rewards=rewards):
            group = TrajectoryGroup(
                trajectories_G=[None] * len(rewards),  # type: ignore[list-item]
                final_rewards_G=[0.0] * len(rewards),
                metrics_G=[{} for _ in rewards],
            )
            group.get_total_rewards = lambda: list(rewards)  # type: ignore[method-assign]
            return [a.tolist() for a in compute_advantages([group])][0]

        cases.append({"id": f"group{i}", "input": {"rewards": rewards}, "expected": _attempt(adv)})
    return cases


def grading_cases(args: dict) -> list[dict]:
    from tinker_cookbook.recipes.math_rl.math_grading import extract_boxed, grade_answer, normalize_answer

    pairs = [
        ("4", "4"),
        ("4.0", "4"),
        ("\\frac{1}{2}", "0.5"),
        ("1/2", "\\frac{1}{2}"),
        ("\\dfrac{3}{4}", "\\frac34"),
        ("1,000", "1000"),
        ("1,000,000", "1000000"),
        ("12,34", "1234"),
        ("5 \\text{ cm}", "5"),
        ("5\\text{cm}", "5"),
        ("10\\%", "10"),
        ("$42$", "42"),
        ("\\$42", "42"),
        ("x = 3", "3"),
        ("(1, 2)", "(1,2)"),
        ("\\left(1, 2\\right)", "(1,2)"),
        ("[1, 2]", "(1,2)"),
        ("\\sqrt{2}", "\\sqrt 2"),
        ("2\\sqrt{2}", "\\sqrt{8}"),
        ("\\pi", "3.14159"),
        ("0.333", "\\frac{1}{3}"),
        ("-7", "−7"),
        ("\\infty", "\\infty"),
        ("x^2+2x+1", "(x+1)^2"),
        ("\\{1,2\\}", "\\{2,1\\}"),
        ("3.5", "7/2"),
        ("\\boxed{5}", "5"),
        ("five", "5"),
        ("", "5"),
        ("10^{3}", "1000"),
        ("1e3", "1000"),
        ("\\text{(A)}", "A"),
        ("50^\\circ", "50"),
        ("\\mbox{yes}", "yes"),
    ]
    cases = []
    for i, (given, truth) in enumerate(pairs):
        cases.append(
            {
                "id": f"grade{i}",
                "input": {"given": given, "truth": truth},
                "expected": {
                    "grade": _attempt(lambda g=given, t=truth: grade_answer(g, t)),
                    "normalized": _attempt(lambda g=given: normalize_answer(g)),
                },
            }
        )
    boxed = [
        "The answer is \\boxed{42}.",
        "\\boxed{\\frac{1}{2}} and later \\boxed{3}",
        "\\boxed {7}",
        "no box here",
        "\\boxed{a{b}c}",
        "\\fbox{9}",
    ]
    for i, text in enumerate(boxed):
        cases.append({"id": f"boxed{i}", "input": {"text": text}, "expected": {"boxed": _attempt(lambda t=text: extract_boxed(t))}})
    return cases


def shuffle_cases(args: dict) -> list[dict]:
    # The order the reference's SL and DPO datasets see: Hugging Face `Dataset.shuffle(seed)`.
    import datasets

    def order(seed: int, n: int) -> list[int]:
        return list(datasets.Dataset.from_dict({"i": list(range(n))}).shuffle(seed=seed)["i"])

    cases = []
    for seed in (0, 1, 42, 2**31 - 1):
        for n in (1, 5, 100, 1000):
            cases.append(
                {
                    "id": f"{seed}/{n}",
                    "input": {"seed": seed, "n": n},
                    "expected": _attempt(lambda s=seed, n=n: order(s, n)),
                }
            )
    return cases


def datum_cases(args: dict) -> list[dict]:
    import tinker
    import torch
    from tinker_cookbook.supervised.common import datum_from_model_input_weights

    shapes = [
        [[1, 2, 3, 4, 5, 6]],
        [[1, 2], [3, 4, 5], [6]],
        [[7], [8, 9, 10, 11]],
        [[1, 2, 3], [], [4, 5]],
    ]
    weight_patterns = {
        "last_half": lambda n: [0.0] * (n // 2) + [1.0] * (n - n // 2),
        "alternating": lambda n: [float(i % 2) for i in range(n)],
        "zeros": lambda n: [0.0] * n,
        "fractional": lambda n: [round(0.1 * (i + 1), 3) for i in range(n)],
    }
    cases = []
    for si, chunks in enumerate(shapes):
        n = sum(len(c) for c in chunks)
        for wname, pattern in weight_patterns.items():
            for max_length in (None, n, n - 1, 3, 2):
                for reduction in ("none", "mean"):
                    weights = pattern(n)

                    def build(chunks=chunks, weights=weights, max_length=max_length, reduction=reduction):
                        mi = tinker.ModelInput(chunks=[tinker.types.EncodedTextChunk(tokens=c) for c in chunks])
                        d = datum_from_model_input_weights(
                            mi, torch.tensor(weights, dtype=torch.float32), max_length=max_length, reduction=reduction
                        )
                        return {
                            "chunks": [list(c.tokens) for c in d.model_input.chunks],
                            "weights": d.loss_fn_inputs["weights"].data,
                            "target_tokens": d.loss_fn_inputs["target_tokens"].data,
                        }

                    cases.append(
                        {
                            "id": f"shape{si}/{wname}/{max_length}/{reduction}",
                            "input": {"chunks": chunks, "weights": weights, "max_length": max_length, "reduction": reduction},
                            "expected": _attempt(build),
                        }
                    )
    return cases


def dpo_cases(args: dict) -> list[dict]:
    import numpy as np
    import torch
    from tinker_cookbook.preference.train_dpo import compute_dpo_loss

    rng = np.random.default_rng(7)
    cases = []
    settings = [(1, 0.1), (4, 0.1), (8, 0.5), (16, 0.05), (3, 1.0)]
    settings += [(int(rng.integers(1, 33)), float(beta)) for beta in (0.01, 0.1, 0.3, 2.0) for _ in range(4)]
    for i, (pairs, beta) in enumerate(settings):
        lp = (rng.normal(size=(4, pairs)) * 20 - 40).astype(np.float32)
        if i == 4:
            lp[1] = lp[0] - 1e-3  # near-ties
        policy_c, policy_r, ref_c, ref_r = (x.tolist() for x in lp)

        def run(policy_c=policy_c, policy_r=policy_r, ref_c=ref_c, ref_r=ref_r, beta=beta):
            t = lambda xs: [torch.tensor(x, dtype=torch.float32) for x in xs]
            loss, metrics = compute_dpo_loss(t(policy_c), t(policy_r), t(ref_c), t(ref_r), beta)
            return {"loss": loss.item(), "metrics": metrics}

        cases.append(
            {
                "id": f"{i}/pairs{pairs}/beta{beta}",
                "input": {"chosen": policy_c, "rejected": policy_r, "ref_chosen": ref_c, "ref_rejected": ref_r, "beta": beta},
                "expected": _attempt(run),
            }
        )
    return cases


def kl_cases(args: dict) -> list[dict]:
    import numpy as np
    import tinker
    import torch
    from tinker_cookbook.rl.metrics import compute_kl_sample_train, discounted_future_sum_vectorized

    rng = np.random.default_rng(11)
    cases = []
    shapes = [[5], [3, 7], [12, 1, 9, 4]] + [rng.integers(3, 40, size=int(rng.integers(1, 9))).tolist() for _ in range(9)]
    for i, lengths in enumerate(shapes):
        sampled = [(-rng.random(n) * 3).astype(np.float32).tolist() for n in lengths]
        training = [(np.array(s) + rng.normal(size=len(s)) * 0.05).astype(np.float32).tolist() for s in sampled]
        masks = [[float(t >= n // 3) for t in range(n)] for n in lengths]

        def run(sampled=sampled, training=training, masks=masks):
            data = [
                tinker.Datum(
                    model_input=tinker.ModelInput.from_ints(list(range(len(s)))),
                    loss_fn_inputs={
                        "logprobs": tinker.TensorData.from_torch(torch.tensor(s, dtype=torch.float32)),
                        "mask": tinker.TensorData.from_torch(torch.tensor(m, dtype=torch.float32)),
                    },
                )
                for s, m in zip(sampled, masks)
            ]
            return compute_kl_sample_train(data, [torch.tensor(t, dtype=torch.float32) for t in training])

        cases.append(
            {
                "id": f"kl_sample_train/{i}",
                "input": {"sampled": sampled, "training": training, "masks": masks},
                "expected": _attempt(run),
            }
        )
    for i, gamma in enumerate([0.0, 0.5, 0.99, 1.0]):
        x = rng.normal(size=9).astype(np.float32).tolist()
        cases.append(
            {
                "id": f"discounted_future_sum/{gamma}",
                "input": {"x": x, "gamma": gamma},
                "expected": _attempt(
                    lambda x=x, gamma=gamma: discounted_future_sum_vectorized(torch.tensor(x, dtype=torch.float32), gamma).tolist()
                ),
            }
        )
    return cases


def kimi_cases(args: dict) -> list[dict]:
    from kimi_reference_cases import kimi_results

    return kimi_results(args)


def gpt_oss_harmony_cases(args: dict) -> list[dict]:
    """Harmony (gpt-oss) cases of renderers-gpt-oss.parity.test.ts: {"tokenizer_dir", "cases"}."""
    import warnings

    from tinker_cookbook.renderers import TrainOnWhat
    from tinker_cookbook.renderers.gpt_oss import GptOssRenderer

    warnings.simplefilter("ignore")
    tok = _tokenizer(args["tokenizer_dir"])
    out = []
    for c in args["cases"]:
        r = GptOssRenderer(tok, **c.get("r", {}))
        kind, tokens = c["kind"], None
        if kind == "parse":
            tokens = tok.encode(c["text"], add_special_tokens=False)
            fn = lambda r=r, tokens=tokens: dict(zip(("message", "termination"), r.parse_response(tokens)))  # noqa: E731
        elif kind == "supervised":

            def fn(c=c, r=r):
                mi, w = r.build_supervised_example(_with_tool_call_objects(c["messages"]), TrainOnWhat(c["train_on_what"]))
                return {"tokens": mi.to_ints(), "weights": [float(x) for x in w.tolist()]}

        elif kind == "generation_prompt":
            fn = lambda c=c, r=r: r.build_generation_prompt(_with_tool_call_objects(c["messages"])).to_ints()  # noqa: E731
        else:

            def fn(c=c, r=r):
                prefix = r.create_conversation_prefix_with_tools(c["tools"], c["system_prompt"])
                return {"prefix": prefix, "prompt": r.build_generation_prompt(prefix + c["messages"]).to_ints()}

        out.append({"tokens": tokens, "expected": _attempt(fn)})
    return out


TOPICS: dict[str, Callable[[dict], list[dict]]] = {
    "kimi": kimi_cases,
    "gpt_oss_harmony": gpt_oss_harmony_cases,
    "renderer": renderer_cases,
    "model_info": model_info_cases,
    "lr_schedule": lr_schedule_cases,
    "advantages": advantage_cases,
    "grading": grading_cases,
    "shuffle": shuffle_cases,
    "datum": datum_cases,
    "dpo": dpo_cases,
    "kl": kl_cases,
}


def answer(requests: list[dict]) -> dict:
    return {
        "results": [
            {"topic": r["topic"], "args": r.get("args", {}), "cases": TOPICS[r["topic"]](r.get("args", {}))}
            for r in requests
        ]
    }


def serve() -> None:
    """One JSON request list per stdin line, one answer per stdout line: the test files of a run
    share one process, so the reference's imports (seconds each) are paid once."""
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = answer(json.loads(line))
        except Exception as e:  # noqa: BLE001 - reported to the requesting test, the server goes on
            reply = {"failure": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def main() -> None:
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        json.dump(answer(json.loads(sys.argv[1])), sys.stdout)


if __name__ == "__main__":
    main()
