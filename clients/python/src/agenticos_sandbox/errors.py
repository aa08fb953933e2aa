"""Exceptions of the console's REST API, one class per problem type.

Every `/api/v1` error is `application/problem+json` whose `type` is
`https://agenticos.dev/problems/<kind>`; `error_for` turns an answer into the class of its kind.
No exception's text carries a request header, so the API token never appears in one.
"""

from __future__ import annotations

from typing import Any

PROBLEM_PREFIX = "https://agenticos.dev/problems/"


class ConsoleError(Exception):
    """Anything this client raises."""


class TransportError(ConsoleError):
    """The console did not answer (refused, reset, or no answer before the deadline)."""


class DeadlineExceeded(TransportError):
    """The call's deadline passed (retries included)."""


class ApiError(ConsoleError):
    """The console answered with a problem (`application/problem+json`)."""

    kind = ""

    def __init__(self, status: int, problem: dict[str, Any], method: str, path: str) -> None:
        self.status = status
        self.problem = problem
        self.type = str(problem.get("type") or "")
        self.title = str(problem.get("title") or "")
        self.detail = str(problem.get("detail") or "")
        self.errors = list(problem.get("errors") or [])
        self.method = method
        self.path = path
        super().__init__(f"{method} {path}: {status} {self.title}: {self.detail}".rstrip(": "))

    @property
    def fields(self) -> dict[str, str]:
        """Each invalid field's message, by field name."""
        return {str(e.get("field")): str(e.get("message")) for e in self.errors if isinstance(e, dict)}


class BadRequest(ApiError):
    kind = "bad-request"


class Unauthenticated(ApiError):
    """A missing, unknown or revoked token."""

    kind = "unauthenticated"


class TokenExpired(Unauthenticated):
    kind = "token-expired"


class Forbidden(ApiError):
    """The token's role does not allow this."""

    kind = "forbidden"


class NoOrganization(Forbidden):
    kind = "no-organization"


class PasswordChangeRequired(Forbidden):
    kind = "password-change-required"


class NotFound(ApiError):
    """Nothing there, or another organization's (the API answers both alike)."""

    kind = "not-found"


class Conflict(ApiError):
    """For example a finished run's workspace ("This run is finished.")."""

    kind = "conflict"


class Gone(ApiError):
    """The workspace's files are gone at the host (a lost workspace)."""

    kind = "gone"


class PayloadTooLarge(ApiError):
    kind = "payload-too-large"


class InvalidInput(ApiError):
    kind = "invalid-input"


class HostCheckFailed(InvalidInput):
    kind = "host-check-failed"


class TooManyRequests(ApiError):
    kind = "too-many-requests"


class HostError(ApiError):
    """The sandbox host did not cooperate (502)."""

    kind = "bad-gateway"


class HostTimeout(ApiError):
    kind = "host-timeout"


class StoreFailed(ApiError):
    kind = "store-failed"


class StoreTimeout(ApiError):
    kind = "store-timeout"


class Unavailable(ApiError):
    kind = "unavailable"


class InternalError(ApiError):
    kind = "internal"


def _classes(root: type[ApiError]) -> list[type[ApiError]]:
    out = [root]
    for sub in root.__subclasses__():
        out.extend(_classes(sub))
    return out


BY_KIND: dict[str, type[ApiError]] = {c.kind: c for c in _classes(ApiError) if c.kind}

BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthenticated,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    413: PayloadTooLarge,
    422: InvalidInput,
    429: TooManyRequests,
    502: HostError,
    503: Unavailable,
    504: HostTimeout,
}


def error_for(status: int, body: Any, method: str, path: str) -> ApiError:
    """The exception for an error answer: by its problem type, else by its status."""
    problem = body if isinstance(body, dict) else {"title": f"HTTP {status}", "detail": ""}
    kind = str(problem.get("type") or "")
    kind = kind[len(PROBLEM_PREFIX) :] if kind.startswith(PROBLEM_PREFIX) else ""
    cls = BY_KIND.get(kind) or BY_STATUS.get(status) or (InternalError if status >= 500 else ApiError)
    return cls(status, problem, method, path)
