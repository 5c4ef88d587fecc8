"""What SDK 0.38 added to the protocol, driven through the official, unmodified SDK (its own venv).

Usage: python protocol_038_flow.py <base_url>. Prints one JSON object (REPORT …) for
test_conformance_sdk.py. Each entry either exercises a call or records how a call the engine does
not serve failed (exception type and message), so that the test can assert it failed cleanly —
by name, quickly, never by silently doing something else.
"""

import json
import sys
import time

import numpy as np
import tinker
from tinker import types

BASE_MODEL = "tiny-qwen3"


def datum(tokens):
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)},
    )


def failure(call):
    """(exception type, message, seconds) of a call expected to fail; None if it succeeded."""
    start = time.time()
    try:
        call()
    except Exception as e:  # noqa: BLE001 - we record whatever the SDK raises
        return {"type": type(e).__name__, "message": str(e)[:500], "seconds": time.time() - start}
    return None


def provenance_flow(training, stability, prompt, params):
    """Datums whose spans name recorded sequences, as cookbook 0.6.1 builds them: accepted for a
    served loss; a span claiming other tokens, or another sequence's, refused; stable_reinforce with
    good provenance refused only for being unserved, without provenance for lacking it."""
    out = stability.sample(prompt, 2, params).result()
    prompt_tokens = prompt.to_ints()
    seq, other = out.sequences
    n_p, n_s = len(prompt_tokens), len(seq.tokens)

    def rl_datum(sequence_id, sampled_offset=0):
        full = prompt_tokens + seq.tokens
        base = types.Datum(
            model_input=types.ModelInput.from_ints(full[:-1]),
            loss_fn_inputs={
                "target_tokens": full[1:],
                "logprobs": [0.0] * (n_p - 1) + list(seq.logprobs),
                "advantages": [0.0] * (n_p - 1) + [1.0] * n_s,
            },
        )
        return base.with_provenance(
            model_input=[types.PromptProvenanceSpan(sequence_id=seq.sequence_id, length=n_p),
                         types.SampledProvenanceSpan(sequence_id=sequence_id, offset=sampled_offset, length=n_s - 1)],
            loss_fn_inputs=[types.PromptProvenanceSpan(sequence_id=seq.sequence_id, offset=1, length=n_p - 1),
                            types.SampledProvenanceSpan(sequence_id=sequence_id, offset=sampled_offset, length=n_s)],
        )

    good = rl_datum(seq.sequence_id)
    no_spans = types.Datum(model_input=good.model_input, loss_fn_inputs=good.loss_fn_inputs)
    return {
        "sequence_ids": [seq.sequence_id, other.sequence_id],
        "same_tokens": seq.tokens == other.tokens,
        "accepted": training.forward_backward([good], "importance_sampling").result().metrics["loss:sum"],
        "shifted": failure(lambda: training.forward_backward([rl_datum(seq.sequence_id, 1)], "importance_sampling").result()),
        "other_sequence": failure(lambda: training.forward_backward([rl_datum(other.sequence_id)], "importance_sampling").result()),
        "stable_reinforce": failure(lambda: training.forward_backward([good], "stable_reinforce").result()),
        "stable_reinforce_no_spans": failure(lambda: training.forward_backward([no_spans], "stable_reinforce").result()),
    }


def attempt(call):
    """{"ok": value} or {"failed": failure}."""
    start = time.time()
    try:
        return {"ok": call()}
    except Exception as e:  # noqa: BLE001
        return {"failed": {"type": type(e).__name__, "message": str(e)[:300], "seconds": time.time() - start}}


def scoring_options(sampler, tokens):
    """0.38's scoring options of sample(); the test checks every value against a full forward."""
    n = len(tokens)
    prompt = types.ModelInput.from_ints(tokens)
    one = types.SamplingParams(max_tokens=1, seed=1)
    out = sampler.sample(prompt, 1, types.SamplingParams(max_tokens=4, seed=5, stop=[]), topk_sample_logprobs=3).result()
    seq = out.sequences[0]
    full = sampler.sample(types.ModelInput.from_ints(tokens + seq.tokens), 1, one, include_prompt_logprobs=True,
                          topk_prompt_logprobs=3).result()
    report = {"tokens": tokens, "sampled": seq.tokens, "sampled_logprobs": seq.logprobs,
              "topk_sample": [[list(cell) for cell in row] for row in seq.topk_logprobs],
              "full_prompt_logprobs": full.prompt_logprobs,
              "full_topk": [None if row is None else [list(cell) for cell in row] for row in full.topk_prompt_logprobs]}

    alt = sampler.sample(prompt, 1, types.SamplingParams(max_tokens=1, seed=2), prompt_alt_tokens_k=2).result()
    alt_tokens = alt.prompt_alt_tokens.tokens.to_numpy()
    report["alt_tokens"], report["alt_logprobs"] = alt_tokens.tolist(), alt.prompt_alt_tokens.logprobs.to_numpy().tolist()
    # The same alternatives named as targets, densely: the engine must score them alike.
    dense = types.TensorData(data=np.asarray(alt_tokens, dtype=np.int64), dtype="int64", shape=[n - 1, 2])
    scored = sampler.sample(prompt, 1, one, target_prompt_logprobs=dense).result().target_prompt_logprobs
    report["dense_target"] = {"shape": scored.shape, "values": scored.to_numpy().tolist(), "sparse": scored.sparse_crow_indices}
    # Sparse CSR: row 1 names the prompt's own token (column 2), row n - 2 names alternative 0.
    crow = [0, 0] + [1] * (n - 3) + [2]
    sparse = types.TensorData(data=[tokens[2], int(alt_tokens[n - 2][0])], dtype="int64", shape=[n - 1, 3],
                              sparse_crow_indices=crow, sparse_col_indices=[2, 0])
    scored = sampler.sample(prompt, 1, one, target_prompt_logprobs=sparse).result().target_prompt_logprobs
    report["sparse_target"] = {"shape": scored.shape, "values": scored.data, "crow": scored.sparse_crow_indices,
                               "col": scored.sparse_col_indices, "sent_crow": crow}
    return report


def public_methods():
    import inspect

    return {c.__name__: sorted(n for n, v in inspect.getmembers(c) if not n.startswith("_") and callable(v))
            for c in (tinker.ServiceClient, tinker.TrainingClient, tinker.SamplingClient, tinker.RestClient)}


def main(base_url):
    report = {"sdk_version": tinker.__version__, "public_methods": public_methods()}
    seqs = [[1000 + (i * 7 + j) % 50 for j in range(24)] for i in range(2)]
    data = [datum(s) for s in seqs]
    prompt = types.ModelInput.from_ints(seqs[0][:8])

    with tinker.ServiceClient(base_url=base_url, api_key="tml-conformance") as service:
        training = service.create_lora_training_client(BASE_MODEL, rank=4, seed=3).result()
        report["info_optimizer"] = training.get_info().optimizer_config.type
        training.forward_backward(data, "cross_entropy").result()
        training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
        state = training.save_state("s1").result().path

        # Create-via-load (session-addressed load_weights), with and without optimizer state.
        restored = service.create_training_client_from_state(state).result()
        with_opt = service.create_training_client_from_state_with_optimizer(state).result()
        report["restored_model_ids"] = [restored.model_id, with_opt.model_id]
        lp = [restored.forward(data, "cross_entropy").result().loss_fn_outputs[0]["logprobs"].tolist(),
              with_opt.forward(data, "cross_entropy").result().loss_fn_outputs[0]["logprobs"].tolist(),
              training.forward(data, "cross_entropy").result().loss_fn_outputs[0]["logprobs"].tolist()]
        report["restored_logprobs"] = lp
        report["restored_trains"] = with_opt.forward_backward(data, "cross_entropy").result().metrics["loss:sum"]

        # Sampled sequences carry session-scoped ids; `stop: []` disables EOS too.
        sampler = training.save_weights_and_get_sampling_client()
        params = types.SamplingParams(max_tokens=6, seed=5)
        out = sampler.sample(prompt, 3, params).result()
        report["sequence_ids"] = [s.sequence_id for s in out.sequences]
        report["sequence_ids_again"] = [s.sequence_id for s in sampler.sample(prompt, 2, params).result().sequences]
        no_stop = sampler.sample(prompt, 2, types.SamplingParams(max_tokens=10, seed=6, stop=[])).result()
        report["no_stop_lengths"] = [len(s.tokens) for s in no_stop.sequences]
        report["compute_logprobs_len"] = len(sampler.compute_logprobs(types.ModelInput.from_ints(seqs[0])).result())
        report["sampler_base_model"] = sampler.get_base_model()
        handle = sampler.get_sampler_handle()
        from_handle = tinker.SamplingClient.from_sampler_handle(handle)
        report["from_handle_tokens"] = len(from_handle.sample(prompt, 1, params).result().sequences[0].tokens)

        last_n = sampler.sample(prompt, 1, params, include_prompt_logprobs=True, prompt_logprobs_last_n=2).result()
        full = sampler.sample(prompt, 1, params, include_prompt_logprobs=True).result()
        report["last_n_prompt_logprobs"] = [None if x is None or x != x else x for x in last_n.prompt_logprobs]
        report["full_prompt_logprobs"] = full.prompt_logprobs

        report["scoring"] = scoring_options(sampler, seqs[0][:8])

        # Not served by this engine: each must fail by name, not be ignored.
        stability = service.create_sampling_client(base_model=BASE_MODEL, record_stability_info=True)
        report["provenance"] = provenance_flow(training, stability, prompt, params)
        report["refused"] = {
            "dimuon": failure(lambda: service.create_lora_training_client(
                BASE_MODEL, rank=4, optimizer=types.DimuonOptimizerConfig()).result()),
            "dimuon_params": failure(lambda: training.optim_step(types.DimuonParams(learning_rate=1e-3)).result()),
        }
        # The model keeps working after refused requests (their seq ids were consumed).
        report["after_refusals"] = training.forward_backward(data, "cross_entropy").result().metrics["loss:sum"]

        # Client-side custom loss (forward + forward_backward with the loss's gradients).
        def custom_loss(data_, logprobs_list):
            loss = sum(-lp.sum() for lp in logprobs_list)
            return loss, {"custom_loss": float(loss)}

        # (The SDK needs PyTorch in its own environment for this; without it the call says so.)
        report["custom_loss"] = attempt(lambda: sorted(training.forward_backward_custom(data, custom_loss).result().metrics))
        report["refused"]["save_weights_external"] = failure(lambda: training.save_weights_external("ext").result())
        report["after_external"] = training.forward_backward(data, "cross_entropy").result().metrics["loss:sum"]

        rest = tinker.RestClient(base_url=base_url, api_key="tml-conformance")
        run_id = state.split("/")[2]
        report["rest_checkpoints"] = sorted(c.checkpoint_id for c in rest.list_checkpoints(run_id).result().checkpoints)
        report["rest_run_by_path"] = rest.get_training_run_by_tinker_path(state).result().training_run_id
        report["rest_weights_info_rank"] = rest.get_weights_info_by_tinker_path(state).result().lora_rank
        report["rest"] = {
            "list_training_runs": attempt(lambda: len(rest.list_training_runs().result().training_runs)),
            "get_training_run": attempt(lambda: rest.get_training_run(run_id).result().base_model),
            "list_user_checkpoints": attempt(lambda: len(rest.list_user_checkpoints().result().checkpoints)),
            "get_server_capabilities": attempt(lambda: len(rest.get_server_capabilities().result().supported_models)),
            "get_session": attempt(lambda: len(rest.get_session(state.split("/")[2].split(":train:")[0]).result().training_run_ids)),
            "list_sessions": attempt(lambda: len(rest.list_sessions().result().sessions)),
            "set_checkpoint_ttl_from_tinker_path": attempt(lambda: rest.set_checkpoint_ttl_from_tinker_path(state, 3600).result()),
            "delete_checkpoint_from_tinker_path": attempt(lambda: rest.delete_checkpoint_from_tinker_path(
                training.save_state("s2").result().path).result()),
        }
        report["rest_refused"] = {
            "copy_weights": failure(lambda: rest.copy_weights(state, "other-project").result()),
            "service_copy_weights": failure(lambda: service.copy_weights(state).result()),
            "get_external_weights_urls": failure(lambda: rest.get_external_weights_urls(state).result()),
            "get_current_checkpoint_storage_usage": failure(lambda: rest.get_current_checkpoint_storage_usage().result()),
            "publish_checkpoint_from_tinker_path": failure(lambda: rest.publish_checkpoint_from_tinker_path(state).result()),
            "get_billing_usage": failure(lambda: rest.get_billing_usage("2026-01-01", "2026-02-01").result()),
            "get_audit_log": failure(lambda: rest.get_audit_log().result()),
            "unpublish_checkpoint_from_tinker_path": failure(lambda: rest.unpublish_checkpoint_from_tinker_path(state).result()),
            "assign_session_project": failure(lambda: rest.assign_session_project("s", "p").result()),
            "export_session_trace": failure(lambda: rest.export_session_trace("s").result()),
        }
    # Leaving the `with` block sent sessions/{id}/finish (an error there would have raised).
    report["closed"] = True
    print("REPORT " + json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
