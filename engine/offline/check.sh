#!/usr/bin/env bash
# engine/offline/check.sh [OUT_DIR] [--full] — the engine's GPU check, on a machine with PyTorch (and a
# GPU) but no package index. Run from the repo root after `npm run engine:pack-offline` put .offline/
# there. The check is check.py beside this file (its docstring tells the stages, profiles, budget and
# what lands in OUT_DIR); it needs only the standard library, so it runs under the interpreter that
# has PyTorch: PYTHON (default python3), which every stage uses too.
#   ENGINE_CHECK_PROFILE  quick (default: the device tests and the three ratios, 350 s) or full (540 s)
#   ENGINE_CHECK_BUDGET   seconds; a hard ceiling: the check ends within it + 10 s
#   ENGINE_CHECK_STAGES   e.g. "train concurrent": these stages only, in this order
#   ENGINE_OFFLINE_PACK, ENGINE_CHECK_WORK, ENGINE_CHECK_PRESET, ENGINE_CHECK_PYTEST_ARGS, ENGINE_CHECK_CPU_ARGS
exec "${PYTHON:-python3}" "$(dirname "$0")/check.py" "$@"
