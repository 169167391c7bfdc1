#!/usr/bin/env bash
# A non-browser WHEP player for the integration tests (tests/integration/fixtures/whep-webrtcbin.py):
# GStreamer's webrtcbin with libnice's ICE, driven from /usr/bin/python3, decoding with avdec_h264.
# Idempotent: installs only what is missing.
set -euo pipefail

PACKAGES=(
  python3-gi                  # GObject introspection for /usr/bin/python3
  gir1.2-gstreamer-1.0        # Gst
  gir1.2-gst-plugins-bad-1.0  # GstWebRTC, GstSdp's companions for webrtcbin
  gstreamer1.0-plugins-bad    # webrtcbin, h264parse
  gstreamer1.0-nice           # libnice: webrtcbin's ICE
  gstreamer1.0-libav          # avdec_h264
)

source "$(dirname "$0")/apt.sh"
apt_install_missing "whep setup" "${PACKAGES[@]}"

/usr/bin/python3 -c "import gi; gi.require_version('GstWebRTC', '1.0'); gi.require_version('GstSdp', '1.0'); from gi.repository import GstWebRTC, GstSdp" \
  || { echo "whep setup: GstWebRTC not importable by /usr/bin/python3" >&2; exit 1; }
gst-inspect-1.0 webrtcbin >/dev/null && gst-inspect-1.0 nicesrc >/dev/null \
  || { echo "whep setup: webrtcbin or libnice's GStreamer plugin missing after install" >&2; exit 1; }
echo "whep setup: ok"
