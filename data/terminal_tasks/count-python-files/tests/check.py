import sys

try:
    text = open("/app/py_count.txt").read().strip()
except OSError as e:
    sys.exit(str(e))
if text != "8":
    sys.exit(f"/app/py_count.txt holds {text!r}, expected 8")
print("ok")
