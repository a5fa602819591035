"""Push (``push:MEMBER``) to every device a member registered, through Firebase Cloud
Messaging HTTP v1.

``push:slack:U0123ABC`` names a member as Herald writes them (``slack:U…``,
``discord:<id>``, ``local:alice``); a delivery goes to each device that member
registered in the schedule's tenant (``herald member device add``, ``POST
/v1/me/devices``), read at send time through the store the dispatcher attaches.

FCM (https://firebase.google.com/docs/reference/fcm/rest/v1/projects.messages/send):
one ``POST {HERALD_FCM_API_URL}/v1/projects/{project}/messages:send`` per device, with
an OAuth2 access token of the service account in ``FCM_SERVICE_ACCOUNT_FILE``: a JWT
signed RS256 with its private key, exchanged at its ``token_uri`` (or
``HERALD_FCM_TOKEN_URL``) for a bearer token
(https://developers.google.com/identity/protocols/oauth2/service-account#httprest).
The token is kept until shortly before it expires, refreshed by one request at a time,
and once more when FCM answers 401.

What FCM answers, per device (https://firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode):
200 ``{"name": "projects/P/messages/ID"}`` took it; ``UNREGISTERED`` (404) or an
``INVALID_ARGUMENT`` about the token (400) means the token is dead: the device is
removed and counts as a permanent failure for that device only; 429, 500 and 503 are
retried (``Retry-After`` obeyed). The delivery is ok when one device took it (its
message id the first ``name``), a retry when none did and one failure may pass, and
permanent when every token is dead or the member has no device.

FCM has no idempotency key: a retry may show a notification twice on a device that
took the first try. The delivery is ok as soon as one device took it (no retry then),
and each message carries the job's idempotency key as Android's ``collapse_key`` and
APNs' ``apns-collapse-id``, so a repeat replaces the earlier notification on the
device instead of adding one. A device token is never logged or said whole: only its
last 6 characters.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from core.channels.base import Channel, ChannelStore, Delivery, DeliveryResult, Device, Outcome
from core.channels.email import subject_for
from core.channels.webhook import parse_retry_after, truncate
from core.destinations import UriSyntax
from core.errors import InvalidInput
from core.http_client import Answer, HTTPClient, TimedOut, Timeout, Unreachable
from core.limits import PUSH_BODY

log = logging.getLogger(__name__)

PROVIDER = "fcm"
SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: Seconds before its expiry an access token is replaced.
TOKEN_MARGIN = 300.0
#: The most bytes of a notification's body: the limit schedules are checked against at
#: save (FCM takes at most 4,096 bytes of payload).
MAX_BODY_BYTES = PUSH_BODY.size
#: APNs refuses an ``apns-collapse-id`` longer than 64 bytes.
_COLLAPSE_ID = 64
#: Statuses worth another try later.
RETRYABLE = frozenset({408, 429, 500, 502, 503, 504})
#: ``platform:id``, as Herald writes member ids (core.cases.base).
_MEMBER = re.compile(r"^[a-z][a-z0-9_-]*:[^\s:][^\s]{0,190}$")
NO_KEY = "Push is not configured: an admin must set FCM_SERVICE_ACCOUNT_FILE."


def _check_member(raw: str, target: str) -> None:
    if not _MEMBER.match(target):
        raise InvalidInput(
            f"{raw!r} does not name a member: use push: and a member id, e.g. "
            "push:slack:U0123ABC or push:local:alice."
        )


def token_tail(token: str) -> str:
    """What may be shown of a device token: its last 6 characters."""
    return "…" + token[-6:]


def device_words(device: Device) -> str:
    """A device as logs and errors say it: ``device 3 (Pixel, …a1b2c3)``."""
    label = f"{device.label}, " if device.label else ""
    return f"device {device.id} ({label}{token_tail(device.token)})"


class KeyFileError(Exception):
    """The service account key file cannot be used; ``str()`` says why, without any of
    its content."""


@dataclass(frozen=True, slots=True)
class ServiceAccount:
    """What Herald uses of a service account key file."""

    project_id: str
    client_email: str
    private_key: Any  # cryptography's RSA private key
    key_id: str | None
    token_uri: str


def load_service_account(path: str) -> ServiceAccount:
    """The key file at ``path`` read and its private key parsed. Raises KeyFileError in
    one sentence that quotes nothing of the file."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    fix = (
        "download a new key (Firebase console, Project settings, Service accounts) and "
        "point FCM_SERVICE_ACCOUNT_FILE at it"
    )
    try:
        with open(path, encoding="utf-8") as f:
            data = json.loads(f.read(64 * 1024))
    except OSError as exc:
        reason = exc.strerror or "it cannot be opened"
        raise KeyFileError(f"The FCM key file {path} cannot be read ({reason}): {fix}.") from None
    except ValueError:
        raise KeyFileError(f"The FCM key file {path} is not a JSON key file: {fix}.") from None
    if not isinstance(data, dict):
        raise KeyFileError(f"The FCM key file {path} is not a JSON key file: {fix}.")
    missing = [
        name
        for name in ("project_id", "client_email", "private_key")
        if not isinstance(data.get(name), str) or not data[name]
    ]
    if missing:
        raise KeyFileError(f"The FCM key file {path} has no {', '.join(missing)}: {fix}.")
    try:
        key = serialization.load_pem_private_key(data["private_key"].encode(), password=None)
    except (ValueError, TypeError):
        key = None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise KeyFileError(
            f"The private_key of the FCM key file {path} is not an unencrypted RSA key "
            f"in PEM form: {fix}."
        )
    token_uri = data.get("token_uri")
    kid = data.get("private_key_id")
    return ServiceAccount(
        data["project_id"],
        data["client_email"],
        key,
        kid if isinstance(kid, str) and kid else None,
        token_uri if isinstance(token_uri, str) and token_uri else DEFAULT_TOKEN_URI,
    )


@dataclass(frozen=True, slots=True)
class _Fate:
    """What happened to one device's message."""

    outcome: Outcome
    words: str
    name: str | None = None
    status: int | None = None
    retry_after: float | None = None


class _TokenRefused(Exception):
    """The token endpoint would not give an access token; ``permanent`` when asking
    again will not help (the key was refused)."""

    def __init__(self, words: str, *, permanent: bool, status: int | None = None) -> None:
        super().__init__(words)
        self.permanent = permanent
        self.status = status


class PushChannel(Channel):
    """Sends each delivery to every device of its member through FCM HTTP v1.

    ``key_file`` None: push is not configured, and every delivery is a permanent
    failure saying so. ``clock`` gives monotonic seconds (the token's lifetime).
    """

    kind: ClassVar[str] = "push"
    uri: ClassVar[UriSyntax] = UriSyntax(
        "push",
        "push:slack:U0123ABC",
        _check_member,
        settings=("fcm_service_account_file", "fcm_api_url", "fcm_token_url"),
    )

    def __init__(
        self,
        key_file: str | None = None,
        *,
        api_url: str = "https://fcm.googleapis.com",
        token_url: str | None = None,
        http: HTTPClient | None = None,
        timeout: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.store: ChannelStore | None = None
        self._key_file = key_file
        self._api_url = api_url.rstrip("/")
        self._token_url = token_url
        self.http = http or HTTPClient()
        self._limits = Timeout(timeout, min(timeout, 5.0))
        self._clock = clock
        self._wall = wall
        self._account: ServiceAccount | None = None
        self._lock = asyncio.Lock()
        self._token: str | None = None
        self._token_until = 0.0
        #: How many access tokens this channel has asked for (tests, the log).
        self.token_requests = 0

    @classmethod
    def from_settings(cls, settings: Any, *, http: Any) -> PushChannel:
        return cls(
            settings.fcm_service_account_file,
            api_url=settings.fcm_api_url,
            token_url=settings.fcm_token_url,
            http=http,
            timeout=settings.http_timeout,
        )

    def attach(self, store: ChannelStore) -> None:
        self.store = store

    async def close(self) -> None:
        await self.http.close()

    # --- sending --------------------------------------------------------------------

    async def send(self, delivery: Delivery) -> DeliveryResult:
        """Send to each of the member's devices (see the module for what the answers
        mean). Never raises for what FCM, the token endpoint or the network does."""
        if not self._key_file:
            return DeliveryResult.permanent(NO_KEY)
        if self.store is None:  # a channel no dispatcher attached: nothing to read devices from
            return DeliveryResult.retry("Push has no database to read devices from yet.")
        member = delivery.destination.target
        devices = await self.store.devices_of(delivery.tenant, member)
        if not devices:
            return DeliveryResult.permanent(
                f"{member} has no registered device: they can add one with "
                "`herald member device add`."
            )
        try:
            token = await self._access_token()
        except KeyFileError as exc:
            return DeliveryResult.permanent(str(exc))
        except _TokenRefused as exc:
            if exc.permanent:
                return DeliveryResult.permanent(str(exc), exc.status)
            return DeliveryResult.retry(str(exc), exc.status)
        account = self._account
        assert account is not None
        message = self._message(delivery)
        fates = await asyncio.gather(
            *(self._send_one(account, token, d, message, delivery) for d in devices)
        )
        return self._result(delivery, devices, fates)

    def _message(self, delivery: Delivery) -> dict[str, Any]:
        """The message every device gets (its ``token`` is each device's)."""
        key = delivery.idempotency_key
        collapse = key if len(key.encode()) <= _COLLAPSE_ID else key[-_COLLAPSE_ID:]
        return {
            "notification": {
                "title": subject_for(delivery),
                "body": truncate(delivery.body, MAX_BODY_BYTES),
            },
            "data": {
                "herald_job": str(delivery.job_id),
                "herald_schedule": str(delivery.schedule_id),
            },
            "android": {"collapse_key": collapse},
            "apns": {"headers": {"apns-collapse-id": collapse}},
        }

    async def _send_one(
        self,
        account: ServiceAccount,
        token: str,
        device: Device,
        message: dict[str, Any],
        delivery: Delivery,
    ) -> _Fate:
        url = f"{self._api_url}/v1/projects/{account.project_id}/messages:send"
        body = {"message": {**message, "token": device.token}}
        for refreshed in (False, True):
            try:
                answer = await self.http.request(
                    "POST",
                    url,
                    guarded=False,  # the admin's FCM URL, not a member's
                    timeouts=self._limits,
                    headers={"Authorization": f"Bearer {token}"},
                    json=body,
                )
            except (TimedOut, Unreachable) as exc:
                return _Fate(Outcome.RETRY, f"FCM could not be reached for it: {exc}")
            if answer.status == 401 and not refreshed:
                try:  # the token expired early or was revoked: one new token, once
                    token = await self._access_token(stale=token)
                except (KeyFileError, _TokenRefused) as exc:
                    return _Fate(Outcome.RETRY, str(exc), status=401)
                continue
            return await self._fate(answer, device, delivery)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns

    async def _fate(self, answer: Answer, device: Device, delivery: Delivery) -> _Fate:
        status = answer.status
        if status == 200:
            name = _json(answer).get("name")
            return _Fate(Outcome.OK, "took it", str(name) if name else None, status)
        code, said = _fcm_error(answer)
        if code == "UNREGISTERED" or (code == "INVALID_ARGUMENT" and _about_token(answer)):
            reason = f"FCM answered {status} {code}: the device's token is no longer valid"
            if self.store is not None:
                await self.store.forget_device(delivery.tenant, device.id, reason)
            log.info(
                "push: device forgotten",
                extra={"device": device.id, "token": token_tail(device.token), "code": code},
            )
            return _Fate(Outcome.PERMANENT, f"its token is dead ({code}), removed", status=status)
        if status in RETRYABLE:
            wait = parse_retry_after(answer.headers.get("retry-after"), self._wall())
            return _Fate(
                Outcome.RETRY, f"FCM answered {status} {code}", status=status, retry_after=wait
            )
        if status == 401:
            return _Fate(
                Outcome.RETRY, "FCM refused Herald's access token twice (401)", status=status
            )
        if status == 403:
            return _Fate(
                Outcome.PERMANENT,
                f"FCM refused Herald's service account (403 {code}): give it the Firebase "
                "Cloud Messaging API Admin role in the project of FCM_SERVICE_ACCOUNT_FILE",
                status=status,
            )
        detail = f": {truncate(said, 300)}" if said else ""
        return _Fate(Outcome.PERMANENT, f"FCM refused it ({status} {code}{detail})", status=status)

    def _result(
        self, delivery: Delivery, devices: list[Device], fates: list[_Fate]
    ) -> DeliveryResult:
        """One result from every device's fate (see the module)."""
        member = delivery.destination.target
        failed = [
            f"{device_words(d)}: {f.words}"
            for d, f in zip(devices, fates, strict=True)
            if f.outcome is not Outcome.OK
        ]
        taken = [f for f in fates if f.outcome is Outcome.OK]
        if taken:
            error = None
            if failed:
                error = f"{len(taken)} of {len(fates)} devices took it; " + "; ".join(failed) + "."
            return DeliveryResult(Outcome.OK, 200, taken[0].name, error=error, provider=PROVIDER)
        summary = f"No device of {member} took it: " + "; ".join(failed) + "."
        retryable = [f for f in fates if f.outcome is Outcome.RETRY]
        if retryable:
            waits = [f.retry_after for f in retryable if f.retry_after is not None]
            status = retryable[0].status
            result = DeliveryResult.retry(summary, status, max(waits) if waits else None)
        else:
            result = DeliveryResult.permanent(summary, fates[0].status)
        result.provider = PROVIDER
        return result

    # --- the access token -----------------------------------------------------------

    async def _access_token(self, *, stale: str | None = None) -> str:
        """The cached access token, or a new one (one request at a time); ``stale``
        is a token FCM refused: a new one is asked for unless another send already
        replaced it. Raises KeyFileError or _TokenRefused."""
        async with self._lock:
            fresh = self._token is not None and self._clock() < self._token_until
            if fresh and self._token != stale:
                assert self._token is not None
                return self._token
            if self._account is None:
                assert self._key_file is not None
                self._account = await asyncio.to_thread(load_service_account, self._key_file)
            token, lifetime = await self._exchange(self._account)
            margin = min(TOKEN_MARGIN, lifetime / 10)
            self._token, self._token_until = token, self._clock() + lifetime - margin
            return token

    async def _exchange(self, account: ServiceAccount) -> tuple[str, float]:
        """Ask the token endpoint for an access token: ``(token, seconds it lasts)``."""
        import jwt

        now = int(self._wall())
        url = self._token_url or account.token_uri
        claims = {
            "iss": account.client_email,
            "scope": SCOPE,
            "aud": url,
            "iat": now,
            "exp": now + 3600,
        }
        headers = {"kid": account.key_id} if account.key_id else None
        assertion = jwt.encode(claims, account.private_key, algorithm="RS256", headers=headers)
        self.token_requests += 1
        try:
            answer = await self.http.request(
                "POST",
                url,
                guarded=False,
                timeouts=self._limits,
                form={"grant_type": JWT_BEARER, "assertion": assertion},
            )
        except (TimedOut, Unreachable) as exc:
            raise _TokenRefused(
                f"FCM's token endpoint could not be reached: {exc}.", permanent=False
            ) from None
        data = _json(answer)
        token, lifetime = data.get("access_token"), data.get("expires_in", 3600)
        if answer.status == 200 and isinstance(token, str) and token:
            seconds = float(lifetime) if isinstance(lifetime, int | float) else 3600.0
            return token, max(60.0, seconds)
        if answer.status == 429 or answer.status >= 500:
            raise _TokenRefused(
                f"FCM's token endpoint answered {answer.status}; Herald will try again.",
                permanent=False,
                status=answer.status,
            )
        said = data.get("error_description") or data.get("error") or answer.reason
        raise _TokenRefused(
            f"FCM's token endpoint refused the service account of FCM_SERVICE_ACCOUNT_FILE "
            f"({answer.status}: {truncate(str(said), 200)}): check that its key is not "
            "revoked and that this machine's clock is right.",
            permanent=answer.status in (400, 401, 403),
            status=answer.status,
        )


def _json(answer: Answer) -> dict[str, Any]:
    try:
        data = answer.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _fcm_error(answer: Answer) -> tuple[str, str]:
    """FCM's error code (``UNREGISTERED``: the FcmError detail's, else the status's)
    and its message."""
    error = _json(answer).get("error")
    if not isinstance(error, dict):
        return "", ""
    code = str(error.get("status") or "")
    for detail in error.get("details") or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("FcmError"):
            code = str(detail.get("errorCode") or code)
    return code, str(error.get("message") or "")


def _about_token(answer: Answer) -> bool:
    """Whether an INVALID_ARGUMENT is about the registration token (not the message):
    a field violation of ``message.token``, or FCM's sentence about the token."""
    error = _json(answer).get("error")
    if not isinstance(error, dict):
        return False
    for detail in error.get("details") or []:
        for violation in (detail.get("fieldViolations") or []) if isinstance(detail, dict) else []:
            if isinstance(violation, dict) and violation.get("field") == "message.token":
                return True
    return "registration token" in str(error.get("message", "")).lower()
