# The reference for tests/contract/fastapi-parity.test.ts: the request models of core/schemas.ts (and of
# the network, recordings and mock plugins) written as the anchor, DWE OS, writes them: FastAPI with
# pydantic v2 BaseModels. Every route answers {"ok": true} once its input is valid, so only the 422s
# that FastAPI itself writes are compared. Run: python reference_app.py; it prints the port it listens
# on (127.0.0.1, a free port chosen by the kernel) as its first line. The regular expressions and bounds
# come from Periscope's source through the environment (PERISCOPE_PATTERNS, JSON), so they cannot drift apart.
import json
import os
import socket
from enum import Enum
from typing import Annotated, List, Optional

import uvicorn
from fastapi import Body, FastAPI, Query
from pydantic import BaseModel, Field

PATTERNS = json.loads(os.environ['PERISCOPE_PATTERNS'])
Ipv4Address = Annotated[str, Field(pattern=PATTERNS['ipv4'])]
RecordingName = Annotated[str, Field(min_length=1, max_length=255, pattern=PATTERNS['recording_name'])]


class StreamTypeEnum(str, Enum):
    UDP = 'UDP'
    RECORDING = 'RECORDING'


class EncodeTypeEnum(str, Enum):
    MJPG = 'MJPG'
    H264 = 'H264'
    SOFTWARE_H264 = 'SOFTWARE_H264'
    NONE = 'NONE'


class NotifyEventEnum(str, Enum):
    DEVICE_MANAGED = 'DEVICE_MANAGED'
    DEVICE_UNMANAGED = 'DEVICE_UNMANAGED'
    STREAM_START = 'STREAM_START'


class Ipv4MethodEnum(str, Enum):
    auto = 'auto'
    manual = 'manual'
    link_local = 'link-local'
    shared = 'shared'
    disabled = 'disabled'


class ErrnoEnum(str, Enum):
    EIO = 'EIO'
    EPROTO = 'EPROTO'
    ETIMEDOUT = 'ETIMEDOUT'
    EBUSY = 'EBUSY'
    EACCES = 'EACCES'
    EINVAL = 'EINVAL'
    ENODEV = 'ENODEV'


class LogLevelEnum(str, Enum):
    debug = 'debug'
    info = 'info'
    warn = 'warn'
    error = 'error'


class IntervalModel(BaseModel):
    numerator: int = Field(ge=1, le=PATTERNS['max_interval_term'])
    denominator: int = Field(ge=1, le=PATTERNS['max_interval_term'])


class StreamEndpointModel(BaseModel):
    host: str = Field(min_length=1)
    port: int = Field(ge=1, le=65535)


class SetUVCControlRequest(BaseModel):
    bus_info: str
    control_id: int
    value: float


class FollowerRequest(BaseModel):
    leader_bus_info: str
    follower_bus_info: str


class BusInfoRequest(BaseModel):
    bus_info: str


class NotifyCameraRequest(BaseModel):
    bus_info: str
    # Optional but not nullable: absent means DEVICE_MANAGED (pydantic does not validate defaults).
    event: NotifyEventEnum = NotifyEventEnum.DEVICE_MANAGED


class StreamFormatModel(BaseModel):
    width: int = Field(ge=1, le=PATTERNS['max_frame_side'])
    height: int = Field(ge=1, le=PATTERNS['max_frame_side'])
    interval: IntervalModel


class ConfigureStreamRequest(BaseModel):
    bus_info: str
    stream_type: StreamTypeEnum
    stream_format: StreamFormatModel
    encode_type: EncodeTypeEnum
    enabled: bool
    endpoints: List[StreamEndpointModel]


class RecordWhileArmedRequest(BaseModel):
    bus_info: str
    enabled: bool


class SetNicknameRequest(BaseModel):
    bus_info: str
    nickname: str = Field(max_length=64, pattern=PATTERNS['nickname'])


class DefaultStream(BaseModel):
    host: str = Field(min_length=1)
    port: int = Field(ge=1, le=65535)


class PreferencesModel(BaseModel):
    default_stream: DefaultStream = DefaultStream(host='192.168.2.1', port=5600)  # loopback-guard: not an endpoint (the anchor's model, only validated)
    suggest_host: bool = True
    frequency_offset: float = 0


class IpAddressModel(BaseModel):
    address: Ipv4Address
    prefix: int = Field(ge=0, le=32)


class IpConfiguration(BaseModel):
    ip_addresses: List[IpAddressModel] = []
    gateway: Optional[Ipv4Address] = None
    method: Ipv4MethodEnum = Ipv4MethodEnum.auto
    dns: List[Ipv4Address] = []
    never_default: bool = False


class ActivateRequest(BaseModel):
    interface: str
    path: str


class PlugRequest(BaseModel):
    bus_info: str
    new_bus_info: str = None  # optional, not nullable


class UnplugRequest(BaseModel):
    bus_info: str


class SoundRequest(BaseModel):
    id: str


class FailRequest(BaseModel):
    bus_info: str
    errno: ErrnoEnum
    count: int = Field(default=1, ge=1)
    control_id: int = None  # optional, not nullable


class RetentionPolicyModel(BaseModel):
    enabled: bool = False
    min_free_gb: float = Field(default=0, ge=0, le=1048576)
    max_age_days: float = Field(default=0, ge=0, le=36500)


app = FastAPI()
OK = {'ok': True}


@app.post('/api/devices/set_uvc_control')
def set_uvc_control(body: SetUVCControlRequest):
    return OK


@app.post('/api/devices/add_follower')
def add_follower(body: FollowerRequest):
    return OK


@app.post('/api/devices/external/add_follower')
def external_add_follower(body: FollowerRequest):
    return OK


@app.post('/api/devices/remove_follower')
def remove_follower(body: FollowerRequest):
    return OK


@app.post('/api/devices/external/notify_camera')
def notify_camera(body: NotifyCameraRequest):
    return OK


@app.post('/api/devices/restart_stream')
def restart_stream(body: BusInfoRequest):
    return OK


@app.post('/api/devices/configure_stream')
def configure_stream(body: ConfigureStreamRequest):
    return OK


@app.post('/api/devices/unconfigure_stream')
def unconfigure_stream(body: BusInfoRequest):
    return OK


@app.post('/api/devices/start_recording')
def start_recording(body: BusInfoRequest):
    return OK


@app.post('/api/devices/stop_recording')
def stop_recording(body: BusInfoRequest):
    return OK


@app.post('/api/devices/set_record_while_armed')
def set_record_while_armed(body: RecordWhileArmedRequest):
    return OK


@app.post('/api/devices/set_nickname')
def set_nickname(body: SetNicknameRequest):
    return OK


@app.post('/api/preferences/save_preferences')
def save_preferences(body: PreferencesModel):
    return OK


@app.post('/api/network/update_connection_profile')
def update_connection_profile(path: str, body: IpConfiguration):
    return OK


@app.post('/api/network/wired/activate_profile')
def activate_profile(body: ActivateRequest):
    return OK


@app.post('/api/recordings/retention')
def save_retention(body: RetentionPolicyModel):
    return OK


@app.post('/api/recordings/zip/prepare')
def zip_prepare(names: Annotated[List[RecordingName], Body(min_length=1)]):
    return OK


@app.get('/api/recordings/zip/download')
def zip_download(token: Annotated[str, Query(min_length=1)]):
    return OK


@app.get('/api/logs')
def logs(
    since: Annotated[Optional[int], Query(ge=0)] = None,
    level: Optional[LogLevelEnum] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
):
    return OK


@app.post('/api/mock/plug')
def mock_plug(body: PlugRequest):
    return OK


@app.post('/api/mock/unplug')
def mock_unplug(body: UnplugRequest):
    return OK


@app.post('/api/mock/audio/unplug')
def mock_audio_unplug(body: SoundRequest):
    return OK


@app.post('/api/mock/audio/plug')
def mock_audio_plug(body: SoundRequest):
    return OK


@app.post('/api/mock/fail')
def mock_fail(body: FailRequest):
    return OK


if __name__ == '__main__':
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', 0))
    print(sock.getsockname()[1], flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level='warning', access_log=False))
    server.run(sockets=[sock])
