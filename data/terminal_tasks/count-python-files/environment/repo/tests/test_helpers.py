# tests/test_helpers.py
