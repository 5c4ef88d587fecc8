"""Runs a two-sample Inspect AI task against `cookbook serve` through Inspect's OpenAI-compatible
provider (`openai-api/<service>/<model>`); prints the log's status, score and completions as JSON.

Usage: python inspect_eval.py <base_url> <model> <api_key> <log_dir>
"""
import json
import os
import sys

from inspect_ai import Task, eval as inspect_eval, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

base_url, model, api_key, log_dir = sys.argv[1:5]
os.environ["COOKBOOK_API_KEY"] = api_key
os.environ["COOKBOOK_BASE_URL"] = base_url

QUESTIONS = [("What is 2 + 2?", "4"), ("Name the capital of France.", "Paris")]


@task
def tiny_qa():
    return Task(dataset=[Sample(input=q, target=a) for q, a in QUESTIONS], solver=[generate()], scorer=includes())


[log] = inspect_eval(
    tiny_qa(), model=f"openai-api/cookbook/{model}", max_tokens=8, temperature=0, log_dir=log_dir, display="none"
)
samples = sorted(log.samples or [], key=lambda s: str(s.input))
print(
    json.dumps(
        {
            "status": log.status,
            "error": str(log.error) if log.error else None,
            "metrics": {k: m.value for score in log.results.scores for k, m in score.metrics.items()} if log.results else {},
            "samples": [{"input": s.input, "completion": s.output.completion} for s in samples],
        }
    )
)
