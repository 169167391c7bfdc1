#!/usr/bin/env bash
# The RTSP plugin's helper (plugins/rtsp/server.py): GStreamer's RTSP server library through Debian's
# Python bindings, run with /usr/bin/python3; ffmpeg for ffprobe, the tests' independent RTSP client.
# Idempotent: installs only what is missing.
set -euo pipefail

PACKAGES=(
  python3-gi                  # GObject introspection for /usr/bin/python3
  gir1.2-gstreamer-1.0        # Gst
  gir1.2-gst-rtsp-server-1.0  # GstRtspServer (pulls libgstrtspserver-1.0-0)
  gstreamer1.0-plugins-good   # udpsrc, rtp(h264|jpeg)(pay|depay), rtspsrc (the tests' client)
  gstreamer1.0-plugins-bad    # h264parse
)
[ "${1:-}" = --runtime ] || PACKAGES+=(ffmpeg) # ffprobe: a client for the tests, not needed to serve

source "$(dirname "$0")/apt.sh"
apt_install_missing "rtsp setup" "${PACKAGES[@]}"

/usr/bin/python3 -c "import gi; gi.require_version('GstRtspServer', '1.0'); from gi.repository import GstRtspServer" \
  || { echo "rtsp setup: GstRtspServer not importable by /usr/bin/python3" >&2; exit 1; }
[ "${1:-}" = --runtime ] || command -v ffprobe >/dev/null || { echo "rtsp setup: ffprobe missing after install" >&2; exit 1; }
echo "rtsp setup: ok"
