import sys

try:
    text = open("/app/total.txt").read().strip()
except OSError as e:
    sys.exit(str(e))
try:
    value = float(text)
except ValueError:
    sys.exit(f"/app/total.txt holds {text!r}, not a number")
if value != 3095:
    sys.exit(f"/app/total.txt holds {text!r}, expected 3095")
print("ok")
