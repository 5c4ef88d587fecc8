"""The official, unmodified `tinker` SDK 0.38 sending images to the engine (run in the SDK's venv).

Usage: python images_flow.py <base_url> <jpeg file> <its token count>. A datum whose ModelInput holds
an `ImageChunk(data=..., format="jpeg", expected_tokens=n)` between text chunks trains with
forward_backward (protobuf) and optim_step beside a text-only datum; the trained weights sample
from a prompt with the image (JSON, base64) and score it (compute_logprobs); a wrong
expected_tokens is refused. Prints one JSON object (REPORT …).
"""

import json
import sys

import tinker
from tinker import types

VISION_START, VISION_END = 151652, 151653


def main(base_url: str, image_path: str, n: int) -> None:
    image = open(image_path, "rb").read()
    service = tinker.ServiceClient(base_url=base_url, api_key="tml-conformance")
    training = service.create_lora_training_client("tiny-qwen3-vl", rank=4, seed=3)

    def model_input(expected):
        return types.ModelInput(chunks=[
            types.EncodedTextChunk(tokens=[700, 701, VISION_START]),
            types.ImageChunk(data=image, format="jpeg", expected_tokens=expected),
            types.EncodedTextChunk(tokens=[VISION_END, 702, 703]),
        ])

    prompt = model_input(n)
    length = prompt.length  # the SDK counts the image as expected_tokens
    # Next-token targets of the text; the image's positions predict token 0 with weight 0.
    sequence = [701, VISION_START] + [0] * n + [VISION_END, 702, 703, 704]
    weights = [1.0, 1.0] + [0.0] * n + [1.0, 1.0, 1.0, 1.0]
    image_datum = types.Datum(model_input=prompt, loss_fn_inputs={"target_tokens": sequence[:length],
                                                                  "weights": weights[:length]})
    text = list(range(800, 812))
    text_datum = types.Datum(model_input=types.ModelInput.from_ints(text[:-1]),
                             loss_fn_inputs={"target_tokens": text[1:], "weights": [1.0] * 11})
    losses = []
    for _ in range(3):
        fb = training.forward_backward([image_datum, text_datum], "cross_entropy")
        training.optim_step(types.AdamParams(learning_rate=5e-2)).result()
        losses.append(fb.result().metrics["loss:sum"])

    sampler = training.save_weights_and_get_sampling_client("images")
    params = types.SamplingParams(max_tokens=4, seed=11, stop=[])
    first = sampler.sample(prompt=prompt, num_samples=2, sampling_params=params).result()
    again = sampler.sample(prompt=prompt, num_samples=2, sampling_params=params).result()
    scored = sampler.compute_logprobs(prompt).result()

    try:
        training.forward_backward([types.Datum(model_input=model_input(n + 1), loss_fn_inputs={
            "target_tokens": [0] * (length + 1), "weights": [0.0] * (length + 1)})], "cross_entropy").result()
        mismatch = "accepted"
    except Exception as e:  # noqa: BLE001 — what the SDK surfaces of the engine's 400
        mismatch = f"{type(e).__name__}: {e}"

    print("REPORT " + json.dumps({
        "length": length,
        "losses": losses,
        "sample_tokens": [s.tokens for s in first.sequences],
        "sample_tokens_again": [s.tokens for s in again.sequences],
        "compute_logprobs": list(scored),
        "mismatch_error": mismatch,
    }))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
