"""Decision-model parity cases computed by the reference (tinker-cookbook 0.6.1,
recipes/decisions) for decisions.parity.test.ts.

    <reference venv>/bin/python test/parity/decision_cases.py '{"renderers": [{"renderer": ..., "tokenizer_dir": ...}, ...]}'

prints one JSON document:
  {"renderings": [[case, ...] per renderer], "losses": [case, ...], "decisions": [case, ...]}
Each case is {"id", "input", "expected"}; expected is {"ok": value} or {"error": <exception type>,
"message"} when the reference refuses the input. Every expected value is what the reference's own
DecisionRenderer, PrefixedChoiceRenderer, decision_choice_datums, decision_dist_datums and
probability_loss return; nothing is hand-copied.
"""

from __future__ import annotations

import json
import string
import sys

TEAMS = [
    ["billing", "Charges, invoices, credits, payment methods and pricing"],
    ["sdk", "The tinker Python package: installation, API errors, training and sampling calls"],
    ["console", "The web console: signing in, API keys, viewing runs and checkpoints"],
    ["cookbook", "The Tinker Cookbook recipes: training loops, renderers, evaluations and docs"],
]

# (id, text, choices, hard target, soft targets)
DECISIONS = [
    ("teams", "A user asked: How do I build a decision model with Tinker Cookbook?\n\nWhich team should answer it?", TEAMS, "cookbook", {"cookbook": 0.7, "sdk": 0.3}),
    ("coin", "Heads or tails?", [["heads", ""], ["tails", ""]], "tails", {"heads": 0.5, "tails": 0.5}),
    ("ids_as_labels", "Pick one.", [["A", "the first"], ["B", "the second"], ["C", ""]], "B", {"A": 1.0}),
    ("unicode", "Quel temps fait-il à Zürich ? ☀️ or 🌧️", [["sun", "Soleil ☀️"], ["rain", "Pluie 🌧️"], ["snow", "Neige ❄️"]], "snow", {"rain": 0.25, "snow": 0.75}),
    ("all_26", "Which letter?", [[f"letter {c}", f"the letter {c}"] for c in string.ascii_uppercase], "letter Z", {"letter A": 0.1, "letter Z": 0.9}),
    ("too_many", "Which one?", [[f"c{i}", ""] for i in range(27)], "c0", {"c0": 1.0}),
]

PREFIXES = [("choice#", "?"), ("Answer: ", "?"), ("choice", "#")]


def attempt(fn):
    try:
        return {"ok": fn()}
    except Exception as e:  # the reference refusing an input is a case too
        return {"error": type(e).__name__, "message": str(e)[:400]}


def datum_json(d):
    out = {"model_input": d.model_input.to_ints()}
    for key, t in d.loss_fn_inputs.items():
        out[key] = {"data": t.data, "shape": t.shape}
    return out


def rendering_cases(spec: dict) -> list[dict]:
    from transformers import AutoTokenizer

    from tinker_cookbook import renderers
    from tinker_cookbook.recipes.decisions import (
        Decision,
        DecisionRenderer,
        PrefixedChoiceRenderer,
        decision_choice_datums,
        decision_dist_datums,
    )

    tokenizer = AutoTokenizer.from_pretrained(spec["tokenizer_dir"])
    renderer = renderers.get_renderer(spec["renderer"], tokenizer)
    cases = []
    for prefix, placeholder in PREFIXES:
        for did, text, choices, hard, soft in DECISIONS:
            if prefix != "choice#" and did not in ("teams", "ids_as_labels"):
                continue

            def make(prefix=prefix, placeholder=placeholder):
                return DecisionRenderer(renderer, PrefixedChoiceRenderer(renderer, prefix, placeholder))

            def render(text=text, choices=choices, make=make):
                r = make().render(Decision(text, [tuple(c) for c in choices]))
                return {"tokens": r.tokens, "choice_pos": r.choice_pos, "label_tokens": [[k, v] for k, v in r.label_tokens.items()]}

            def choice(text=text, choices=choices, hard=hard, make=make):
                return [datum_json(d) for d in decision_choice_datums(make(), [(Decision(text, [tuple(c) for c in choices]), hard)])]

            def dist(text=text, choices=choices, soft=soft, make=make):
                return [datum_json(d) for d in decision_dist_datums(make(), [(Decision(text, [tuple(c) for c in choices]), soft)])]

            inp = {"text": text, "choices": choices, "prefix": prefix, "placeholder": placeholder}
            cases.append({"id": f"render/{prefix}/{did}", "input": inp, "expected": attempt(render)})
            cases.append({"id": f"choice_datums/{prefix}/{did}", "input": {**inp, "target": hard}, "expected": attempt(choice)})
            cases.append({"id": f"dist_datums/{prefix}/{did}", "input": {**inp, "target_probs": soft}, "expected": attempt(dist)})
    # Targets outside the choices or negative: refused by the datum builders.
    text, choices = DECISIONS[0][1], DECISIONS[0][2]
    for cid, target in (
        ("choice_datums/unknown_label", {"target": "nobody"}),
        ("dist_datums/unknown_label", {"target_probs": {"nobody": 1.0}}),
        ("dist_datums/negative", {"target_probs": {"sdk": -0.1}}),
    ):

        def build(target=target):
            decision = Decision(text, [tuple(c) for c in choices])
            if "target" in target:
                return [datum_json(d) for d in decision_choice_datums(DecisionRenderer(renderer), [(decision, target["target"])])]
            return [datum_json(d) for d in decision_dist_datums(DecisionRenderer(renderer), [(decision, target["target_probs"])])]

        cases.append({"id": cid, "input": {"text": text, "choices": choices, **target}, "expected": attempt(build)})
    return cases


def decision_cases() -> list[dict]:
    from tinker_cookbook.recipes.decisions import Decision

    inputs = {
        "one_choice": [["only", ""]],
        "duplicate_labels": [["a", ""], ["b", ""], ["a", "again"]],
        "two": [["a", ""], ["b", ""]],
    }
    return [
        {"id": f"decision/{k}", "input": {"choices": v}, "expected": attempt(lambda v=v: Decision("q", [tuple(c) for c in v]).labels)}
        for k, v in inputs.items()
    ]


def loss_cases() -> list[dict]:
    import numpy as np
    import tinker
    import torch

    from tinker_cookbook.recipes.decisions import probability_loss

    def brier(p, t):
        return ((p - t) ** 2).sum()

    rng = np.random.default_rng(11)
    cases = []
    for i, (D, K, T) in enumerate([(1, 2, 3), (4, 4, 5), (3, 26, 2), (8, 3, 1), (5, 2, 4)]):
        data, logprobs = [], []
        for d in range(D):
            w = np.zeros((T, K), dtype=np.float32)
            if i == 3 and d % 2 == 0:
                w[-1] = 1.0 / K  # uniform targets: argmax ties
            else:
                w[-1, rng.integers(0, K)] = 1.0 if d % 3 else 0.0
                if d % 3 == 0:
                    w[-1] = rng.dirichlet(np.ones(K)).astype(np.float32)
            toks = np.zeros((T, K), dtype=np.int64)
            toks[-1] = np.arange(10, 10 + K)
            data.append({"target_tokens": toks.flatten().tolist(), "weights": w.flatten().tolist(), "shape": [T, K]})
            scale = 0.1 if i == 4 else 3.0
            logprobs.append((rng.normal(size=(T, K)) * scale - 5).astype(np.float32).flatten().tolist())

        def run(data=data, logprobs=logprobs):
            datums = [
                tinker.Datum(
                    model_input=tinker.ModelInput.from_ints([1] * d["shape"][0]),
                    loss_fn_inputs={
                        "target_tokens": tinker.TensorData(data=d["target_tokens"], dtype="int64", shape=d["shape"]),
                        "weights": tinker.TensorData(data=d["weights"], dtype="float32", shape=d["shape"]),
                    },
                )
                for d in data
            ]
            # As forward_backward_custom: float32 leaves shaped like the forward's logprobs.
            lps = [torch.tensor(lp).reshape(d["shape"]).requires_grad_(True) for lp, d in zip(logprobs, data)]
            loss, metrics = probability_loss(brier)(datums, lps)
            loss.backward()
            return {"loss": float(loss.item()), "metrics": metrics, "grads": [lp.grad.flatten().tolist() for lp in lps]}

        cases.append({"id": f"brier/{i}/D{D}/K{K}/T{T}", "input": {"data": data, "logprobs": logprobs}, "expected": attempt(run)})
    return cases


def main() -> None:
    args = json.loads(sys.argv[1])
    out = {
        "renderings": [rendering_cases(spec) for spec in args["renderers"]],
        "losses": loss_cases(),
        "decisions": decision_cases(),
    }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
