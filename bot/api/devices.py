"""The API's push devices of the token's member: ``GET /v1/me/devices``, ``POST
/v1/me/devices`` (an app registers its FCM token), ``DELETE /v1/me/devices/{id}``.

Their models and handlers live here, their routes in :data:`ROUTES`, which
bot/api/routes.py adds to the table. The use cases (``core.cases``' ``add_device``,
``list_devices``, ``remove_device``) check and audit; a token is answered by its last
6 characters only."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bot.api.model_base import In, Out, example
from bot.api.requests import Call, Reply, Route
from core.cases import (
    DEVICE_LABEL_MAX,
    DEVICE_TOKEN_MAX,
    MAX_DEVICES,
    token_tail,
)
from core.channels.base import Device


class DeviceIn(In):
    model_config = example(
        {
            "token": "fGx1Q2x5:APA91bH8zT0kqW3v_example-token",
            "label": "Pixel 8",
            "platform": "android",
        }
    )

    token: str = Field(
        min_length=1,
        max_length=DEVICE_TOKEN_MAX,
        pattern=r"^[A-Za-z0-9_:-]+$",
        description="The FCM registration token the app's getToken() returned.",
    )
    label: str = Field(
        default="", max_length=DEVICE_LABEL_MAX, description="What the device is, on one line."
    )
    platform: Literal["android", "ios", "web"] | None = None


class DeviceOut(Out):
    model_config = example(
        {
            "id": 7,
            "member": "local:ada",
            "label": "Pixel 8",
            "platform": "android",
            "token_tail": "…ken-xy",
        }
    )

    id: int
    member: str
    label: str
    platform: str = Field(description="android, ios, web, or empty when not said.")
    token_tail: str = Field(description="The token's last 6 characters (never all of it).")


class DeviceList(Out):
    model_config = example(
        {
            "devices": [
                {
                    "id": 7,
                    "member": "local:ada",
                    "label": "Pixel 8",
                    "platform": "android",
                    "token_tail": "…ken-xy",
                }
            ],
            "max": MAX_DEVICES,
        }
    )

    devices: list[DeviceOut]
    max: int = Field(description="The most devices a member may register.")


def _out(device: Device) -> DeviceOut:
    return DeviceOut(
        id=device.id,
        member=device.member_id,
        label=device.label,
        platform=device.platform,
        token_tail=token_tail(device.token),
    )


async def list_devices(call: Call) -> Reply:
    devices = await call.herald.list_devices(call.principal)
    return Reply(DeviceList(devices=[_out(d) for d in devices], max=MAX_DEVICES))


async def add_device(call: Call) -> Reply:
    body: DeviceIn = call.body
    row, new = await call.herald.add_device(
        call.principal, body.token, label=body.label, platform=body.platform or ""
    )
    device = Device(row.id or 0, row.member_id, row.token, row.label, row.platform)
    return Reply(_out(device), 201 if new else 200)


async def remove_device(call: Call) -> Reply:
    device = await call.herald.remove_device(call.principal, call.path_int("device_id"))
    return Reply(_out(device))


#: The routes of the token's member's devices (bot/api/routes.py adds them).
ROUTES: tuple[Route, ...] = (
    Route(
        "GET",
        "/me/devices",
        "listMyDevices",
        "The push devices of the token's member (what push:MEMBER reaches)",
        "read",
        list_devices,
        DeviceList,
        tag="devices",
    ),
    Route(
        "POST",
        "/me/devices",
        "addMyDevice",
        "Register a push device (an FCM registration token) for the token's member",
        "write",
        add_device,
        DeviceOut,
        201,
        body=DeviceIn,
        problems=(422,),
        tag="devices",
        description=f"The same token again is the same device (200). A member may register "
        f"at most {MAX_DEVICES} devices.",
    ),
    Route(
        "DELETE",
        "/me/devices/{device_id}",
        "removeMyDevice",
        "Forget one of the token's member's push devices",
        "write",
        remove_device,
        DeviceOut,
        problems=(404,),
        tag="devices",
        description="Answers the device removed.",
    ),
)
