"""An engine other machines can reach is locked down: a non-loopback bind needs a key (or mutual TLS),
a wrong key is refused on every route, and TLS works directly."""

import http.client
import json
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import torch
from fastapi.routing import APIRoute

from conftest import ENGINE_DIR, EngineProcess
from tinker_engine import server
from tinker_engine.cli import is_loopback, parse_args
from tinker_engine.engine import Engine

# Routes that answer without a key: load balancers' health checks and Prometheus scrapes.
OPEN_ROUTES = {f"{server.API}/healthz", "/metrics"}


def engine_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tinker_engine", *args], cwd=ENGINE_DIR, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "engine.internal"])
def test_a_bind_beyond_loopback_without_a_key_fails_at_start(host, tmp_path):
    result = engine_cli("--host", host, "--port", "1", "--data-dir", str(tmp_path))
    assert result.returncode == 2
    assert f"--host {host} makes the engine reachable from other machines" in result.stderr
    assert "--api-key" in result.stderr and "--tls-client-ca" in result.stderr
    assert not (tmp_path / "checkpoints").exists()  # refused before anything was set up


def test_loopback_binds_need_no_key_and_remote_binds_take_a_key_or_mutual_tls(tmp_path):
    for host in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"):
        assert is_loopback(host), host
    assert parse_args(["--host", "0.0.0.0", "--api-key", "tml-secret"]).api_key == "tml-secret"
    cert, key = self_signed(tmp_path, "server")
    args = parse_args(["--host", "0.0.0.0", "--tls-certfile", str(cert), "--tls-keyfile", str(key),
                       "--tls-client-ca", str(cert)])
    assert args.tls_client_ca == str(cert)


@pytest.mark.parametrize(("flags", "message"), [
    (["--tls-certfile", "/nonexistent.pem", "--tls-keyfile", "/nonexistent.key"], "--tls-certfile /nonexistent.pem: no such file"),
    (["--tls-client-ca", "{cert}"], "--tls-client-ca (mutual TLS) needs --tls-certfile and --tls-keyfile"),
    (["--tls-certfile", "{cert}"], "--tls-certfile and --tls-keyfile go together"),
])
def test_tls_flags_are_checked_at_start(flags, message, tmp_path):
    cert, _ = self_signed(tmp_path, "server")
    result = engine_cli(*[f.format(cert=cert) for f in flags], "--data-dir", str(tmp_path / "data"))
    assert result.returncode == 2 and message in result.stderr, result.stderr


def served_routes(tmp_path, monkeypatch) -> list[tuple[str, str]]:
    """Every (method, path) the engine's app declares, read from the app itself."""
    apps = []

    class Recording(server.FastAPI):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            apps.append(self)

    monkeypatch.setattr(server, "FastAPI", Recording)
    engine = Engine(tmp_path / "routes", torch.device("cpu"), torch.float32)
    try:
        server.create_app(engine, api_key="tml-secret")
    finally:
        engine.shutdown()
    return sorted((method, route.path) for route in apps[0].routes if isinstance(route, APIRoute)
                  for method in route.methods if method != "HEAD")


def test_a_wrong_key_is_refused_on_every_route(fresh_engine, tmp_path, monkeypatch):
    routes = served_routes(tmp_path, monkeypatch)
    assert len(routes) > 20  # the protocol's routes, not an empty list
    locked = fresh_engine(None, "--api-key", "tml-secret")
    for key in (None, "tml-wrong", "tml-secre", "tml-secret-and-more", "sk-secret"):
        for method, path in routes:
            url = locked.url + path.replace("{", "").replace("}", "")
            status, body = call(method, url, key)
            if path in OPEN_ROUTES:
                assert status == 200, (method, path, status)
            else:
                assert status == 401, (key, method, path, status, body[:200])
    assert call("GET", f"{locked.url}{server.API}/get_server_capabilities", "tml-secret")[0] == 200


def call(method: str, url: str, key: str | None, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    headers = {"Content-Type": "application/json", **({"X-API-Key": key} if key is not None else {})}
    data = json.dumps({}).encode() if method in ("POST", "PUT", "PATCH") else None
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def self_signed(directory, name: str):
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    if not cert.exists():
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                        "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key),
                        "-out", str(cert)], check=True, capture_output=True)
    return cert, key


class TlsEngine(EngineProcess):
    """The engine serving HTTPS; healthy once a TLS handshake and its health route succeed."""

    def __init__(self, data_dir, context: ssl.SSLContext, *extra: str):
        super().__init__(data_dir, *extra)
        self.url = f"https://127.0.0.1:{self.port}"
        self.context = context

    def start(self, timeout: float = 120.0) -> "TlsEngine":
        cmd = [sys.executable, "-m", "tinker_engine", "--port", str(self.port), "--data-dir", str(self.data_dir),
               "--threads", str(self.threads), "--log-level", "warning", *self.extra]
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, cwd=ENGINE_DIR, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"engine exited with {self.proc.returncode}: {self.log_path.read_text()[-3000:]}")
            try:
                if call("GET", f"{self.url}{server.API}/healthz", None, self.context)[0] == 200:
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("engine did not become healthy in time")


def test_https_directly_and_mutual_tls(tmp_path):
    cert, key = self_signed(tmp_path, "server")
    client_cert, client_key = self_signed(tmp_path, "client")
    trusting = ssl.create_default_context(cafile=str(cert))
    with_client_cert = ssl.create_default_context(cafile=str(cert))
    with_client_cert.load_cert_chain(str(client_cert), str(client_key))
    capabilities = f"{server.API}/get_server_capabilities"

    https = TlsEngine(tmp_path / "https", trusting, "--api-key", "tml-secret", "--tls-certfile", str(cert),
                      "--tls-keyfile", str(key)).start()
    try:
        assert call("GET", https.url + capabilities, "tml-secret", trusting)[0] == 200
        assert call("GET", https.url + capabilities, "tml-wrong", trusting)[0] == 401
        with pytest.raises((OSError, http.client.HTTPException)):  # plain HTTP gets no answer from an HTTPS port
            call("GET", f"http://127.0.0.1:{https.port}{capabilities}", "tml-secret")
    finally:
        https.stop()

    # Mutual TLS: the client's certificate, signed by the CA the engine trusts, is the credential
    # (any 'tml-' key then passes, as on loopback).
    mutual = TlsEngine(tmp_path / "mtls", with_client_cert, "--tls-certfile", str(cert), "--tls-keyfile", str(key),
                       "--tls-client-ca", str(client_cert)).start()
    try:
        assert call("GET", mutual.url + capabilities, "tml-anything", with_client_cert)[0] == 200
        with pytest.raises((OSError, ssl.SSLError)):
            call("GET", mutual.url + capabilities, "tml-anything", trusting)
    finally:
        mutual.stop()
