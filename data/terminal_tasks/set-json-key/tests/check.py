import json
import sys

EXPECTED = {
    "name": "indexer",
    "debug": False,
    "max_workers": 8,
    "paths": {"input": "/data/in", "output": "/data/out"},
    "languages": ["en", "pt", "de"],
}

try:
    with open("/app/settings.json") as f:
        got = json.load(f)
except (OSError, ValueError) as e:
    sys.exit(f"/app/settings.json: {e}")
# `is False` and type checks: 0 or "false" are not the JSON false the task asks for.
if got != EXPECTED or got.get("debug") is not False or type(got.get("max_workers")) is not int:
    sys.exit(f"/app/settings.json holds {got}, expected {EXPECTED}")
print("ok")
