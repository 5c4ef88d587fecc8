"""Drives the engine with the official, unmodified `tinker` SDK (run inside the SDK's own venv).

Usage: python conformance_flow.py <base_url>. Prints one JSON object with everything the test
asserts on. Written against the public API shared by SDK 0.16.x and 0.25.x.
"""

import json
import sys

import tinker
from tinker import types

BASE_MODEL = "tiny-qwen3"


def datum(tokens, weights=None):
    inputs, targets = tokens[:-1], tokens[1:]
    return types.Datum(
        model_input=types.ModelInput.from_ints(inputs),
        loss_fn_inputs={
            "target_tokens": targets,
            "weights": weights if weights is not None else [1.0] * len(targets),
        },
    )


def logprob_lists(output):
    return [list(map(float, o["logprobs"].tolist())) for o in output.loss_fn_outputs]


def main(base_url):
    report = {"sdk_version": tinker.__version__ if hasattr(tinker, "__version__") else None}
    service = tinker.ServiceClient(base_url=base_url, api_key="tml-conformance")
    caps = service.get_server_capabilities()
    report["models"] = [m.model_name for m in caps.supported_models]

    training = service.create_lora_training_client(BASE_MODEL, rank=8, seed=7)
    info = training.get_info()
    report["model_id"] = training.model_id if hasattr(training, "model_id") else info.model_id
    report["info_model_name"] = info.model_data.model_name

    # A small repetitive corpus the tiny model can fit quickly.
    seqs = [[1000 + (i * 7 + j) % 50 for j in range(40)] for i in range(4)]
    data = [datum(s) for s in seqs]
    losses = []
    for _ in range(8):
        fb = training.forward_backward(data, "cross_entropy")
        opt = training.optim_step(types.AdamParams(learning_rate=2e-2, grad_clip_norm=1.0))
        losses.append(fb.result().metrics["loss:sum"])
        report["optim_metrics"] = opt.result().metrics
    report["losses"] = losses

    fwd = training.forward(data, "cross_entropy").result()
    report["forward_loss"] = fwd.metrics["loss:sum"]
    report["forward_logprob_sum"] = -sum(sum(lp) for lp in logprob_lists(fwd))

    rl_datum = types.Datum(
        model_input=types.ModelInput.from_ints(seqs[0][:-1]),
        loss_fn_inputs={
            "target_tokens": seqs[0][1:],
            "logprobs": logprob_lists(fwd)[0],
            "advantages": [1.0] * (len(seqs[0]) - 1),
        },
    )
    ppo = training.forward_backward([rl_datum], "ppo", {"clip_low_threshold": 0.9, "clip_high_threshold": 1.1})
    report["ppo_loss"] = ppo.result().metrics["loss:sum"]
    training.optim_step(types.AdamParams(learning_rate=0.0)).result()

    state_path = training.save_state("ckpt-1").result().path
    report["state_path"] = state_path
    saved_logprobs = logprob_lists(training.forward(data, "cross_entropy").result())
    sampler_path = training.save_weights_for_sampler("sampler-1").result().path
    report["sampler_path"] = sampler_path

    sampling = training.save_weights_and_get_sampling_client()
    prompt = types.ModelInput.from_ints(seqs[0][:10])
    params = types.SamplingParams(max_tokens=12, seed=1234, temperature=1.0)
    s1 = sampling.sample(prompt, 3, params, include_prompt_logprobs=True, topk_prompt_logprobs=2).result()
    s2 = sampling.sample(prompt, 3, params).result()
    report["sample_tokens"] = [list(map(int, s.tokens)) for s in s1.sequences]
    report["sample_tokens_again"] = [list(map(int, s.tokens)) for s in s2.sequences]
    report["sample_logprobs_len"] = [len(s.logprobs) for s in s1.sequences]
    report["prompt_logprobs"] = s1.prompt_logprobs
    report["topk_prompt_logprobs"] = [
        None if row is None else [[int(t), float(v)] for t, v in row] for row in s1.topk_prompt_logprobs
    ]
    # compute_logprobs on a training sequence ≈ forward logprobs of the same tokens.
    computed = sampling.compute_logprobs(types.ModelInput.from_ints(seqs[0])).result()
    report["compute_logprobs"] = computed
    report["forward_logprobs_seq0"] = saved_logprobs[0]

    # Train further, then restore: the restored model must reproduce the saved logprobs.
    training.forward_backward(data, "cross_entropy").result()
    training.optim_step(types.AdamParams(learning_rate=5e-2)).result()
    report["logprobs_after_extra_step"] = logprob_lists(training.forward(data, "cross_entropy").result())[0]
    training.load_state(state_path).result()
    report["logprobs_after_load_state"] = logprob_lists(training.forward(data, "cross_entropy").result())[0]
    training.load_state_with_optimizer(state_path).result()
    report["logprobs_after_load_state_with_optimizer"] = logprob_lists(
        training.forward(data, "cross_entropy").result()
    )[0]
    report["saved_logprobs_seq0"] = saved_logprobs[0]

    restored = service.create_training_client_from_state(state_path)
    report["restored_logprobs"] = logprob_lists(restored.forward(data, "cross_entropy").result())[0]
    restored_losses = []
    for _ in range(3):
        fb = restored.forward_backward(data, "cross_entropy")
        restored.optim_step(types.AdamParams(learning_rate=1e-2, grad_clip_norm=1.0)).result()
        restored_losses.append(fb.result().metrics["loss:sum"])
    report["restored_losses"] = restored_losses

    path_sampler = service.create_sampling_client(model_path=sampler_path)
    report["path_sampler_base_model"] = path_sampler.get_base_model()
    report["path_sample"] = [list(map(int, s.tokens)) for s in path_sampler.sample(prompt, 1, params).result().sequences]
    base_sampler = service.create_sampling_client(base_model=BASE_MODEL)
    report["base_sample_len"] = len(base_sampler.sample(prompt, 1, params).result().sequences[0].tokens)

    rest = service.create_rest_client()
    run_id = state_path.split("/")[2]
    checkpoints = rest.list_checkpoints(run_id).result().checkpoints
    report["checkpoint_ids"] = sorted(c.checkpoint_id for c in checkpoints)
    report["training_run_base_model"] = rest.get_training_run(run_id).result().base_model
    rest.delete_checkpoint(run_id, "sampler_weights/sampler-1").result()
    report["checkpoint_ids_after_delete"] = sorted(
        c.checkpoint_id for c in rest.list_checkpoints(run_id).result().checkpoints
    )
    print("REPORT " + json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
