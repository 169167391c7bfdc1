#!/usr/bin/python3
# Audio-to-video skew at a non-browser WHEP player: GStreamer's webrtcbin (ICE on 127.0.0.1 only) offers
# recvonly H.264 video and Opus audio (max-bundle), POSTs the offer to the WHEP URL (argv[1]) and lets its
# rtpbin lip-sync both tracks by the RTCP sender reports, as a player does. At the decoded outputs (sinks
# that do not wait, so the order is the order of arrival), each video frame's pts minus the pts of the last
# audio buffer decoded before it, over argv[2] seconds after the first frame. Prints one JSON line: status,
# counts, p50/p99/min/max in ms and the median of each second (to see drift); then DELETEs its session.
import ctypes, json, re, sys, threading, urllib.request
import gi
gi.require_version('Gst', '1.0')
gi.require_version('GstWebRTC', '1.0')
gi.require_version('GstSdp', '1.0')
from gi.repository import Gst, GstWebRTC, GstSdp, GLib

url, seconds = sys.argv[1], float(sys.argv[2])
Gst.init(None)
loop = GLib.MainLoop()
result = {'status': None, 'frames': 0, 'audio_buffers': 0}
location = None
skews = []  # (second since the first measured frame, ms)
state = {'audio_pts': None, 'start': None}
lock = threading.Lock()

pipe = Gst.Pipeline.new('player')
webrtc = Gst.ElementFactory.make('webrtcbin', 'webrtc')
webrtc.set_property('bundle-policy', GstWebRTC.WebRTCBundlePolicy.MAX_BUNDLE)
pipe.add(webrtc)

# Loopback only: libnice gathers on the addresses it is given. PyGObject cannot reach webrtcbin's nice
# agent in GStreamer 1.22, so it is reached through C.
gobject = ctypes.CDLL('libgobject-2.0.so.0')
nice = ctypes.CDLL('libnice.so.10')
ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
ctypes.pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
gobject.g_object_get.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p]
nice.nice_address_new.restype = ctypes.c_void_p
nice.nice_address_set_from_string.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
nice.nice_agent_add_local_address.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
ice, agent = ctypes.c_void_p(), ctypes.c_void_p()
gobject.g_object_get(ctypes.pythonapi.PyCapsule_GetPointer(webrtc.__gpointer__, None), b'ice-agent', ctypes.byref(ice), None)
gobject.g_object_get(ice, b'agent', ctypes.byref(agent), None)
address = nice.nice_address_new()
nice.nice_address_set_from_string(address, b'127.0.0.1')
if not agent.value or not nice.nice_agent_add_local_address(agent, address):
    sys.exit('could not limit libnice to 127.0.0.1')

# Video first: the service's werift refuses an audio-first max-bundle offer.
recvonly = GstWebRTC.WebRTCRTPTransceiverDirection.RECVONLY
webrtc.emit('add-transceiver', recvonly, Gst.Caps.from_string('application/x-rtp,media=video,encoding-name=H264,payload=96,clock-rate=90000,packetization-mode=(string)1,profile-level-id=(string)42e01f'))
webrtc.emit('add-transceiver', recvonly, Gst.Caps.from_string('application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000,encoding-params=(string)2'))

def finish():
    if result.get('done'):
        return False
    result['done'] = True
    with lock:
        values = sorted(ms for _, ms in skews)
    if values:
        q = lambda f: values[min(len(values) - 1, int(len(values) * f))]
        result.update(samples=len(values), p50=round(q(0.5), 1), p99=round(q(0.99), 1), min=round(values[0], 1), max=round(values[-1], 1))
        per_second = {}
        for s, ms in skews:
            per_second.setdefault(int(s), []).append(ms)
        result['per_second_p50'] = [round(sorted(v)[len(v) // 2], 1) for _, v in sorted(per_second.items())]
    fractions = [ntp % 1 for pairs in reports.values() for ntp, _ in pairs]
    if fractions:
        result['sender_reports'] = len(fractions)
        result['sender_report_ntp_fraction_max_ms'] = round(max(fractions) * 1000, 1)
    del result['done']
    print(json.dumps(result), flush=True)
    loop.quit()
    return False

def on_audio(sink, buffer, pad):
    with lock:
        result['audio_buffers'] += 1
        state['audio_pts'] = buffer.pts

def on_video(sink, buffer, pad):
    with lock:
        result['frames'] += 1
        if state['audio_pts'] is None or buffer.pts == Gst.CLOCK_TIME_NONE:
            return
        now = pipe.get_clock().get_time() if pipe.get_clock() else 0
        if state['start'] is None:
            state['start'] = now
            GLib.timeout_add(int(seconds * 1000), finish)
        skews.append(((now - state['start']) / Gst.SECOND, (buffer.pts - state['audio_pts']) / Gst.MSECOND))

def on_pad(element, pad):
    if pad.get_direction() != Gst.PadDirection.SRC:
        return
    media = pad.get_current_caps().get_structure(0).get_string('media')
    chain = 'rtph264depay ! h264parse ! avdec_h264' if media == 'video' else 'rtpopusdepay ! opusdec'
    decode = Gst.parse_bin_from_description(f'{chain} ! fakesink name=sink sync=false signal-handoffs=true', True)
    pipe.add(decode)
    decode.sync_state_with_parent()
    decode.get_by_name('sink').connect('handoff', on_video if media == 'video' else on_audio)
    pad.link(decode.get_static_pad('sink'))

def post(offer_sdp):
    global location
    request = urllib.request.Request(url, data=offer_sdp.encode(), method='POST', headers={'content-type': 'application/sdp'})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            result['status'] = response.status
            location = response.headers['location']
            answer = response.read().decode()
    except urllib.error.HTTPError as e:
        result['status'], result['detail'] = e.code, e.read().decode()
        GLib.idle_add(finish)
        return
    except OSError as e:
        result['detail'] = str(e)
        GLib.idle_add(finish)
        return
    _, sdp = GstSdp.SDPMessage.new_from_text(answer)
    webrtc.emit('set-remote-description', GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, sdp), None)

def offer_text(element):
    # webrtcbin marks the audio section RFC 8843 bundle-only (port 0), which werift takes as rejected and
    # answers inactive; a plain bundled section (port 9, as Chromium offers) is accepted. Lower-case codec
    # name as Chromium writes it.
    sdp = element.get_property('local-description').sdp.as_text()
    return sdp.replace('OPUS/48000', 'opus/48000').replace('m=audio 0 ', 'm=audio 9 ').replace('a=bundle-only\r\n', '')

def on_gathering(element, _):
    if element.get_property('ice-gathering-state') == GstWebRTC.WebRTCICEGatheringState.COMPLETE:
        threading.Thread(target=lambda: post(offer_text(element)), daemon=True).start()

def on_offer(promise, _):
    reply = promise.get_reply()
    offer = reply.get_value('offer') if reply.has_field('offer') else None
    if offer is None:
        result['detail'] = f'webrtcbin made no offer: {reply.to_string()}'
        GLib.idle_add(finish)
        return
    webrtc.emit('set-local-description', offer, None)

offered = False
def on_negotiation(element):
    global offered
    if not offered:
        offered = True
        webrtc.emit('create-offer', None, Gst.Promise.new_with_change_func(on_offer, None))

webrtc.connect('on-negotiation-needed', on_negotiation)
webrtc.connect('pad-added', on_pad)
webrtc.connect('notify::ice-gathering-state', on_gathering)
# The sender reports each track's RTP/NTP pair came with, as rtpbin read them (what its lip sync rests on):
# their NTP times' fraction of a second shows whether the sender's clock is whole (werift's is cut to the second).
reports = {}
def read_sender_reports():
    rtpbin = None
    found = webrtc.iterate_recurse()
    while rtpbin is None:
        ok, element = found.next()
        if ok != Gst.IteratorResult.OK:
            return True
        if element.get_factory() and element.get_factory().get_name() == 'rtpbin':
            rtpbin = element
    session = rtpbin.emit('get-session', 0)
    if session is None:
        return True
    text = session.get_property('stats').to_string().replace('\\', '')
    for m in re.finditer(r'ssrc=\(uint\)(\d+), internal=\(boolean\)false[^;]*?have-sr=\(boolean\)true, sr-ntptime=\(guint64\)(\d+), sr-rtptime=\(uint\)(\d+)', text):
        pairs = reports.setdefault(m.group(1), [])
        pair = (int(m.group(2)) / 2**32, int(m.group(3)))
        if not pairs or pairs[-1] != pair:
            pairs.append(pair)
    return not result.get('done')
GLib.timeout_add(50, read_sender_reports)

pipe.set_state(Gst.State.PLAYING)
GLib.timeout_add(int((seconds + 30) * 1000), finish)  # no media at all: give up
loop.run()
pipe.set_state(Gst.State.NULL)
if location:
    try:
        urllib.request.urlopen(urllib.request.Request(url.split('/api/')[0] + location, method='DELETE'), timeout=5)
    except Exception:
        pass
