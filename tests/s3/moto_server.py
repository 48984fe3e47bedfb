#!/usr/bin/env python3
"""Starts moto's S3 API server on a free loopback port for the storage tests.

Creates the buckets named on the command line (default `sinkcoord-test`),
prints one line, `endpoint http://127.0.0.1:PORT`, once the server accepts
requests, then serves until it is killed or its standard input closes (so a
test process that dies never leaves a server behind).

Usage: target/moto-venv/bin/python tests/s3/moto_server.py [BUCKET...]
"""

import logging
import os
import socket
import sys
import threading
import urllib.request

import boto3

from moto.moto_server.threaded_moto_server import MotoRequestHandler
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server


def free_port():
    # Bound and released: a race with another process taking it is possible
    # but harmless (the server then fails to start and the test says so).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    # One access-log line per request would drown the test output.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
    # One request at a time. moto checks a conditional put (If-None-Match: *)
    # and then stores the object, unlocked, so two concurrent creates of one
    # key could both succeed (seen: the storage suites' races found two
    # winners), where S3 lets exactly one win. Serialising the requests
    # gives the tests S3's atomic create; they still run their races.
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serialised(environ, start_response):
        with lock:
            return list(app(environ, start_response))

    server = make_server("127.0.0.1", port, serialised, True, request_handler=MotoRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{port}"
    # Ready when it answers (moto's own status page).
    urllib.request.urlopen(endpoint + "/moto-api/", timeout=30).read()
    # moto accepts any credentials; the tests' clients send these too.
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    for bucket in sys.argv[1:] or ["sinkcoord-test"]:
        s3.create_bucket(Bucket=bucket)
    print(f"endpoint {endpoint}", flush=True)
    # Serve until stdin closes (the parent exited or closed it).
    done = threading.Event()

    def watch_stdin():
        try:
            while sys.stdin.buffer.read(4096):
                pass
        finally:
            done.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    done.wait()
    server.shutdown()
    os._exit(0)


if __name__ == "__main__":
    main()
