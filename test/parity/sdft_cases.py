"""The reference's SDFT pieces (tinker-cookbook 0.6.1, distillation/sdft.py and recipes/sdft) on
the cases sdft.parity.test.ts sends on stdin: teacher prompts (build_sdft_teacher_prompt),
build_topk_distillation_datums / build_reverse_kl_datums / compute_sdft_advantages with a stub
teacher that answers each call, in call order, with the fixed top-K or logprobs the case gives
(recording the teacher-forced sequences it was sent), reverse_kl_custom_loss with its gradient by
autograd, the recipe's eval extraction and its dataset loaders on given rows. Prints one JSON object."""

import asyncio
import json
import sys
from types import SimpleNamespace

import tinker
import torch
from transformers import AutoTokenizer

from tinker_cookbook import renderers
from tinker_cookbook.distillation import sdft
from tinker_cookbook.recipes.sdft import datasets as sdft_datasets
from tinker_cookbook.recipes.sdft import eval as sdft_eval


class _Done:
    def __init__(self, value):
        self.value = value

    async def coroutine(self):
        return self.value


class StubTeacher:
    def __init__(self, answers):
        self.answers = answers
        self.sent = []

    def _next(self, prompt):
        self.sent.append(prompt.to_ints())
        return self.answers[len(self.sent) - 1]

    def sample(self, prompt, num_samples, sampling_params, include_prompt_logprobs, topk_prompt_logprobs):
        answer = self._next(prompt)
        topk = None if answer is None else [None if e is None else [tuple(p) for p in e][:topk_prompt_logprobs] for e in answer]
        return _Done(SimpleNamespace(topk_prompt_logprobs=topk))

    def compute_logprobs(self, prompt):
        return _Done(self._next(prompt))


def datum(d):
    f32 = lambda xs: tinker.TensorData.from_torch(torch.tensor(xs, dtype=torch.float32))
    return tinker.Datum(
        model_input=tinker.ModelInput.from_ints(d["model_input"]),
        loss_fn_inputs={
            "target_tokens": tinker.TensorData.from_torch(torch.tensor(d["target_tokens"], dtype=torch.long)),
            "logprobs": f32(d["logprobs"]),
            "advantages": f32([0.0] * len(d["mask"])),
            "mask": f32(d["mask"]),
        },
    )


def flat(t):
    return t.to_torch().flatten().tolist()


async def topk_case(c, reverse):
    teacher = StubTeacher(c["topk"])
    build = sdft.build_reverse_kl_datums if reverse else sdft.build_topk_distillation_datums
    out, metrics = await build(
        [datum(d) for d in c["datums"]],
        [{"group_idx": g} for g in c["group_idx"]],
        teacher,
        [tinker.ModelInput.from_ints(p) for p in c["teacher_prompts"]],
        topk=c["k"],
        max_context_length=c["max_context_length"],
        vocab_size=c["vocab_size"],
    )
    return {
        "sent": teacher.sent,
        "targets": [flat(d.loss_fn_inputs["target_tokens"]) for d in out],
        "weights": [flat(d.loss_fn_inputs["weights"]) for d in out],
        "shapes": [list(d.loss_fn_inputs["weights"].to_torch().shape) for d in out],
        "metrics": metrics,
    }


async def advantages_case(c):
    teacher = StubTeacher(c["logprobs"])
    data = [datum(d) for d in c["datums"]]
    metrics = await sdft.compute_sdft_advantages(
        data,
        [{"group_idx": g} for g in c["group_idx"]],
        teacher,
        [tinker.ModelInput.from_ints(p) for p in c["teacher_prompts"]],
        max_context_length=c["max_context_length"],
    )
    return {"sent": teacher.sent, "advantages": [flat(d.loss_fn_inputs["advantages"]) for d in data], "metrics": metrics}


def reverse_loss_case(c):
    data = [
        tinker.Datum(
            model_input=tinker.ModelInput.from_ints([0] * (len(w) // c["k"])),
            loss_fn_inputs={
                "target_tokens": tinker.TensorData.from_torch(torch.zeros(len(w) // c["k"], c["k"], dtype=torch.long)),
                "weights": tinker.TensorData.from_torch(torch.tensor(w, dtype=torch.float32).reshape(-1, c["k"])),
            },
        )
        for w in c["weights"]
    ]
    lps = [torch.tensor(lp, dtype=torch.float32).reshape(-1, c["k"]).requires_grad_(True) for lp in c["logprobs"]]
    loss, metrics = sdft.reverse_kl_custom_loss(data, lps)
    loss.backward()
    return {"loss": loss.item(), "metrics": metrics, "grads": [lp.grad.flatten().tolist() for lp in lps]}


async def main() -> None:
    cases = json.load(sys.stdin)
    tok = AutoTokenizer.from_pretrained(cases["tokenizer_dir"])
    renderer = renderers.get_renderer(cases["renderer"], tokenizer=tok)
    prompts = []
    for q, a, system, template in cases["prompts"]:
        kw = {} if template is None else {"demo_template": template}
        prompts.append(sdft.build_sdft_teacher_prompt(q, a, renderer, system_prompt=system, **kw).to_ints())

    sdft_datasets.load_dataset = lambda *a, **k: cases["sciknoweval_rows"]
    sci = sdft_datasets.load_sciknoweval(domain=cases["domain"])
    sdft_datasets.load_dataset = lambda *a, **k: cases["toolalpaca_rows"]
    tool = sdft_datasets.load_toolalpaca()

    print(
        json.dumps(
            {
                "prompts": prompts,
                "topk": [await topk_case(c, False) for c in cases["topk_cases"]],
                "reverse": [await topk_case(c, True) for c in cases["topk_cases"]],
                "advantages": [await advantages_case(c) for c in cases["advantage_cases"]],
                "reverse_loss": [reverse_loss_case(c) for c in cases["reverse_loss_cases"]],
                "xml_answers": [sdft_eval.extract_xml_answer(t) for t in cases["xml_answers"]],
                "tooluse": sdft_eval.evaluate_tooluse_correctness(cases["tooluse"]["responses"], cases["tooluse"]["golden"]),
                "sciknoweval": list(sci),
                "toolalpaca": list(tool),
            }
        )
    )


asyncio.run(main())
