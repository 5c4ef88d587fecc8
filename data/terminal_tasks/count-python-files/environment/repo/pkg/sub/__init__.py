# pkg/sub/__init__.py
