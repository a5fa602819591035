"""A fake of Firebase Cloud Messaging HTTP v1 and of Google's OAuth2 token endpoint for
service accounts, on 127.0.0.1.

- ``POST /token`` (https://developers.google.com/identity/protocols/oauth2/service-account#httprest):
  a form with ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`` and
  ``assertion``, a JWT the fake verifies against the test service account's public key
  (RS256), with ``iss`` its client_email, ``scope`` FCM's, ``aud`` this endpoint, and an
  ``exp`` at most an hour after ``iat``. Answers ``{"access_token", "expires_in",
  "token_type": "Bearer"}``, or 400 ``{"error": "invalid_grant", ...}``. Counted in
  :attr:`FakeFCM.token_requests`.
- ``POST /v1/projects/{project}/messages:send``
  (https://firebase.google.com/docs/reference/fcm/rest/v1/projects.messages/send):
  the bearer token must be one it issued (else 401 UNAUTHENTICATED), the body
  ``{"message": {"token", "notification": {"title", "body"}, "data": {str: str}}}``
  (else 400 INVALID_ARGUMENT about the message). A token in :attr:`unregistered` is
  answered 404 with FCM's ``UNREGISTERED`` error, one in :attr:`invalid` 400
  ``INVALID_ARGUMENT`` about the registration token
  (https://firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode); 503 and 429 are
  scripted (:func:`fcm_error`). Accepted messages answer ``{"name":
  "projects/P/messages/N"}`` and are kept in :attr:`FakeFCM.sent`.

:func:`service_account` writes a test key file (a fresh RSA key made with
``cryptography``, never committed) in a directory the test owns.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.http import FakeHTTPServer, Scripted

PROJECT = "herald-test"
CLIENT_EMAIL = "herald@herald-test.iam.gserviceaccount.com"
SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_FCM_ERROR = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
_STATUS = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}


@dataclass(frozen=True)
class Account:
    """A test service account: its key file and the public key that checks it."""

    path: Path
    public_key: Any
    client_email: str = CLIENT_EMAIL
    project_id: str = PROJECT


def service_account(directory: Path, token_uri: str) -> Account:
    """A service account key file in ``directory`` (as Google's console makes them),
    with a fresh 2048-bit RSA key."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    path = directory / "fcm-service-account.json"
    path.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": PROJECT,
                "private_key_id": "0123456789abcdef",
                "private_key": pem,
                "client_email": CLIENT_EMAIL,
                "client_id": "100000000000000000001",
                "token_uri": token_uri,
            }
        )
    )
    return Account(path, key.public_key())


def fcm_error(status: int, code: str, message: str = "", **headers: str) -> Scripted:
    """An FCM error answer as the ErrorCode reference shows them."""
    body = {
        "error": {
            "code": status,
            "message": message or code,
            "status": _STATUS.get(status, "INTERNAL"),
            "details": [{"@type": _FCM_ERROR, "errorCode": code}],
        }
    }
    return Scripted(status=status, json=body, headers=headers)


class FakeFCM(FakeHTTPServer):
    """FCM and its token endpoint (see the module). ``lifetime``: the ``expires_in``
    of the access tokens it gives."""

    def __init__(self, account_key: Any = None, *, lifetime: int = 3599) -> None:
        super().__init__()
        self.public_key = account_key
        self.lifetime = lifetime
        self.token_requests = 0
        self.issued: set[str] = set()
        self.unregistered: set[str] = set()
        self.invalid: set[str] = set()
        self.sent: list[dict[str, Any]] = []
        self._ids = itertools.count(1001)

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    def revoke_tokens(self) -> None:
        """Every access token given so far is refused from now on (401)."""
        self.issued.clear()

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/token", self._token)
        router.add_post("/v1/projects/{project}/{method}", self._send)

    async def _token(self, request: web.Request) -> web.Response:
        self.token_requests += 1
        form = await request.post()
        if form.get("grant_type") != GRANT:
            return _grant_error("unsupported_grant_type", "Invalid grant_type.")
        try:
            claims = jwt.decode(
                str(form.get("assertion", "")),
                self.public_key,
                algorithms=["RS256"],
                audience=self.token_url,
                issuer=CLIENT_EMAIL,
                options={"require": ["iss", "aud", "iat", "exp", "scope"]},
            )
        except jwt.PyJWTError as exc:
            return _grant_error("invalid_grant", f"Invalid JWT: {exc}")
        if claims["scope"] != SCOPE or not 0 < claims["exp"] - claims["iat"] <= 3600:
            return _grant_error("invalid_scope", "Bad scope or lifetime.")
        token = f"ya29.fake-{self.token_requests}"
        self.issued.add(token)
        return web.json_response(
            {"access_token": token, "expires_in": self.lifetime, "token_type": "Bearer"}
        )

    async def _send(self, request: web.Request) -> web.Response:
        project, method = request.match_info["project"], request.match_info["method"]
        if method != "messages:send" or project != PROJECT:
            return _error(404, "NOT_FOUND", "Requested entity was not found.", "")
        auth = request.headers.get("Authorization", "")
        if auth.removeprefix("Bearer ") not in self.issued:
            return _error(401, "UNAUTHENTICATED", "Request had invalid credentials.", "")
        try:
            message = (await request.json())["message"]
            token = message["token"]
            note = message["notification"]
            assert isinstance(token, str) and token
            assert isinstance(note["title"], str) and isinstance(note["body"], str)
            data = message.get("data", {})
            assert all(isinstance(v, str) for v in data.values())
        except (ValueError, KeyError, TypeError, AssertionError):
            return _error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.", "")
        if token in self.unregistered:
            return _error(404, "NOT_FOUND", "Requested entity was not found.", "UNREGISTERED")
        if token in self.invalid:
            return _error(
                400,
                "INVALID_ARGUMENT",
                "The registration token is not a valid FCM registration token",
                "INVALID_ARGUMENT",
            )
        name = f"projects/{project}/messages/{next(self._ids)}"
        self.sent.append({**message, "name": name})
        return web.json_response({"name": name})


def _grant_error(error: str, description: str) -> web.Response:
    return web.json_response({"error": error, "error_description": description}, status=400)


def _error(status: int, state: str, message: str, code: str) -> web.Response:
    details = [{"@type": _FCM_ERROR, "errorCode": code}] if code else []
    return web.json_response(
        {"error": {"code": status, "message": message, "status": state, "details": details}},
        status=status,
    )
