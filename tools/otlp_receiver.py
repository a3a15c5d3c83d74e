#!/usr/bin/env python3
"""A local OTLP/HTTP trace receiver for the tests: decodes the real protobufs.

Listens on 127.0.0.1 (port 0 unless given), prints `{"listening": PORT}` as its first line, then one
JSON line per span received on POST /v1/traces (an `ExportTraceServiceRequest`, decoded with
PyPI's `opentelemetry-proto`, the reference generated classes): trace and span ids in hex,
the parent span id, name, kind, the span's attributes and the resource's `service.name`.
Anything that is not a protobuf export is answered 400 and printed as an `error` line, so a
test sees a malformed export instead of missing spans.

Usage: tools/otlp_receiver.py [PORT]
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def value_of(any_value):
    """An AnyValue as plain JSON."""
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind in ("array_value", "kvlist_value", "bytes_value"):
        return str(getattr(any_value, kind))
    return getattr(any_value, kind)


def emit(doc):
    sys.stdout.write(json.dumps(doc, sort_keys=True) + "\n")
    sys.stdout.flush()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        ctype = self.headers.get("Content-Type", "")
        if self.path != "/v1/traces" or ctype != "application/x-protobuf":
            emit({"error": f"unexpected {self.path} {ctype!r}"})
            self.send_response(400)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except Exception as e:  # a malformed export is what the test must see
            emit({"error": f"not an ExportTraceServiceRequest: {e}"})
            self.send_response(400)
            self.end_headers()
            return
        for rs in request.resource_spans:
            resource = {a.key: value_of(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for span in ss.spans:
                    emit(
                        {
                            "service": resource.get("service.name"),
                            "scope": ss.scope.name,
                            "traceId": span.trace_id.hex(),
                            "spanId": span.span_id.hex(),
                            "parentSpanId": span.parent_span_id.hex(),
                            "name": span.name,
                            "kind": span.kind,
                            "attributes": {a.key: value_of(a.value) for a in span.attributes},
                        }
                    )
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass  # stdout is the span stream


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    emit({"listening": server.server_address[1]})
    server.serve_forever()


if __name__ == "__main__":
    main()
