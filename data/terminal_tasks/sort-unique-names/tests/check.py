import sys

EXPECTED = [
    "Amelia", "Ava", "Emma", "Ethan", "Harper", "Isabella", "Liam",
    "Lucas", "Mason", "Mia", "Noah", "Olivia", "Sophia",
]

try:
    lines = open("/app/unique_names.txt").read().splitlines()
except OSError as e:
    sys.exit(str(e))
lines = [line.strip() for line in lines if line.strip()]
if lines != EXPECTED:
    sys.exit(f"/app/unique_names.txt holds {lines}, expected {EXPECTED}")
print("ok")
