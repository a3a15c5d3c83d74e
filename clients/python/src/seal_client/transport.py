"""HTTP to `seal serve` with bounded retries (standard library `http.client` only).

Every request the client makes is idempotent by the API's design (create-only puts that answer
200 to the same bytes, a judged roll resubmitted gets its stored answer, finalize answers the
same to every caller), so any of them may be sent again. What is retried, at most
`RetryPolicy.attempts` times in all:

- 503 (`unavailable`, `overloaded`, `no_signing_key`) and 429 (`busy`): after the answer's
  `Retry-After` (seconds or an HTTP date; capped at `max_retry_after`), else after the backoff;
- 408 (`timeout`): the daemon gave up on the request; it resumes from the store;
- 502 and 504: a load balancer in front of replicas lost the one it asked;
- no connection, a connection reset or closed before the answer, a read timeout: after the
  backoff (`base_delay` doubling up to `max_delay`, with jitter so that workers restarted
  together do not retry together).

A keep-alive connection that the daemon closed while idle is reopened at once, without using
an attempt. Corruption (500 `corrupt_store`) and every other error are raised at once.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import random
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any

from .errors import SealError, SealFolderError, SealProtocolError, SealUnavailable, error_for

log = logging.getLogger("seal_client")

# A request body: bytes, or a function that opens the body afresh for each attempt (a file
# streamed from disk) together with its length.
Body = bytes | tuple[Callable[[], IO[bytes]], int] | None

RETRY_STATUSES = frozenset({408, 429, 502, 503, 504})
# Errors after which the request may not have reached the daemon, or its answer was lost
# (refused, reset, closed, timed out, a torn answer). A certificate the client does not trust
# is not among them: retrying cannot fix it.
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (OSError, http.client.HTTPException)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry (see the module doc for what is retried)."""

    attempts: int = 8
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def backoff(self, attempt: int) -> float:
        """The wait before attempt `attempt + 1` (attempt counts from 1), with ±25% jitter."""
        delay = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return delay * random.uniform(0.75, 1.25)


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self, what: str) -> Any:
        try:
            return json.loads(self.body)
        except ValueError as e:
            raise SealProtocolError("protocol", f"{what}: the answer is not JSON ({e})") from None


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """`Retry-After` as seconds: a number, or an HTTP date (RFC 9110 §10.2.3)."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _error(resp: Response, what: str) -> SealError:
    """The typed exception of an error answer (or a protocol error if it is not one)."""
    retry_after = retry_after_seconds(resp.headers.get("retry-after"))
    try:
        err = json.loads(resp.body)["error"]
        code, message, obj = err["code"], err["message"], err.get("object")
        if not isinstance(code, str) or not isinstance(message, str):
            raise TypeError("code and message must be strings")
    except (ValueError, KeyError, TypeError) as e:
        text = resp.body[:200].decode("utf-8", "replace")
        return error_for(
            resp.status, f"http_{resp.status}", f"{what}: {text!r} ({e})", None, retry_after
        )
    return error_for(resp.status, code, message, obj if isinstance(obj, str) else None, retry_after)


def _open_body(opener: Callable[[], IO[bytes]]) -> IO[bytes]:
    """Opens a streamed body; a file that cannot be read is the folder's fault, not the
    connection's (never retried)."""
    try:
        return opener()
    except OSError as e:
        raise SealFolderError(
            "bad_folder", f"cannot read {e.filename}: {e.strerror}", None
        ) from None


class Transport:
    """One daemon's base URL, token, timeouts and retry policy; a keep-alive connection per
    thread (a `SealClient` may be shared by threads)."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        timeout: float,
        connect_timeout: float,
        retry: RetryPolicy,
    ) -> None:
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base_url {base_url!r}: expected http://HOST[:PORT] or https://…")
        self.scheme = url.scheme
        self.host = url.hostname
        self.port = url.port
        self.prefix = url.path.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.retry = retry
        self._local = threading.local()

    def _connect(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection
        if self.scheme == "https":
            conn = http.client.HTTPSConnection(
                self.host,
                self.port,
                timeout=self.connect_timeout,
                context=ssl.create_default_context(),
                blocksize=1 << 16,
            )
        else:
            conn = http.client.HTTPConnection(
                self.host, self.port, timeout=self.connect_timeout, blocksize=1 << 16
            )
        conn.connect()
        if conn.sock is not None:
            # Connecting is quick or fails; an answer may take as long as a judge call.
            conn.sock.settimeout(self.timeout)
        return conn

    def close(self) -> None:
        self._drop()

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    def _send_once(self, method: str, path: str, body: Body, headers: dict[str, str]) -> Response:
        """One request on this thread's connection; a stale keep-alive connection is replaced
        once without counting as an attempt."""
        for fresh_try in (False, True):
            conn = getattr(self._local, "conn", None)
            reused = conn is not None
            if conn is None:
                conn = self._connect()
                self._local.conn = conn
            payload: Any = body
            sent_headers = dict(headers)
            stream = None
            if isinstance(body, tuple):
                opener, length = body
                stream = _open_body(opener)
                payload = stream
                sent_headers["Content-Length"] = str(length)
            try:
                conn.request(method, self.prefix + path, body=payload, headers=sent_headers)
                r = conn.getresponse()
                data = r.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._drop()
                if reused and not fresh_try:
                    continue
                raise
            except BaseException:
                self._drop()
                raise
            finally:
                if stream is not None:
                    stream.close()
            if r.will_close:
                self._drop()
            return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
        raise AssertionError("unreachable")

    def request(
        self,
        method: str,
        path: str,
        *,
        what: str,
        body: Body = None,
        content_type: str | None = None,
        accept: str = "application/json",
    ) -> Response:
        """Sends a request, retrying as the module doc says; returns a 2xx answer or raises
        the typed error of the last answer."""
        headers = {"Accept": accept, "User-Agent": "seal-client/0.1"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        attempt = 0
        while True:
            attempt += 1
            try:
                resp = self._send_once(method, path, body, headers)
            except ssl.SSLCertVerificationError as e:
                raise SealUnavailable("connection", f"{what}: {e}", None) from None
            except CONNECTION_ERRORS as e:
                failure: SealError = SealUnavailable(
                    "connection", f"{what}: {type(e).__name__}: {e}", None
                )
                wait = self.retry.backoff(attempt)
            else:
                if 200 <= resp.status < 300:
                    return resp
                failure = _error(resp, what)
                if resp.status not in RETRY_STATUSES:
                    raise failure
                wait = (
                    min(failure.retry_after, self.retry.max_retry_after)
                    if failure.retry_after is not None
                    else self.retry.backoff(attempt)
                )
            if attempt >= self.retry.attempts:
                raise failure
            log.warning(
                "%s: %s (attempt %d of %d); retrying in %.2fs",
                what,
                failure,
                attempt,
                self.retry.attempts,
                wait,
            )
            time.sleep(wait)
