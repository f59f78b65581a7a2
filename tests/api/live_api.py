"""The real stack for the API's end-to-end tests: gunicorn and a Celery worker (the web
tests' harness) on the test database, and a token for Alice to talk to it."""

from __future__ import annotations

from rest_framework.authtoken.models import Token

from bench.bench_api_load import Api, api_ready, free_port
from tests.web.live import Stack, wait_for


def serve(stack: Stack, user, *, worker: bool = True) -> Api:
    """Start the server (and a worker) and return an API client for ``user``."""
    token, _ = Token.objects.get_or_create(user=user)
    port = free_port()
    stack.start_web(port)
    if worker:
        stack.start_worker(name="api", concurrency=2)
    base_url = f"http://127.0.0.1:{port}"
    wait_for(lambda: api_ready(base_url), timeout=60, what="the API server", stack=stack)
    return Api(base_url, token.key)
