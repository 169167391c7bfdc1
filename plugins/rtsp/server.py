#!/usr/bin/python3
# The RTSP plugin's helper: GStreamer's own RTSP server (libgstrtspserver) serving the mounts the
# service asks for. The service feeds each mount's tracks as RTP on loopback UDP sockets this helper
# owns; each mount's media is shared by all its clients and only depayloads and payloads again (new
# sequence numbers and timestamps on one clock, SPS/PPS in the SDP): no re-encoding.
#
# stdin, one JSON object a line:
#   {"op": "add", "path": "/usb-x", "encoding": "H264"|"JPEG", "tracks": N, "camera": "usb-x"}
#   {"op": "remove", "path": "/usb-x"}
# stdout, one JSON object a line:
#   {"event": "ready", "port": P}                        listening
#   {"event": "added", "path": ...}                      served (no client yet)
#   {"event": "media", "path": ..., "id": N, "ports": [...]}  a client's own media: feed its track i to
#                                                        127.0.0.1:ports[i], from the kept group of pictures on
#   {"event": "media_gone", "path": ..., "id": N}        that media ended (its client left): stop feeding it
#   {"event": "removed", "path": ...}
#   {"event": "viewers", "camera": ..., "count": N}      clients watching that camera now
#   {"event": "refused", "why": "viewers"|"connections"|"idle"}  a client refused or cut off by a limit
#   {"event": "error", "message": ...}
#   {"event": "wrong_token"}                             a client's credentials were refused (401)
# argv: port, address, the most clients per camera (--max-viewers: one more gets 503 at DESCRIBE or
# SETUP), the most connections at once (--rtsp-max-connections: one more is closed at once), and the
# seconds a connection may stay without a session (--rtsp-idle-timeout: then it is closed).
# env PERISCOPE_RTSP_TOKEN (--token-scope all): every client must authenticate (Basic) as
# user RTSP_USER with the token as password (rtsp://periscope:<token>@host:port/path); others get 401.
# stdin closing ends the helper.
import faulthandler
import hmac
import itertools
import json
import os
import signal
import socket
import sys
import threading

try:
    import gi

    gi.require_version("Gst", "1.0")
    gi.require_version("GstBase", "1.0")
    gi.require_version("GstRtsp", "1.0")
    gi.require_version("GstRtspServer", "1.0")
    from gi.repository import Gio, GLib, Gst, GstBase, GstRtsp, GstRtspServer
except (ImportError, ValueError) as e:  # the service says so in /api/health and does not restart us
    sys.stderr.write(f"GstRtspServer unavailable: {e}\n")
    sys.exit(3)

CAPS = {
    "H264": "application/x-rtp,media=video,encoding-name=H264,clock-rate=90000,payload=96",
    "JPEG": "application/x-rtp,media=video,encoding-name=JPEG,clock-rate=90000,payload=26",
}
# A stream's sound (plugins/audio): Opus, one more track after the video's, repayloaded like them.
SOUND_CAPS = "application/x-rtp,media=audio,encoding-name=OPUS,clock-rate=48000,payload=111"
SOUND_REPAY = "rtpopusdepay ! rtpopuspay name=pay{i} pt=111"
# Depayload and payload again: the clients get a clean timeline whatever the camera's child does (a
# restart starts new sequence numbers), and H.264 parameter sets in the SDP and before every IDR. As in
# the camera's pipeline (drivers/gstreamer/pipeline.ts H264_PARSE): h264parse inserts them once per whole
# access unit, before its first slice; rtph264pay's own config-interval would put them before every IDR
# slice, and a parameter set between two slices starts a new access unit (two pictures for ffmpeg).
REPAY = {
    "H264": "rtph264depay ! h264parse config-interval=-1 ! video/x-h264,alignment=au ! rtph264pay name=pay{i} pt=96 aggregate-mode=zero-latency",
    "JPEG": "rtpjpegdepay ! rtpjpegpay name=pay{i} pt=26",
}
RECEIVE_BUFFER = 4 << 20  # a 1080p key frame is a burst of ~200 packets
# Clients are served by at most this many threads (the library hands each new client to the next, in
# turn). A thread per client, as before, let 500 idle connections make 392 threads; one for all let a
# DESCRIBE that waits for its media's first key frame hold up every client. Now it holds up the clients
# that share its thread, a sixteenth of them.
CLIENT_THREADS = 16
# Connections the kernel holds for us before we accept them. The library's default, 5, lets a burst of
# connections (a flood, or many viewers at once) push the others into SYN retries of seconds to minutes;
# those past --rtsp-max-connections are then closed as soon as they are accepted.
LISTEN_BACKLOG = 1024


SAYING = threading.Lock()  # the library calls us from its client and media threads


def say(**event):
    with SAYING:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()


def send_without_delay(_server, client):
    # Interleaved RTP leaves on the client's RTSP connection, a small write per packet, from the
    # stream's send thread. The library leaves Nagle's algorithm on, so a frame written while the
    # previous one is unacknowledged waits for that ACK, and viewers delay ACKs (40 ms on Linux): the
    # frame after a delayed ACK came 7-15 ms late, the TCP tail of bench/rtsp.bench.ts. Packets are
    # written as they are made, never worth holding back to coalesce.
    connection = client.get_connection()
    sock = connection.get_write_socket() if connection else None
    if sock is None or sock.get_family() not in (Gio.SocketFamily.IPV4, Gio.SocketFamily.IPV6):
        return
    try:
        sock.set_option(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except GLib.Error as e:  # the client is served all the same, only its frames may wait for ACKs
        sys.stderr.write(f"TCP_NODELAY refused: {e.message}\n")


def send_on_arrival(_pipeline, _bin, element):
    if isinstance(element, GstBase.BaseSink):
        element.set_property("sync", False)
        element.set_property("processing-deadline", 0)
        # Every PLAY turns the library's rate control back on (its client takes ONVIF's Rate-Control
        # default, yes, and a subclass cannot say no from Python: adjust_play_mode's out arguments are
        # not introspectable), and rate control is the TCP sink's sync: each packet then waited until
        # its timestamp came, 13-15 ms after its arrival (the first packet of the kept group, which
        # anchors the timeline, is read after its newest frame came). Undone as it is set, in the same
        # call (a packet that came in those microseconds would wait once, at most RtpClock.RESYNC_NS).
        element.connect("notify::sync", never_sync)


def never_sync(sink, _pspec):
    if sink.get_property("sync"):
        sink.set_property("sync", False)


RTSP_USER = "periscope"  # plugins/rtsp/helper.ts says the same
VIEWER_ROLE = "viewer"


def require_token(server, token):
    """Clients must authenticate (Basic) as RTSP_USER with the token; each mount's factory lets
    the role that grants in (protect). The library compares the credentials; the token is never said."""
    auth = GstRtspServer.RTSPAuth()
    granted = GstRtspServer.RTSPToken()
    granted.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, VIEWER_ROLE)
    # Basic, the library's default: PyGObject types its method mask as an enum, so Basic and Digest
    # together cannot be asked for (BASIC|DIGEST is 'invalid enum value: 3').
    expected = GstRtspServer.RTSPAuth.make_basic(RTSP_USER, token)
    auth.add_basic(expected, granted)
    server.set_auth(auth)

    def count_wrong_tokens(_server, client):
        client.connect("pre-describe-request", lambda _client, ctx: wrong_credentials(ctx, expected))
        client.connect("pre-setup-request", lambda _client, ctx: wrong_credentials(ctx, expected))

    server.connect("client-connected", count_wrong_tokens)


def wrong_credentials(ctx, expected):
    """Says wrong_token when a DESCRIBE or SETUP carries credentials other than the token (the library
    then answers 401; a request without any is a client's usual first ask). Runs before the library's
    own check, which still decides; compared in constant time."""
    found, value = ctx.request.get_header(GstRtsp.RTSPHeaderField.AUTHORIZATION, 0) if ctx.request else (None, None)
    if found == GstRtsp.RTSPResult.OK and value:
        scheme, _, credentials = value.strip().partition(" ")
        if scheme.lower() != "basic" or not hmac.compare_digest(credentials.strip().encode(), expected.encode()):
            say(event="wrong_token")
    return GstRtsp.RTSPStatusCode.OK


def protect(factory):
    permissions = GstRtspServer.RTSPPermissions()
    permissions.add_permission_for_role(VIEWER_ROLE, GstRtspServer.RTSP_PERM_MEDIA_FACTORY_ACCESS, True)
    permissions.add_permission_for_role(VIEWER_ROLE, GstRtspServer.RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, True)
    factory.set_permissions(permissions)


class Viewers:
    """Who watches each camera, held to the cap: a client counts from its first DESCRIBE or SETUP on one
    of the camera's paths (a client that only DESCRIBEs holds a place too, until the idle timeout closes it) (its bus_info, or its nickname alias: they count together) until it tears down or its
    connection ends (the library then ends its sessions). Counted here, under a lock, because clients
    run in threads of their own and two SETUPs may race for the last place. Each count is reported
    under the same lock as it changed, so the reports come out in the order of the changes: the last one
    said is the count now (else a thread held up between the two could report a count gone stale)."""

    def __init__(self, limit):
        self.limit = limit
        self.lock = threading.Lock()
        self.watching = {}  # camera -> set of GstRTSPClient

    def admit(self, camera, client):
        with self.lock:
            clients = self.watching.setdefault(camera, set())
            if client in clients:
                return True
            if len(clients) >= self.limit:
                return False
            clients.add(client)
            say(event="viewers", camera=camera, count=len(clients))
        return True

    def release(self, client, camera=None):
        with self.lock:
            for cam, clients in list(self.watching.items()):
                if (camera is None or cam == camera) and client in clients:
                    clients.discard(client)
                    say(event="viewers", camera=cam, count=len(clients))
                    if not clients:
                        del self.watching[cam]


class RtpClock:
    """Stamps a track's packets from their RTP timestamps, not their arrival: the payloader makes the
    client's RTP timestamps from these, so the client sees the camera's spacing of frames and sounds,
    not the jitter of their way here (bursts, a loaded machine). Stamped by arrival, the sound's packets
    came 14 ticks apart after a late one, and ffmpeg over TCP saw timestamps go backwards. The first
    packet (the kept group of pictures' first, sent at once) anchors the timeline to its arrival; frames
    that come earlier than their timeline says move it earlier (WINDOW_NS): the timeline follows a track's
    quickest way here, whatever delayed its first packet (the kept group's newest frame came up to a
    frame interval before it was sent; a busy moment), so a camera's video and sound, each on its own
    timeline, keep the same distance every session (it varied by 25 ms from one session to the next). A
    timeline more than RESYNC_NS off the arrivals (the source restarted, or the client held off its PLAY
    while the packets waited) is anchored again. Never backwards: a new frame is at least one tick after
    the last."""

    RESYNC_NS = Gst.SECOND
    # Once a window, the timeline moves earlier by the most a packet of the window came before its time,
    # if that is more than EARLY_NS: at most one step off the camera's spacing a window, and none once
    # the timeline is on the quickest way (the jitter of a busy machine only ever delays a packet).
    WINDOW_NS = Gst.SECOND // 2
    EARLY_NS = 10 * Gst.MSECOND

    def __init__(self, rate):
        self.rate = rate
        self.lead = 0  # the most a packet of this window came before its time (ns)
        self.window_end = 0
        self.anchor = None  # (arrival pts, extended RTP timestamp)
        self.last_ts = 0
        self.extended = 0
        self.last_pts = 0

    def probe(self, _pad, info):
        buf = info.get_buffer()
        arrival = buf.pts
        if buf.get_size() < 12 or arrival == Gst.CLOCK_TIME_NONE:
            return Gst.PadProbeReturn.OK
        ts = int.from_bytes(buf.extract_dup(4, 4), "big")
        step = 0
        if self.anchor is None:
            self.anchor = (arrival, 0)
            self.window_end = arrival + self.WINDOW_NS
        else:
            step = ((ts - self.last_ts + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
            self.extended += step
        self.last_ts = ts
        base, at = self.anchor
        pts = base + (self.extended - at) * Gst.SECOND // self.rate
        if abs(pts - arrival) > self.RESYNC_NS:
            self.anchor = (max(arrival, self.last_pts), self.extended)
            pts = self.anchor[0]
            self.lead = 0
            self.window_end = arrival + self.WINDOW_NS
        else:
            self.lead = max(self.lead, pts - arrival)
            if step > 0 and arrival >= self.window_end:
                # A new frame (the packets of one share their time), a window on: moved earlier by the
                # most any packet of the window came before its time.
                if self.lead > self.EARLY_NS:
                    pts = max(pts - self.lead, self.last_pts + Gst.SECOND // self.rate)
                    self.anchor = (pts, self.extended)
                self.lead = 0
                self.window_end = arrival + self.WINDOW_NS
        pts = max(pts, self.last_pts)
        self.last_pts = pts
        buf.pts = pts
        buf.dts = pts
        return Gst.PadProbeReturn.OK


class Mount:
    """A path's factory. Each client gets a media of its own (not shared): the service feeds it from the
    stream's kept group of pictures on (so the client's first picture is a whole key frame, at once, and
    nobody else's stream waits for it), and whatever tracks a client sets up, or leaves unprepared, no
    other client's media is touched (a shared media left with a track unprepared by a video-only client
    answered 503 to every later DESCRIBE)."""

    def __init__(self, server, path, encoding, tracks, camera, sound=False):
        self.server = server
        self.path = path
        self.camera = camera
        self.lock = threading.Lock()
        self.medias = {}  # GstRTSPMedia -> (id, its sockets)
        self.count = tracks + (1 if sound else 0)
        self.rates = [90000] * tracks + ([48000] if sound else [])
        branches = " ".join(
            f'udpsrc name=src{i} caps="{CAPS[encoding]}" ! {REPAY[encoding].format(i=i)}' for i in range(tracks)
        )
        if sound:
            branches += f' udpsrc name=src{tracks} caps="{SOUND_CAPS}" ! {SOUND_REPAY.format(i=tracks)}'
        self.factory = GstRtspServer.RTSPMediaFactory()
        self.factory.set_launch(f"( {branches} )")
        self.factory.set_shared(False)
        self.factory.set_suspend_mode(GstRtspServer.RTSPSuspendMode.NONE)
        self.factory.connect("media-configure", self.configure)
        protect(self.factory)  # no effect without require_token: then every client is let in
        server.get_mount_points().add_factory(path, self.factory)

    def configure(self, _factory, media):
        # A client's own media (from its DESCRIBE, or its SETUP without one): sockets of its own, the
        # service feeds them once told, from the kept group of pictures on.
        sockets = []
        for _ in range(self.count):
            sock = Gio.Socket.new(Gio.SocketFamily.IPV4, Gio.SocketType.DATAGRAM, Gio.SocketProtocol.UDP)
            sock.bind(Gio.InetSocketAddress.new_from_string("127.0.0.1", 0), False)
            sock.set_option(1, 8, RECEIVE_BUFFER)  # SOL_SOCKET, SO_RCVBUF
            sockets.append(sock)
        bin_ = media.get_element()
        for i, sock in enumerate(sockets):
            src = bin_.get_by_name(f"src{i}")
            src.set_property("socket", sock)
            src.set_property("close-socket", False)
            src.get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, RtpClock(self.rates[i]).probe)
        # The packets arrive in real time already: the sinks the library adds per transport send each
        # on arrival, instead of holding it against the clock (these timestamps follow the camera's
        # clock, ahead of it at times), even once PLAY turns rate control on again (send_on_arrival).
        media.get_element().get_parent().connect("deep-element-added", send_on_arrival)
        for i in range(media.n_streams()):
            media.get_stream(i).set_rate_control(False)
        media_id = next(MEDIA_IDS)  # atomic: clients of every mount configure media in their own threads
        with self.lock:
            self.medias[media] = (media_id, sockets)
        media.connect("unprepared", self.unprepared)
        say(event="media", path=self.path, id=media_id, ports=[s.get_local_address().get_port() for s in sockets])

    def unprepared(self, media):
        with self.lock:
            entry = self.medias.pop(media, None)
        if entry is None:
            return
        media_id, sockets = entry
        say(event="media_gone", path=self.path, id=media_id)
        for sock in sockets:
            sock.close()

    def remove(self):
        self.server.get_mount_points().remove_factory(self.path)
        with self.lock:
            medias = set(self.medias)
        # The stream ended: its clients get BYE (EOS) and are disconnected, so none waits on a dead mount.
        for media in medias:
            media.get_element().send_event(Gst.Event.new_eos())

        def on_this_mount(_server, client, _data=None):
            hit = []

            def sessions(_client, session, _data=None):
                def session_medias(_session, sessmedia, _data=None):
                    if sessmedia.get_media() in medias:
                        hit.append(True)
                    return GstRtspServer.RTSPFilterResult.KEEP

                session.filter(session_medias)
                return GstRtspServer.RTSPFilterResult.KEEP

            client.session_filter(sessions)
            return GstRtspServer.RTSPFilterResult.REMOVE if hit else GstRtspServer.RTSPFilterResult.KEEP

        self.server.client_filter(on_this_mount)
        for media in medias:
            media.unprepare()  # one only DESCRIBEd is in no session: its own unprepare says media_gone
        for media in list(self.medias):
            self.unprepared(media)


MEDIA_IDS = itertools.count(1)


def refuse_beyond_cap(server, mounts, viewers):
    """A client asking for a camera that already has viewers.limit clients gets 503 Service Unavailable
    at DESCRIBE or SETUP; the others play on, and a place freed is taken by the next who asks. DESCRIBE
    takes a place: clients that only DESCRIBE (and keep their connection) no longer escape the cap."""

    def camera_of(ctx):
        factory, _matched = server.get_mount_points().match(ctx.uri.abspath)
        return next((m.camera for m in list(mounts.values()) if m.factory == factory), None) if factory else None

    def admit(client, ctx):
        camera = camera_of(ctx)
        if not camera or viewers.admit(camera, client):
            return GstRtsp.RTSPStatusCode.OK
        say(event="refused", why="viewers")
        return GstRtsp.RTSPStatusCode.SERVICE_UNAVAILABLE

    def teardown(client, ctx):
        camera = camera_of(ctx)
        if camera:
            viewers.release(client, camera)

    def connected(_server, client):
        client.connect("pre-describe-request", admit)
        client.connect("pre-setup-request", admit)
        client.connect("teardown-request", teardown)
        client.connect("closed", lambda c: viewers.release(c))

    server.connect("client-connected", connected)


def has_session(client):
    found = []

    def sessions(_client, _session, _data=None):
        found.append(True)
        return GstRtspServer.RTSPFilterResult.KEEP

    client.session_filter(sessions)
    return bool(found)


def limit_connections(server, most, idle_seconds):
    """At most `most` connections at once: one more is closed as soon as it is accepted (before it can
    ask anything). A connection without a session (no SETUP, or only a DESCRIBE) is closed after
    `idle_seconds`; one with a session lives as long as the session (the library's session timeout)."""
    lock = threading.Lock()
    open_clients = set()

    def close_soon(client):
        # From the main loop, once the library has attached the client to its thread.
        GLib.idle_add(lambda: client.close() and False)

    def check_idle(client):
        with lock:
            if client not in open_clients:
                return False
        if has_session(client):
            return True
        say(event="refused", why="idle")
        close_soon(client)
        return False

    def closed(client):
        with lock:
            open_clients.discard(client)

    def connected(_server, client):
        with lock:
            refused = len(open_clients) >= most
            if not refused:
                open_clients.add(client)
        if refused:
            say(event="refused", why="connections")
            close_soon(client)
            return
        client.connect("closed", closed)
        GLib.timeout_add_seconds(idle_seconds, check_idle, client)

    server.connect("client-connected", connected)


def main():
    # SIGUSR1 writes every thread's Python stack to stderr, even with the main loop stuck: the
    # supervisor (helper.ts) sends it before it kills a helper that stopped answering, and logs it.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    port = int(sys.argv[1])
    address = sys.argv[2] if len(sys.argv) > 2 else "0.0.0.0"
    viewers = Viewers(int(sys.argv[3]) if len(sys.argv) > 3 else 8)
    most_connections = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    idle_seconds = int(sys.argv[5]) if len(sys.argv) > 5 else 10
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address(address)
    server.set_service(str(port))
    server.get_thread_pool().set_max_threads(CLIENT_THREADS)
    server.set_backlog(LISTEN_BACKLOG)
    loop = GLib.MainLoop()
    if server.attach(None) == 0:
        say(event="error", message=f"cannot listen on {address}:{port} (is the port taken?)")
        sys.exit(2)
    token = os.environ.pop("PERISCOPE_RTSP_TOKEN", "")
    if token:
        require_token(server, token)
    mounts = {}
    limit_connections(server, most_connections, idle_seconds)
    server.connect("client-connected", send_without_delay)
    refuse_beyond_cap(server, mounts, viewers)

    def command(line):
        try:
            cmd = json.loads(line)
            if cmd["op"] == "ping":  # the supervisor's liveness check: answered from this main loop
                say(event="pong")
                return
            path = cmd["path"]
            if cmd["op"] == "add":
                if path in mounts:
                    mounts.pop(path).remove()
                mounts[path] = Mount(server, path, cmd["encoding"], int(cmd["tracks"]), cmd.get("camera", path), bool(cmd.get("sound")))
                say(event="added", path=path)
            elif cmd["op"] == "remove":
                mount = mounts.pop(path, None)
                if mount:
                    mount.remove()
                say(event="removed", path=path)
        except Exception as e:  # a bad line must not take the other mounts down
            say(event="error", message=f"{type(e).__name__}: {e}")

    stdin = Gio.UnixInputStream.new(0, False)
    lines = Gio.DataInputStream.new(stdin)

    def on_line(stream, result):
        line, _ = stream.read_line_finish_utf8(result)
        if line is None:  # the service closed our stdin: it stops or died
            loop.quit()
            return
        if line.strip():
            command(line)
        stream.read_line_async(GLib.PRIORITY_DEFAULT, None, on_line)

    lines.read_line_async(GLib.PRIORITY_DEFAULT, None, on_line)
    say(event="ready", port=port)
    loop.run()


if __name__ == "__main__":
    main()
