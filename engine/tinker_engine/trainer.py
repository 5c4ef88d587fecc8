"""A LoRA training model: forward/backward with gradient accumulation, Adam steps, state I/O."""

import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load as safetensors_load
from safetensors.torch import save_file

from . import attention
from .base_models import BaseModelSpec, instance_sharing_weights
from .errors import RequestFailed
from .head import HeadProjection
from .images import decoder_inputs
from .lora import LoraSpec, adapter_state, attach_lora, check_adapter_state, load_adapter_state
from .custom_loss import Accumulator, LossError
from .losses import LOSSES, OUTPUT_TYPE
from .transfers import upload
from .wire import ForwardRequest

ADAM_DEFAULTS = {
    "learning_rate": 1e-4,
    "beta1": 0.9,
    "beta2": 0.95,
    "eps": 1e-12,
    "weight_decay": 0.0,
    "grad_clip_norm": 0.0,
}
def body_and_head(hf_model):
    """The decoder stack and the output head of a causal LM (works through peft wrappers)."""
    return hf_model.get_decoder(), hf_model.get_output_embeddings()


def target_logprobs(hf_model, datums: list, device) -> list:
    """Per-datum tensors shaped like target_tokens: log p_θ(target_tokens[i] | tokens[:i+1])."""
    body, head = body_and_head(hf_model)
    lengths = [len(d.tokens) for d in datums]
    max_len = max(lengths)
    # Right padding needs no attention mask: causal attention never looks at later positions.
    ids = torch.zeros((len(datums), max_len), dtype=torch.long)
    for i, d in enumerate(datums):
        ids[i, : lengths[i]] = torch.from_numpy(d.tokens)
    widths = [1 if d.inputs["target_tokens"].ndim == 1 else d.inputs["target_tokens"].shape[1] for d in datums]
    k = max(widths)
    targets = torch.zeros((sum(lengths), k), dtype=torch.long)
    offset = 0
    for d, n, w in zip(datums, lengths, widths):
        targets[offset : offset + n, :w] = torch.from_numpy(d.inputs["target_tokens"].reshape(n, w))
        offset += n
    if any(d.images for d in datums):  # the model's own image features and M-RoPE positions
        kwargs, _ = decoder_inputs(hf_model, upload(ids, device), [d.images for d in datums], device)
        hidden = body(**kwargs, use_cache=False).last_hidden_state
    else:
        hidden = body(input_ids=upload(ids, device), use_cache=False).last_hidden_state
    rows = torch.cat([hidden[i, : lengths[i]] for i in range(len(datums))])
    logprobs = HeadProjection(head).target_logprobs(rows, upload(targets, device))
    out, offset = [], 0
    for d, n, w in zip(datums, lengths, widths):
        lp = logprobs[offset : offset + n, :w]
        out.append(lp[:, 0] if d.inputs["target_tokens"].ndim == 1 else lp)
        offset += n
    return out


def _to_numpy(tensors: list) -> list:
    """Float32 numpy copies with one device-to-host transfer for the lot."""
    if not tensors:
        return []
    flat = torch.cat([t.detach().float().reshape(-1) for t in tensors]).cpu().numpy()
    out, offset = [], 0
    for t in tensors:
        out.append(flat[offset : offset + t.numel()].reshape(t.shape))
        offset += t.numel()
    return out


def micro_batches(datums: list, max_tokens: int) -> list:
    """Consecutive groups whose padded size (count × longest) stays within max_tokens."""
    batches, current, longest = [], [], 0
    for d in datums:
        n = len(d.tokens)
        if current and (len(current) + 1) * max(longest, n) > max_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(d)
        longest = max(longest, n)
    if current:
        batches.append(current)
    return batches


class TrainingModel:
    def __init__(self, base: torch.nn.Module, spec: BaseModelSpec, lora: LoraSpec, device, max_batch_tokens: int,
                 exact_attention_backward: bool = True):
        self.spec = spec
        self.lora = lora
        self.device = device
        self.max_batch_tokens = max_batch_tokens
        instance = instance_sharing_weights(base)
        if exact_attention_backward:  # bitwise reproducible steps on GPUs too (attention.py)
            attention.use_in(instance)
        self.peft = attach_lora(instance, lora)
        self.params = {n: p for n, p in self.peft.named_parameters() if p.requires_grad}
        for p in self.params.values():
            p.data = p.data.float()  # adapters train in fp32 even over a bf16 base
        self.optimizer = self._new_optimizer()
        # Bumped by every operation that may change weights or optimizer state (what a save holds).
        self.version = 0

    def _new_optimizer(self):
        d = ADAM_DEFAULTS
        return torch.optim.AdamW(
            list(self.params.values()),
            lr=d["learning_rate"],
            betas=(d["beta1"], d["beta2"]),
            eps=d["eps"],
            weight_decay=d["weight_decay"],
        )

    # ---------------------------------------------------------------- forward / backward

    def forward_backward(self, req: ForwardRequest) -> dict:
        custom = None if req.custom is None else Accumulator(req.custom, req.data)
        loss_fn = custom or LOSSES[req.loss_fn]
        hf = self.peft.get_base_model()
        saved_grads = None if req.forward_only else self._grads_snapshot()
        # No host sync inside the loop: on a GPU the next micro-batch's forward is queued while this
        # one's backward runs. Losses and logprobs come back in one transfer after the last one; a
        # non-finite loss then fails the request and its gradients are restored like any failure.
        losses, logprobs_D = [], []
        try:
            for batch in micro_batches(req.data, self.max_batch_tokens):
                with torch.set_grad_enabled(not req.forward_only):
                    logprobs = target_logprobs(hf, batch, self.device)
                    loss = None
                    for d, lp in zip(batch, logprobs):
                        inputs = {
                            k: upload(torch.from_numpy(v), self.device) for k, v in d.inputs.items() if k != "target_tokens"
                        }
                        try:
                            datum_loss = loss_fn(lp, inputs, req.loss_fn_config)
                        except LossError as e:  # the uploaded loss failed on this data: the request's fault
                            raise RequestFailed(str(e)) from None
                        loss = datum_loss if loss is None else loss + datum_loss
                if not req.forward_only:
                    loss.backward()
                losses.append(loss.detach())
                logprobs_D.extend(lp.detach() for lp in logprobs)
            total = 0.0
            for value in torch.stack(losses).tolist():
                if not math.isfinite(value):
                    raise RequestFailed(f"loss is {value} (non-finite); gradients were not updated")
                total += value
            outputs = [{"logprobs": lp} for lp in _to_numpy(logprobs_D)]
            if saved_grads is not None and not self._grads_finite():
                raise RequestFailed("gradients are non-finite (NaN/inf); gradients were not updated")
        except BaseException:
            if saved_grads is not None:
                self._grads_restore(saved_grads)
            raise
        if req.loss_fn == "cross_entropy":
            for d, out in zip(req.data, outputs):
                weights = d.inputs.get("weights")
                w = np.ones_like(out["logprobs"]) if weights is None else weights
                out["elementwise_loss"] = (-(w * out["logprobs"])).astype(np.float32)
        if custom is not None:
            return {"loss_fn_output_type": "CustomLossReturn", "loss_fn_outputs": outputs,
                    "metrics": {"loss:sum": total, **custom.metrics()}}
        return {
            "loss_fn_output_type": OUTPUT_TYPE[req.loss_fn],
            "loss_fn_outputs": outputs,
            "metrics": {"loss:sum": total},
        }

    def _grads_snapshot(self) -> dict:
        return {n: (None if p.grad is None else p.grad.clone()) for n, p in self.params.items()}

    def _grads_restore(self, saved: dict) -> None:
        for n, p in self.params.items():
            p.grad = saved[n]

    def _grads_finite(self) -> bool:
        return grads_finite([p.grad for p in self.params.values() if p.grad is not None])

    # ---------------------------------------------------------------------- optimiser

    def optim_step(self, adam: dict) -> dict:
        self.version += 1
        params = list(self.params.values())
        metrics = {}
        if adam["grad_clip_norm"] > 0:
            # The per-parameter loop keeps CPU results bitwise stable; on a GPU, fused kernels.
            foreach = None if self.device.type == "cuda" else False
            norm = torch.nn.utils.clip_grad_norm_(params, adam["grad_clip_norm"], foreach=foreach)
            metrics["unclipped_grad_l2:mean"] = float(norm)
        for group in self.optimizer.param_groups:
            group["lr"] = adam["learning_rate"]
            group["betas"] = (adam["beta1"], adam["beta2"])
            group["eps"] = adam["eps"]
            group["weight_decay"] = adam["weight_decay"]
        with torch.no_grad():
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return metrics

    # -------------------------------------------------------------------- state I/O

    def adapter_state(self) -> dict:
        return adapter_state(self.peft)

    def save(self, directory: Path, with_optimizer: bool) -> None:
        """Writes the PEFT adapter layout (+ optimizer state) into an existing directory."""
        save_file(
            {k: v.contiguous().cpu() for k, v in self.adapter_state().items()},
            str(directory / "adapter_model.safetensors"),
            metadata={"format": "pt"},
        )
        config = self.peft.peft_config["default"].to_dict()
        config["base_model_name_or_path"] = self.spec.name
        (directory / "adapter_config.json").write_text(json.dumps(config, indent=2, default=list))
        if with_optimizer:
            tensors, steps = {}, {}
            for name, p in self.params.items():
                state = self.optimizer.state.get(p)
                if not state:
                    continue
                steps[name] = float(state["step"])
                tensors[f"{name}::exp_avg"] = state["exp_avg"].contiguous().cpu()
                tensors[f"{name}::exp_avg_sq"] = state["exp_avg_sq"].contiguous().cpu()
            save_file(tensors, str(directory / "optimizer.safetensors"))
            (directory / "optimizer.json").write_text(json.dumps({"steps": steps}))

    def load(self, read, with_optimizer: bool) -> None:
        """Loads a checkpoint; `read(file_name)` gives a file's bytes (verified against the
        checksums recorded at save) or None when absent. Everything is read and checked before
        anything changes, so a damaged or mismatched checkpoint leaves the model as it was."""
        adapter_bytes = read("adapter_model.safetensors")
        if adapter_bytes is None:
            raise RequestFailed("checkpoint has no adapter_model.safetensors")
        state = _parse("adapter_model.safetensors", safetensors_load, adapter_bytes)
        try:
            check_adapter_state(self.peft, state)
        except ValueError as e:
            raise RequestFailed(f"checkpoint does not fit this model: {e}") from None
        optimizer_state = {}
        if with_optimizer:
            tensor_bytes, steps_bytes = read("optimizer.safetensors"), read("optimizer.json")
            if tensor_bytes is None or steps_bytes is None:
                raise RequestFailed("checkpoint has no optimizer state")
            tensors = _parse("optimizer.safetensors", safetensors_load, tensor_bytes)
            steps = _parse("optimizer.json", lambda b: dict(json.loads(b)["steps"]), steps_bytes)
            for name, step in steps.items():
                p = self.params.get(name)
                if p is None:
                    raise RequestFailed(f"optimizer state names unknown parameter {name}")
                exp_avg, exp_avg_sq = tensors.get(f"{name}::exp_avg"), tensors.get(f"{name}::exp_avg_sq")
                if exp_avg is None or exp_avg_sq is None or exp_avg.shape != p.shape or exp_avg_sq.shape != p.shape:
                    raise RequestFailed(f"optimizer state of {name} is missing or does not match the parameter")
                optimizer_state[p] = {
                    "step": torch.tensor(step, dtype=torch.float32),
                    "exp_avg": exp_avg.to(self.device).clone(),
                    "exp_avg_sq": exp_avg_sq.to(self.device).clone(),
                }
        self.version += 1
        load_adapter_state(self.peft, {k: v.to(self.device) for k, v in state.items()})
        for p in self.params.values():
            p.grad = None
        self.optimizer = self._new_optimizer()
        self.optimizer.state.update(optimizer_state)


def _parse(file_name: str, parse, data: bytes):
    try:
        return parse(data)
    except Exception as e:  # noqa: BLE001 — any parser's complaint about bytes that are not the format
        raise RequestFailed(f"checkpoint file {file_name} is unreadable: {type(e).__name__}: {e}") from None


def grads_finite(grads: list) -> bool:
    """Whether every gradient is free of NaN and inf.

    A LoRA model has hundreds of small adapter tensors: an isfinite-and-reduce per tensor is two
    kernel launches each. AMP's multi-tensor check covers them in a few launches per device and
    dtype. Its unscale by 1.0 leaves every value bitwise as it was (the kernel skips the multiply
    at scale 1, and x * 1.0 == x exactly in IEEE arithmetic anyway).
    """
    groups = defaultdict(list)
    for g in grads:
        groups[(g.device, g.dtype)].append(g)
    flags = []
    for (device, _), same in groups.items():
        found_inf = torch.zeros(1, device=device)
        torch._amp_foreach_non_finite_check_and_unscale_(same, found_inf, torch.ones(1, device=device))
        flags.append(found_inf)
    return not any(f.item() for f in flags)  # one sync per device and dtype: one in practice
