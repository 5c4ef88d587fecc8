"""The reference's renders of conversations with images (tinker-cookbook 0.6.1 VL renderers, PIL 13,
transformers 5.23) for renderer-images.parity.test.ts.

    <reference venv>/bin/python test/parity/renderer_image_cases.py < request.json

Run, like image_cases.py, with HF_HUB_CACHE pointing at a hub cache that
scripts/hf-image-processors.mjs filled and HF_HUB_OFFLINE=1: each model's image processor is loaded
by image_cases.load_processor (the reference's get_image_processor where it can load it offline;
Kimi's and Nemotron's assembled from transformers' own code, as that file explains).

The request: {"images": {name: path}, "conversations": {name: [message, ...]},
"train_on_what": [...], "renderers": [{"renderer", "tokenizer_dir", "model"}, ...]}. An image part is
written {"type": "image", "image": <name>}; it is given to the renderer as the image's file:// URL,
as a dataset row names a file. Prints one JSON object:

    processors: model -> how its processor was loaded
    results:    one list per renderer of {"id", "expected"}, where expected is {"ok": ...} or the
                error the reference raised ({"error", "message"}). For supervised/<conversation>/<tow>
                the value is {"sequence", "weights", "chunks"}; for generation_prompt/<conversation>
                {"sequence", "chunks"}: `sequence` is the ModelInput flattened, text chunks' tokens
                in order and each image chunk one {"image": sha256 of its bytes, "format",
                "expected_tokens"} element; `chunks` is the chunk list's shape, for information.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import warnings
from typing import Any

from image_cases import load_processor


def _messages(convo: list[dict], images: dict[str, str]) -> list[dict]:
    from tinker_cookbook.renderers import ToolCall

    out = []
    for m in convo:
        m = dict(m)
        if isinstance(m["content"], list):
            m["content"] = [
                {"type": "image", "image": "file://" + images[p["image"]]} if p["type"] == "image" else p
                for p in m["content"]
            ]
        if "tool_calls" in m:
            m["tool_calls"] = [ToolCall.model_validate(tc) for tc in m["tool_calls"]]
        out.append(m)
    return out


def _flatten(model_input: Any) -> tuple[list, list]:
    import tinker

    sequence: list = []
    shape: list = []
    for chunk in model_input.chunks:
        if isinstance(chunk, tinker.types.EncodedTextChunk):
            sequence.extend(chunk.tokens)
            shape.append(len(chunk.tokens))
        elif isinstance(chunk, tinker.types.ImageChunk):
            data = bytes(chunk.data)
            sequence.append({"image": hashlib.sha256(data).hexdigest(), "format": chunk.format, "expected_tokens": chunk.expected_tokens})
            shape.append("image")
        else:
            raise TypeError(f"unexpected chunk {type(chunk).__name__}")
    return sequence, shape


def _attempt(fn: Any) -> dict:
    try:
        return {"ok": fn()}
    except Exception as e:  # noqa: BLE001 - the reference refusing an input is a case too
        return {"error": type(e).__name__, "message": str(e)[:300]}


def _share_content_tokenizers() -> None:
    """Every Qwen3-family renderer deep-copies its tokenizer's backend when it is built (a copy
    that encodes special-token text literally, configured once and then only read), about a second
    each: the copy is made once per tokenizer here and shared by the renderers built on it. Only
    the text renderers' content encoding reads it; what it encodes is unchanged."""
    from tinker_cookbook.renderers import qwen3

    made: dict[int, Any] = {}
    original = qwen3._content_tokenizer

    def shared(tokenizer: Any) -> Any:
        if id(tokenizer) not in made:
            made[id(tokenizer)] = original(tokenizer)
        return made[id(tokenizer)]

    qwen3._content_tokenizer = shared


def main() -> None:
    from transformers import AutoTokenizer

    from tinker_cookbook import renderers
    from tinker_cookbook.renderers import TrainOnWhat

    _share_content_tokenizers()

    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)  # the extension-property warning, once per case
    request = json.load(sys.stdin)
    images: dict[str, str] = request["images"]
    processors: dict[str, Any] = {}
    loaded: dict[str, dict] = {}
    tokenizers: dict[str, Any] = {}
    results = []
    for under in request["renderers"]:
        model, tokenizer_dir = under["model"], under["tokenizer_dir"]
        if model not in processors:
            processors[model], loaded[model] = load_processor(model)
        if tokenizer_dir not in tokenizers:
            tokenizers[tokenizer_dir] = AutoTokenizer.from_pretrained(tokenizer_dir)
        renderer = renderers.get_renderer(under["renderer"], tokenizers[tokenizer_dir], processors[model])
        cases = []
        for name, convo in request["conversations"].items():
            messages = _messages(convo, images)
            for tow in request["train_on_what"]:

                def example(messages=messages, tow=tow) -> dict:
                    model_input, weights = renderer.build_supervised_example(messages, train_on_what=TrainOnWhat(tow))
                    sequence, shape = _flatten(model_input)
                    return {"sequence": sequence, "weights": [float(w) for w in weights.tolist()], "chunks": shape}

                cases.append({"id": f"supervised/{name}/{tow}", "expected": _attempt(example)})
            prompt = messages[:-1] if messages[-1]["role"] == "assistant" else messages

            def generation(prompt=prompt) -> dict:
                sequence, shape = _flatten(renderer.build_generation_prompt(prompt))
                return {"sequence": sequence, "chunks": shape}

            cases.append({"id": f"generation_prompt/{name}", "expected": _attempt(generation)})
        results.append(cases)
    sys.stdout.write(json.dumps({"processors": loaded, "results": results}))


if __name__ == "__main__":
    main()
