# pkg/core.py
