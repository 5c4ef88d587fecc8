"""Errors that map to HTTP answers ({"detail": ...}) or to failed futures."""


class EngineError(Exception):
    """A request the engine refuses; `status` is the HTTP status to answer with."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail


def bad_request(detail: str) -> EngineError:
    return EngineError(400, detail)


def not_found(detail: str) -> EngineError:
    return EngineError(404, detail)


def conflict(detail: str) -> EngineError:
    return EngineError(409, detail)


class RequestFailed(Exception):
    """Raised while executing a future; becomes {"error": ..., "category": ...}."""

    def __init__(self, message: str, category: str = "user"):
        super().__init__(message)
        self.message = message
        self.category = category
