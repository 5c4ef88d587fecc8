"""Runs one Inspect AI eval for `cookbook eval --inspect` with the Inspect venv's python: a fresh
eval of a task, or `eval_retry` of an unfinished log (Inspect re-runs only the samples that log
does not hold, so finished samples are never generated or scored again). The model is
`cookbook serve`'s OpenAI API, reached through Inspect's `openai-api` provider (its base URL and
key in COOKBOOK_BASE_URL / COOKBOOK_API_KEY). Samples run one at a time and the JSON log is
rewritten after each, so a crash loses at most the sample in flight.

Usage: python inspect_driver.py '<json spec>'; prints {"log": <path>, "status": ...} as its last line.
"""
import ctypes
import json
import os
import signal
import sys
import threading
import time


def die_with_parent():
    # The worker that started us may be killed outright; an orphaned eval would go on writing the
    # log that the retry on another worker resumes from.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    parent = os.getppid()

    def watch():
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(1)

    threading.Thread(target=watch, daemon=True).start()


def main():
    spec = json.loads(sys.argv[1])
    die_with_parent()
    from inspect_ai import eval as inspect_eval, eval_retry

    common = dict(log_dir=spec["log_dir"], log_format="json", log_buffer=1, max_samples=1, display="none")
    if spec.get("retry"):
        [log] = eval_retry(spec["retry"], **common)
    else:
        [log] = inspect_eval(
            spec["task"],
            model=f"openai-api/cookbook/{spec['model']}",
            task_args=spec.get("task_args") or {},
            limit=spec.get("limit"),
            max_tokens=spec["max_tokens"],
            temperature=spec["temperature"],
            seed=spec["seed"],
            **common,
        )
    print(json.dumps({"log": log.location, "status": log.status, "error": str(log.error.message) if log.error else None}))


if __name__ == "__main__":
    main()
