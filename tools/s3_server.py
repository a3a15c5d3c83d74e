#!/usr/bin/env python3
"""The S3-compatible server the tests and CI run: moto's, with every request handled under one lock.

Why the lock: moto checks `If-None-Match: *` and then writes the object, two steps another
request thread can come between, so two racing create-only PUTs may both "succeed" and the
second silently replaces the first. Real S3 makes a conditional create atomic, and seal's
coordination between replicas (attempt leases, transparency-log entries, racing finalizers)
relies on exactly that. Serializing requests gives moto the same atomicity; moto holds the GIL
for its work anyway, so little concurrency is lost.

Usage: tools/s3_server.py [HOST] [PORT]   (default 127.0.0.1 49152)
"""
import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple

LOCK = threading.Lock()
APP = DomainDispatcherApplication(create_backend_app)


def serialized(environ, start_response):
    # The whole request, body included, inside the lock: the check and the write of a
    # conditional PUT happen in the app call.
    with LOCK:
        result = APP(environ, start_response)
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close:
                close()
    return [body]


def main():
    host = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 49152
    run_simple(host, port, serialized, threaded=True)


if __name__ == "__main__":
    main()
