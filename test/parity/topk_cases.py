"""The reference's off-policy soft targets (distillation/train_off_policy.py `_collect_topk_for_datum`,
tinker-cookbook 0.6.1, unmodified) on the cases topk.parity.test.ts sends on stdin: each case a datum
(input tokens, (N,) targets and weights), the teacher's `topk_prompt_logprobs` for the forced
sequence (what a teacher client would return) and K. The teacher is a stub client answering with
those top-K; it records the prompt it was sent. Prints one JSON object: per case the prompt sent and
the returned datum's target_tokens and weights (shape and float32 data), or the error raised; and
for each composite case (`_CompositeSupervisedDataset` over stub datasets) the per-domain counts,
the length and batch 1 with its domain indices."""

import asyncio
import json
import math
import sys

import tinker

from tinker_cookbook.distillation.train_off_policy import _collect_topk_for_datum, _CompositeSupervisedDataset


class StubTeacher:
    def __init__(self, topk):
        self.topk = topk
        self.prompts = []

    async def sample(self, prompt, num_samples, sampling_params, include_prompt_logprobs, topk_prompt_logprobs):
        self.prompts.append({"tokens": prompt.to_ints(), "max_tokens": sampling_params.max_tokens, "k": topk_prompt_logprobs, "prompt_logprobs": include_prompt_logprobs})
        topk = None if self.topk is None else [None if row is None else [tuple(e) for e in row] for row in self.topk]
        return type("Response", (), {"topk_prompt_logprobs": topk})()


def finite(x):
    return x if math.isfinite(x) else repr(x)


async def one(case):
    datum = tinker.Datum(
        model_input=tinker.ModelInput.from_ints(case["input"]),
        loss_fn_inputs={
            "target_tokens": tinker.TensorData(data=case["targets"], dtype="int64", shape=[len(case["targets"])]),
            "weights": tinker.TensorData(data=case["weights"], dtype="float32", shape=[len(case["weights"])]),
        },
    )
    teacher = StubTeacher(case["topk"])
    try:
        out = await _collect_topk_for_datum(teacher, datum, case["k"])
    except Exception as e:  # noqa: BLE001 - the type is the outcome
        return {"error": type(e).__name__, "prompts": teacher.prompts}
    t, w = out.loss_fn_inputs["target_tokens"], out.loss_fn_inputs["weights"]
    return {
        "prompts": teacher.prompts,
        "target_tokens": {"shape": list(t.shape), "data": [int(x) for x in t.data]},
        "weights": {"shape": list(w.shape), "dtype": w.dtype, "data": [finite(float(x)) for x in w.data]},
    }


class Batches:
    """A supervised dataset stub: batch i of domain d is [(d, i, 0), (d, i, 1), ...]."""

    def __init__(self, domain, n_batches, batch_size):
        self.domain, self.n, self.size = domain, n_batches, batch_size

    def get_batch(self, i):
        return [[self.domain, i, j] for j in range(self.size)]

    def __len__(self):
        return self.n


def composite(c):
    try:
        ds = _CompositeSupervisedDataset([Batches(d, n, b) for d, (n, b) in enumerate(c["datasets"])], c["weights"], c["batch_size"])
    except Exception as e:  # noqa: BLE001 - the type is the outcome
        return {"error": type(e).__name__}
    datums, indices = ds.get_batch(1)
    return {"counts": ds._counts, "length": len(ds), "batch_1": datums, "indices": indices}


async def main():
    cases = json.load(sys.stdin)
    print(json.dumps({"targets": [await one(c) for c in cases["targets"]], "composites": [composite(c) for c in cases["composites"]]}))


asyncio.run(main())
