import sys

EXPECTED = [
    "ana@example.com",
    "ben@example.org",
    "chen@example.net",
    "dana@example.com",
    "emil@example.de",
    "fatima@example.ma",
]

try:
    lines = [line.strip() for line in open("/app/emails.txt").read().splitlines() if line.strip()]
except OSError as e:
    sys.exit(str(e))
if lines != EXPECTED:
    sys.exit(f"/app/emails.txt holds {lines}, expected {EXPECTED}")
print("ok")
