#!/usr/bin/env bash
# engine/offline/check.sh [OUT_DIR] — on a machine with PyTorch (and a GPU) but no package index.
#
# Run from the repo root after `npm run engine:pack-offline` put .offline/ there (or point
# ENGINE_OFFLINE_PACK at the folder; PYTHON names the interpreter that has PyTorch, default
# python3). Within ENGINE_CHECK_BUDGET seconds (default 480) it:
#   1. installs the packed wheels beside the machine's own PyTorch (under ENGINE_CHECK_WORK,
#      default /tmp/engine-check-work; nothing system-wide) and unpacks the tokenizers;
#   2. tests    the engine tests of the device paths (fast sampler with CUDA graphs, the
#               mixed-precision head, the HTTP engine sampling beside training, the multi-tensor
#               non-finite gradient check, sync-free uploads) on the device there;
#   3. train, concurrent, overlap, sample
#               the engine benchmark, one section at a time, on a random-weight checkpoint of
#               Qwen3-0.6B's shapes (ENGINE_CHECK_PRESET), every baseline on the same device and dtype;
#   4. profile  torch.profiler's top operators of the engine's and the plain loop's training step;
#      decode   the fast sampler's decode step split into model, draws and host time (with and
#               without CUDA graphs and the adapter), and its top operators;
#   5. suite    the rest of the engine tests in float32 (not the SDK conformance tests, which
#               install SDKs from PyPI, nor the pack's own test, which needs Node).
# ENGINE_CHECK_STAGES picks stages (default: all, in that order). Each stage is cut off at its
# share of what is left of the budget. What lands in OUT_DIR, few files so that it all comes back:
#   check.log   everything printed, stage by stage
#   env.txt     versions, the GPU, nvidia-smi
#   bench.json  every benchmark number and ratio so far (rewritten after each measurement)
#   profile.txt, decode.txt, suite.log
set -uo pipefail

OUT_DIR=${1:-${OUT:-/tmp/engine-check}}
PACK=${ENGINE_OFFLINE_PACK:-.offline}
BUDGET=${ENGINE_CHECK_BUDGET:-480}
PYTHON=${PYTHON:-python3}
PRESET=${ENGINE_CHECK_PRESET:-qwen3-0.6b}
WORK=${ENGINE_CHECK_WORK:-/tmp/engine-check-work}  # installed wheels, tokenizers, checkpoint
STAGES=" ${ENGINE_CHECK_STAGES:-tests train concurrent overlap sample profile decode suite} "
REPO=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT_DIR" "$WORK"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
PACK=$(cd "$PACK" 2>/dev/null && pwd || echo "$PACK")
LOG=$OUT_DIR/check.log
cd "$REPO"
started=$SECONDS
left() { echo $((BUDGET - (SECONDS - started))); }
# Seconds for a stage: its share, never past what is left.
slice() { local want=$1 l; l=$(left); (( l < want )) && want=$l; (( want < 0 )) && want=0; echo "$want"; }
wanted() { [[ $STAGES == *" $1 "* ]] && (( $(left) > ${2:-20} )); }
say() { echo "$*" | tee -a "$LOG"; }
stage() { say "== $* ($(left) s left, $(date -u +%T))"; }

export PYTHONUNBUFFERED=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 TINKER_TELEMETRY=0 TOKENIZERS_PARALLELISM=false
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

stage "install"
if [ -d "$PACK/wheels" ]; then
  SITE=$WORK/site
  rm -rf "$SITE"
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
    "$PACK"/wheels/*.whl >>"$LOG" 2>&1 || { say "installing the packed wheels failed"; exit 1; }
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
if [ -d "$PACK/tokenizers" ]; then
  TOK=$WORK/tokenizers
  rm -rf "$TOK"
  for gz in "$PACK"/tokenizers/*/models/tokenizer.json.gz; do
    dest="$TOK/${gz#"$PACK"/tokenizers/}"
    mkdir -p "$(dirname "$dest")"
    gunzip -c "$gz" > "${dest%.gz}"
  done
  export TINKER_ENGINE_TOKENIZERS_DIR=$TOK
fi
{
  date -u
  nvidia-smi 2>&1 || echo "no nvidia-smi"
  "$PYTHON" - <<'PY'
import importlib, sys
import torch
print("python", sys.version.split()[0])
for name in ("torch", "transformers", "peft", "tokenizers", "fastapi", "uvicorn", "numpy", "pytest"):
    try:
        m = importlib.import_module(name)
        print(f"{name} {getattr(m, '__version__', '?')} from {getattr(m, '__file__', '?')}")
    except Exception as e:  # noqa: BLE001
        print(f"{name}: {type(e).__name__}: {e}")
print("cuda", torch.cuda.is_available(), torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")
PY
} > "$OUT_DIR/env.txt" 2>&1
tee -a "$LOG" < "$OUT_DIR/env.txt"
DEVICE=$("$PYTHON" -c "import torch; print('cuda' if torch.cuda.is_available() else 'cpu')")
"$PYTHON" -c "import sys; sys.path.insert(0, 'engine'); import tinker_engine.server" >>"$LOG" 2>&1 \
  || { say "the engine does not import with these packages (see above)"; exit 1; }

if wanted tests; then
  stage "tests on $DEVICE"
  (cd engine && timeout "$(slice 90)" "$PYTHON" -m pytest -q -p no:cacheprovider \
    tests/test_fast_decode.py tests/test_head.py tests/test_grads_finite.py tests/test_device_transfers.py \
    tests/test_uninitialized_memory.py ${ENGINE_CHECK_PYTEST_ARGS:-} 2>&1) | tee -a "$LOG"
  say "tests exit ${PIPESTATUS[0]}"
fi

if [ "$DEVICE" = cuda ]; then
  CKPT=$WORK/checkpoint-$PRESET
  if [ ! -f "$CKPT/config.json" ] && [[ $STAGES =~ " "(train|concurrent|overlap|sample|profile|decode)" " ]]; then
    stage "checkpoint $PRESET"
    timeout "$(slice 90)" "$PYTHON" bench/engine/make_checkpoint.py --preset "$PRESET" --out "$CKPT" 2>&1 \
      | tail -2 | tee -a "$LOG"
  fi
  MODEL_ARGS=(--device cuda --model "$CKPT")
else
  MODEL_ARGS=(--device cpu ${ENGINE_CHECK_CPU_ARGS:-})
fi

# One benchmark section per run, each with its own JSON, merged into bench.json after each.
PARTS=$WORK/bench-parts
rm -rf "$PARTS"; mkdir -p "$PARTS"
merge_bench() {
  "$PYTHON" - "$PARTS" "$OUT_DIR" <<'PY'
import json, sys
from pathlib import Path
parts, out = Path(sys.argv[1]), Path(sys.argv[2])
merged, ratios = {}, {}
for part in sorted(parts.glob("*.json")):
    data = json.loads(part.read_text() or "{}")
    ratios.update(data.pop("ratios", {}))
    merged.update(data)
merged["ratios"] = ratios
(out / "bench.json").write_text(json.dumps(merged, indent=2))
PY
}
for section in train concurrent overlap sample; do
  case $section in train) share=75 ;; concurrent) share=150 ;; overlap) share=75 ;; sample) share=45 ;; esac
  if wanted "$section" 30; then
    stage "benchmark: $section"
    timeout "$(slice "$share")" "$PYTHON" bench/engine/bench_engine.py "${MODEL_ARGS[@]}" --sections "$section" \
      --json-out "$PARTS/$section.json" 2>&1 | tee -a "$LOG"
    say "benchmark $section exit ${PIPESTATUS[0]}"
    merge_bench
  fi
done

# profile_stage STAGE SHARE SCRIPT OUT_FILE CPU_ARGS...: a profile script on the checkpoint with
# --variants on CUDA, on a small CPU configuration otherwise.
profile_stage() {
  local name=$1 share=$2 script=$3 out=$4; shift 4
  wanted "$name" 30 || return 0
  stage "$name"
  local args=("$@")
  [ "$DEVICE" = cuda ] && args=("${MODEL_ARGS[@]}" --variants)
  timeout "$(slice "$share")" "$PYTHON" "bench/engine/$script" "${args[@]}" > "$OUT_DIR/$out" 2>&1
  say "$name exit $?"
}
profile_stage profile 90 profile_train.py profile.txt --device cpu --datums 2 --length 64 --rows 12
profile_stage decode 60 profile_decode.py decode.txt --device cpu --rows 8 --tokens 4 --profile-rows 12

if wanted suite 30; then
  stage "suite (no SDK conformance)"
  # In float32: the suite's expectations are float32's (bf16 is checked by the tests stage's
  # dtype test and measured by the benchmark).
  (cd engine && TINKER_ENGINE_DTYPE=float32 timeout "$(slice 100000)" "$PYTHON" -m pytest -q -p no:cacheprovider tests \
    --ignore tests/test_fast_decode.py --ignore tests/test_head.py --ignore tests/test_grads_finite.py --ignore tests/test_device_transfers.py \
    --ignore tests/test_uninitialized_memory.py \
    --ignore tests/test_offline_pack.py \
    --ignore tests/test_conformance_sdk.py --ignore tests/test_conformance_custom_loss.py 2>&1) > "$OUT_DIR/suite.log"
  say "suite exit ${PIPESTATUS[0]}: $(tail -1 "$OUT_DIR/suite.log")"
fi
stage "done"
