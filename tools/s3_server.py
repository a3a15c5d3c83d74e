#!/usr/bin/env python3
"""The S3-compatible server the tests and CI run: moto's, with every request handled under one lock.

Why the lock: moto checks `If-None-Match: *` and then writes the object, two steps another
request thread can come between, so two racing create-only PUTs may both "succeed" and the
second silently replaces the first. Real S3 makes a conditional create atomic, and seal's
coordination between replicas (attempt leases, transparency-log entries, racing finalizers)
relies on exactly that. Serializing requests gives moto the same atomicity; moto holds the GIL
for its work anyway, so little concurrency is lost.

Usage: tools/s3_server.py [HOST] [PORT]   (default 127.0.0.1 49152)

With SEAL_S3_REQUEST_LOG=FILE set, one line per request is appended to FILE: the method, the
key (the path without the bucket) and the status, tab-separated: the benchmark that counts S3
requests per run reads it (docs/BENCHMARKS.md).
"""
import os
import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple

LOCK = threading.Lock()
REQUEST_LOG = os.environ.get("SEAL_S3_REQUEST_LOG")
APP = DomainDispatcherApplication(create_backend_app)


def serialized(environ, start_response):
    # The whole request, body included, inside the lock: the check and the write of a
    # conditional PUT happen in the app call.
    status = []

    def recording_start_response(s, headers, exc_info=None):
        status.append(s.split(" ", 1)[0])
        return start_response(s, headers, exc_info)

    with LOCK:
        result = APP(environ, recording_start_response if REQUEST_LOG else start_response)
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close:
                close()
        if REQUEST_LOG:
            path = environ.get("PATH_INFO", "")
            key = path.split("/", 2)[2] if path.count("/") >= 2 else ""
            query = environ.get("QUERY_STRING", "")
            with open(REQUEST_LOG, "a", encoding="utf-8") as f:
                f.write(f"{environ.get('REQUEST_METHOD')}\t{key}\t{query}\t{status[0] if status else '?'}\n")
    return [body]


def main():
    host = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 49152
    run_simple(host, port, serialized, threaded=True)


if __name__ == "__main__":
    main()
