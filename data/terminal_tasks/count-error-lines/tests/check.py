import sys

try:
    text = open("/app/error_count.txt").read().strip()
except OSError as e:
    sys.exit(str(e))
if text != "7":
    sys.exit(f"/app/error_count.txt holds {text!r}, expected 7")
print("ok")
