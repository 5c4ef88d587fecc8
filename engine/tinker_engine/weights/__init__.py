"""Weights out per model family: a Tinker LoRA adapter merged onto a Hugging Face base checkpoint.

Entry points:
  merge_adapter(adapter_dir, base_dir, out_dir, strategy="auto"|"shard"|"full", dtype=None|"float32"|…)
      (merge.py) -> summary dict; raises MergeError (errors.py) with a one-line message on bad input.
  detect_profile(config, tensor_names) (profiles.py): the family (Qwen3, Qwen3 MoE, Qwen3.5/3.6 dense and
      MoE, GPT-OSS, DeepSeek V3, Kimi K2/K2.5, Nemotron H) and how adapter names map onto its tensors.
  Planner / Op / apply_ops (plan.py): adapter pairs -> per-tensor operations, and their float32 arithmetic.
  Codec / FACTORIES (codecs.py): the hook for stored formats other than plain float tensors (MXFP4, FP8
      blocks, INT4 pack-quantized): decode -> add deltas in float32 -> encode, inside the shard loop.
"""

from .codecs import FACTORIES, Codec, MergeOptions
from .errors import MergeError
from .merge import AUTO_SHARD_SHARE, STRATEGIES, merge_adapter
from .plan import Op, Planner, apply_ops
from .profiles import Profile, detect_profile

__all__ = ["AUTO_SHARD_SHARE", "FACTORIES", "STRATEGIES", "Codec", "MergeError", "MergeOptions", "Op", "Planner",
           "Profile", "apply_ops", "detect_profile", "merge_adapter"]
