# pkg/sub/helpers.py
