"""SDK 0.38's custom losses through the official SDK: `create_custom_loss` (uploaded to the engine
when its client/config says `custom_loss_server_side`, else run client-side) and a plain callable,
each beside a twin model trained with cross_entropy on the same data.

Usage: python custom_loss_flow.py <base_url>. Needs torch importable (the SDK traces losses with
torch.fx). Prints one JSON object (REPORT …) for test_conformance_custom_loss.py.
"""

import json
import sys

import tinker
from tinker import types

BASE_MODEL = "tiny-qwen3"


def datum(tokens):
    weights = [0.5 + (j % 3) / 2 for j in range(len(tokens) - 1)]
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": weights},
    )


def neg_ll(logprobs, weights):
    loss = -(logprobs * weights).sum()
    return loss, {"custom/neg_ll:sum": loss}


def callable_loss(data, logprobs_list):
    loss = sum(-(lp * d.loss_fn_inputs["weights"].to_torch()).sum() for d, lp in zip(data, logprobs_list))
    return loss, {"custom_loss": float(loss)}


def logprobs(client, data):
    return [o["logprobs"].tolist() for o in client.forward(data, "cross_entropy").result().loss_fn_outputs]


def main(base_url):
    data = [datum([1000 + (i * 7 + j) % 50 for j in range(20)]) for i in range(3)]
    report = {}
    with tinker.ServiceClient(base_url=base_url, api_key="tml-conformance") as service:
        custom = service.create_lora_training_client(BASE_MODEL, rank=4, seed=3).result()
        twin = service.create_lora_training_client(BASE_MODEL, rank=4, seed=3).result()
        handle = service.create_custom_loss(neg_ll, {"logprobs": 1, "weights": 1}).result()
        report["loss_id"] = handle.loss_id
        report["custom_metrics"] = custom.forward_backward_custom(data, handle).result().metrics
        report["twin_metrics"] = twin.forward_backward(data, "cross_entropy").result().metrics
        for client in (custom, twin):
            client.optim_step(types.AdamParams(learning_rate=1e-2)).result()
        report["after"] = [logprobs(custom, data), logprobs(twin, data)]
        report["callable_metrics"] = custom.forward_backward_custom(data, callable_loss).result().metrics
        report["callable_twin_metrics"] = twin.forward_backward(data, "cross_entropy").result().metrics
    print("REPORT " + json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
