"""Typed errors: every failure of the client is a `SealError` carrying the API's error code.

The daemon answers every error as `{"error": {"code", "message", "object"}}` and chooses the
HTTP status by who is at fault (docs/DESIGN.md §8 "Errors by fault"). This module maps the
code (and, for a code it does not know, the status) to one exception class, in one place, so
that a worker can catch what it can act on: fix the folder (`SealInvalidDocument`), stop
resubmitting a run that was judged with other documents (`SealConflict`), retry later
(`SealUnavailable`), or page an operator (`SealCorruptStore`).

`fault` mirrors the daemon's three faults: `caller` (exit 1 of `seal-submit`),
`infrastructure` and `corruption` (exit 2).
"""

from __future__ import annotations

from typing import Literal

Fault = Literal["caller", "infrastructure", "corruption"]


class SealError(Exception):
    """A request the daemon refused or could not serve, or a run folder refused locally."""

    fault: Fault = "infrastructure"

    def __init__(
        self,
        code: str,
        message: str,
        object: str | None = None,  # noqa: A002 - the API's field name
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(
            f"{code}: {message}" if object is None else f"{code}: {message} ({object})"
        )
        self.code = code
        self.message = message
        self.object = object
        self.status = status
        self.retry_after = retry_after

    def as_json(self) -> dict[str, object]:
        """The error in the API's shape, with the HTTP status (None for local errors)."""
        return {
            "code": self.code,
            "message": self.message,
            "object": self.object,
            "status": self.status,
        }


class SealFolderError(SealError):
    """The run folder is not in `seal judge`'s layout (checked before any request)."""

    fault: Fault = "caller"


class SealBadRequest(SealError):
    """400/403/405/413/414/415: the request itself is malformed or refused."""

    fault: Fault = "caller"


class SealUnauthorized(SealError):
    """401: a bearer token is required, or the one given is wrong."""

    fault: Fault = "caller"


class SealNotFound(SealError):
    """404: no such run, route, log entry or checkpoint."""

    fault: Fault = "caller"


class SealConflict(SealError):
    """409: other bytes are stored under this name, the roll is out of order, the run is
    decided or finalizing, or it does not verify."""

    fault: Fault = "caller"


class SealInvalidDocument(SealError):
    """422: a document is invalid, does not match its header, claims provenance it may not,
    references missing frames, is over a limit, or a blob hashes otherwise."""

    fault: Fault = "caller"


class SealUnavailable(SealError):
    """503/429/408 (502/504 from a proxy) or no connection, after the bounded retries: try
    again later."""

    fault: Fault = "infrastructure"


class SealCorruptStore(SealError):
    """500 `corrupt_store`/`planted_*`: stored evidence is wrong or unauthenticated. Never retried."""

    fault: Fault = "corruption"


class SealInternalError(SealError):
    """500 `internal` or another 5xx: a bug in the daemon. Never retried."""

    fault: Fault = "infrastructure"


class SealProtocolError(SealError):
    """The daemon answered outside docs/openapi.yaml (not JSON, a field missing or mistyped)."""

    fault: Fault = "infrastructure"


# The error codes the daemon names (docs/openapi.yaml, Error.code, and crates/seal-server), each with
# the class it raises. Codes not listed fall back to the class of their HTTP status.
ERROR_CLASSES: dict[str, type[SealError]] = {
    "bad_request": SealBadRequest,
    "bad_json": SealBadRequest,
    "bad_run_id": SealBadRequest,
    "bad_roll": SealBadRequest,
    "bad_hash": SealBadRequest,
    "bad_query": SealBadRequest,
    "method_not_allowed": SealBadRequest,
    "too_large": SealBadRequest,
    "uri_too_long": SealBadRequest,
    "unsupported_media_type": SealBadRequest,
    "reserved": SealBadRequest,
    "untrusted_reviewer": SealBadRequest,
    "headers_too_large": SealBadRequest,
    "unauthorized": SealUnauthorized,
    "not_found": SealNotFound,
    "no_route": SealNotFound,
    "not_logged": SealNotFound,
    "no_checkpoint": SealNotFound,
    "conflict": SealConflict,
    "out_of_order": SealConflict,
    "run_decided": SealConflict,
    "run_finalizing": SealConflict,
    "no_rolls": SealConflict,
    "not_verified": SealConflict,
    "not_sealed": SealConflict,
    "log_refused": SealConflict,
    "uncommitted": SealConflict,
    "review_conflict": SealConflict,
    "review_stale": SealConflict,
    # The review workbench's (a person's browser, not a worker): refused, unauthenticated, or
    # the run's decision tree changed since the page was shown.
    "cross_origin": SealBadRequest,
    "bad_csrf_token": SealBadRequest,
    "reviewer_mismatch": SealBadRequest,
    "no_session": SealUnauthorized,
    "shown_changed": SealConflict,
    # The judge policy could not be registered before a roll: no judge was asked.
    "judge_policy": SealUnavailable,
    "invalid_document": SealInvalidDocument,
    "mismatch": SealInvalidDocument,
    "provenance": SealInvalidDocument,
    "missing_blobs": SealInvalidDocument,
    "limit_exceeded": SealInvalidDocument,
    "hash_mismatch": SealInvalidDocument,
    "invalid_review": SealInvalidDocument,
    "timeout": SealUnavailable,
    "busy": SealUnavailable,
    "unavailable": SealUnavailable,
    "overloaded": SealUnavailable,
    "log_not_admitted": SealUnavailable,
    "no_signing_key": SealUnavailable,
    # Both judge slots are down: the roll was stored, not judged; the same POST after
    # Retry-After continues it.
    "judges_unavailable": SealUnavailable,
    # The daemon is set up wrong (a key, a secret, a variable): its operator must fix it.
    "misconfigured": SealUnavailable,
    "corrupt_store": SealCorruptStore,
    "planted_attempt": SealCorruptStore,
    "planted_document": SealCorruptStore,
    "planted_seal": SealCorruptStore,
    "planted_snapshot": SealCorruptStore,
    "planted_evidence": SealCorruptStore,
    "planted_header": SealCorruptStore,
    "planted_brief": SealCorruptStore,
    "planted_play_spec": SealCorruptStore,
    "planted_proof_package": SealCorruptStore,
    "planted_roll": SealCorruptStore,
    "internal": SealInternalError,
}

# Codes the client itself raises (no HTTP answer behind them).
LOCAL_CODES = ("bad_folder", "connection", "protocol")


def class_for_status(status: int) -> type[SealError]:
    """The class of an error code this client does not know, by its HTTP status."""
    by_status: dict[int, type[SealError]] = {
        401: SealUnauthorized,
        404: SealNotFound,
        409: SealConflict,
        422: SealInvalidDocument,
        408: SealUnavailable,
        429: SealUnavailable,
        502: SealUnavailable,
        503: SealUnavailable,
        504: SealUnavailable,
    }
    if status in by_status:
        return by_status[status]
    if 400 <= status < 500:
        return SealBadRequest
    return SealInternalError


def error_for(
    status: int,
    code: str,
    message: str,
    object: str | None,  # noqa: A002 - the API's field name
    retry_after: float | None,
) -> SealError:
    """The typed exception of one error answer."""
    cls = ERROR_CLASSES.get(code) or class_for_status(status)
    return cls(code, message, object, status=status, retry_after=retry_after)
