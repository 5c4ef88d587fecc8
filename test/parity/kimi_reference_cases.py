"""Kimi-specific parity cases computed by the Python reference (tinker-cookbook 0.6.1).

The shared renderer cases (reference_cases.py) do not reach what only Kimi has: tool_declare
messages, TypeScript-style tool declarations, Kimi's tool-call section format, tool results
named after the tool, multipart text, and per-user-turn supervised splitting. Run by
test/parity/renderers-kimi.parity.test.ts through reference_cases.py's topic "kimi" (the suite's
shared reference process), or on its own:

    <reference venv>/bin/python test/parity/kimi_reference_cases.py < '{"tokenizer_dir": ..., "cases": [...]}'

(the request comes on stdin: it is larger than one command-line argument may be).

Each case is {"id", "kind", ...}; the output is {"results": [{"id", "tokens", "expected"}]} where
expected is {"ok": value} or {"error": type, "message": ...}, as in reference_cases.py, and tokens
are a parse case's text as the reference tokenized it.
"""

from __future__ import annotations

import json
import sys

from reference_cases import _attempt, _tokenizer, _with_tool_call_objects


def _run(case: dict, tokenizer, renderer_for):
    from tinker_cookbook.renderers import TrainOnWhat
    from tinker_cookbook.renderers.kimi_k2_5_tool_declaration_ts import encode_tools_to_typescript_style

    kind = case["kind"]
    if kind == "tools_ts":
        return encode_tools_to_typescript_style(case["tools"])
    renderer = renderer_for(case["renderer"])
    if kind == "prefix":
        return renderer.create_conversation_prefix_with_tools(case["tools"], case.get("system_prompt", ""))
    if kind == "supervised":
        mi, weights = renderer.build_supervised_example(
            _with_tool_call_objects(case["messages"]), train_on_what=TrainOnWhat(case["train_on_what"])
        )
        return {"tokens": mi.to_ints(), "weights": [float(w) for w in weights.tolist()]}
    if kind == "supervised_examples":
        examples = renderer.build_supervised_examples(
            _with_tool_call_objects(case["messages"]), train_on_what=TrainOnWhat(case["train_on_what"])
        )
        return [{"tokens": mi.to_ints(), "weights": [float(w) for w in w_.tolist()]} for mi, w_ in examples]
    if kind == "generation_prompt":
        return renderer.build_generation_prompt(
            _with_tool_call_objects(case["messages"]), prefill=case.get("prefill")
        ).to_ints()
    if kind == "parse":
        message, termination = renderer.parse_response(case["tokens"])
        return {"message": message, "termination": termination}
    if kind == "openai":
        return renderer.to_openai_message(_with_tool_call_objects([case["message"]])[0])
    raise ValueError(f"unknown kind {kind}")


def kimi_results(req: dict) -> list[dict]:
    """The reference's answer for each case of {"tokenizer_dir", "cases"} (topic "kimi" of reference_cases.py)."""
    import logging
    import warnings

    from tinker_cookbook import renderers

    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    tokenizer = _tokenizer(req["tokenizer_dir"])
    cache: dict = {}

    def renderer_for(name: str):
        if name not in cache:
            cache[name] = renderers.get_renderer(name, tokenizer)
        return cache[name]

    results = []
    for case in req["cases"]:
        if case["kind"] == "parse":  # sampled text, tokenized by the reference's tokenizer
            case = {**case, "tokens": tokenizer.encode(case["text"], add_special_tokens=False)}
        expected = _attempt(lambda case=case: _run(case, tokenizer, renderer_for))
        results.append({"id": case["id"], "tokens": case.get("tokens"), "expected": expected})
    return results


def main() -> None:
    json.dump({"results": kimi_results(json.load(sys.stdin))}, sys.stdout)


if __name__ == "__main__":
    main()
