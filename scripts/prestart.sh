#!/usr/bin/env bash
# Before `npm start`: npm dependencies, then GStreamer (the streamer) when this is a Debian machine we
# may install on. Without GStreamer the service still runs and says so in /api/health.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
if ! command -v gst-launch-1.0 >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "periscope: installing GStreamer for streaming and recording…" >&2
    bash scripts/setup/gstreamer.sh >&2 || echo "periscope: GStreamer could not be installed; streams will answer 503" >&2
  else
    echo "periscope: gst-launch-1.0 not found and cannot install it here (need root and apt-get); streams will answer 503" >&2
  fi
elif ! gst-inspect-1.0 python >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  # Simulated cameras paint their time code with a Python element (drivers/gstreamer/elements).
  bash scripts/setup/gstreamer.sh >&2 || echo "periscope: GStreamer's Python plugin loader could not be installed; simulated cameras stream without their time code" >&2
fi
# The RTSP server's helper runs GStreamer's RTSP server library through Debian's python3-gi.
if ! /usr/bin/python3 -c "import gi; gi.require_version('GstRtspServer', '1.0')" >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "periscope: installing GStreamer's RTSP server for rtsp://…:8554…" >&2
    bash scripts/setup/rtsp.sh --runtime >&2 || echo "periscope: the RTSP server could not be installed; /api/health says rtsp is down" >&2
  else
    echo "periscope: GStreamer's RTSP server (python3-gi, gir1.2-gst-rtsp-server-1.0) not found and cannot install it here; /api/health says rtsp is down" >&2
  fi
fi
