"""The reference's code_rl (tinker-cookbook 0.6.1 recipes/code_rl) on the cases of
code-rl.parity.test.ts, read as JSON from stdin: each row's question and normalised tests, the test
cases it sends, code extraction, its TEST_UTIL, and sandbox_check_correctness's verdicts with its
SandboxFusion client pointed at the URL given as argv[1]. The verdicts run the TEST_UTIL given in
the cases (ours, whose numpy import is optional: the local sandbox's Python may lack numpy); the
test checks that it differs from the reference's in that import only. Prints one JSON object."""

import asyncio
import json
import os
import sys

os.environ["SANDBOX_URL"] = sys.argv[1]

import tinker_cookbook.recipes.code_rl.code_grading as code_grading  # noqa: E402
from tinker_cookbook.recipes.code_rl.code_env import _build_question, _ensure_dict, _normalize_tests  # noqa: E402
from tinker_cookbook.recipes.code_rl.code_grading import (  # noqa: E402
    extract_code_from_model,
    postprocess_lcb_sample,
    sandbox_check_correctness,
)


async def main() -> None:
    cases = json.load(sys.stdin)
    reference_test_util = code_grading.TEST_UTIL
    code_grading.TEST_UTIL = cases["test_util"]
    rows = cases["rows"]
    tests = [_normalize_tests(r.get("tests") or r.get("ground_truth"), _ensure_dict(r.get("metadata", {}))) for r in rows]
    verdicts = await asyncio.gather(
        *(sandbox_check_correctness(tests[c["row"]], c["code"], timeout=c["timeout"]) for c in cases["checks"])
    )
    print(
        json.dumps(
            {
                "questions": [_build_question(r) for r in rows],
                "tests": tests,
                "test_cases": [postprocess_lcb_sample(t) for t in tests],
                "extracted": [extract_code_from_model(text) for text in cases["responses"]],
                "verdicts": [passed for passed, _ in verdicts],
                "test_util": reference_test_util,
            }
        )
    )


asyncio.run(main())
