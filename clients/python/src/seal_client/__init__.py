"""seal-client: the Python worker client of `seal serve`.

A playtest worker hands seal a run folder (`seal judge`'s layout) and gets the sealed
decision back; the client does the HTTP protocol, the retries and the error mapping:

    from seal_client import SealClient, SealInvalidDocument

    client = SealClient("http://127.0.0.1:7878", token=None)
    result = client.submit_run("runs/run-narrative-0010-pass")
    print(result.outcome, result.decision["action"], result.cost_rmb, result.seal_sha256)

The central type is `SealClient` (client.py); answers are the frozen dataclasses of types.py,
kept after docs/openapi.yaml; failures are the `SealError` classes of errors.py, one per kind of
fault. One decision, and why: submitting is idempotent end to end, so a worker that crashed, or
whose daemon did, simply calls `submit_run` again; no judge is paid twice for a stored answer.
"""

from .client import Progress, SealClient
from .errors import (
    ERROR_CLASSES,
    SealBadRequest,
    SealConflict,
    SealCorruptStore,
    SealError,
    SealFolderError,
    SealInternalError,
    SealInvalidDocument,
    SealNotFound,
    SealProtocolError,
    SealUnauthorized,
    SealUnavailable,
)
from .folder import RunFolder
from .transport import RetryPolicy
from .types import (
    ApiErrorBody,
    BlobStored,
    FinalizeAnswer,
    InclusionProof,
    RollAnswer,
    RollSummary,
    RunResult,
    RunState,
    Stored,
    VerifyReport,
)

__all__ = [
    "ERROR_CLASSES",
    "ApiErrorBody",
    "BlobStored",
    "FinalizeAnswer",
    "InclusionProof",
    "Progress",
    "RetryPolicy",
    "RollAnswer",
    "RollSummary",
    "RunFolder",
    "RunResult",
    "RunState",
    "SealBadRequest",
    "SealClient",
    "SealConflict",
    "SealCorruptStore",
    "SealError",
    "SealFolderError",
    "SealInternalError",
    "SealInvalidDocument",
    "SealNotFound",
    "SealProtocolError",
    "SealUnauthorized",
    "SealUnavailable",
    "Stored",
    "VerifyReport",
]
