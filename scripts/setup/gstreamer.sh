#!/usr/bin/env bash
# GStreamer 1.22 from Debian for the streamer and its tests; python3 for the pseudo-terminal test of
# the frame-sync module. Idempotent: installs only what is missing, runs apt-get update only if needed.
set -euo pipefail

PACKAGES=(
  gstreamer1.0-tools          # gst-launch-1.0, gst-inspect-1.0
  gstreamer1.0-plugins-base   # videotestsrc, videoconvert, videorate; audiotestsrc, opusenc/opusdec, audioconvert; subparse
  gstreamer1.0-alsa           # alsasrc: sound cards (plugins/audio)
  alsa-utils                  # amixer: a sound card's own capture volume and switch (drivers/alsa/mixer.ts)
  gstreamer1.0-plugins-base-apps # gst-discoverer-1.0 (the tests read recordings with it)
  gstreamer1.0-plugins-good   # v4l2src, jpegenc/jpegdec, rtp(h264|jpeg)(pay|depay), udp, matroskamux, mp4mux, splitmuxsink
  gstreamer1.0-plugins-bad    # h264parse, fakevideosink, srtenc (the telemetry cues' duration)
  gstreamer1.0-plugins-ugly   # x264enc
  gstreamer1.0-python3-plugin-loader # periscopetimecode: the time code simulated cameras paint (drivers/gstreamer/elements)
  gstreamer1.0-libav          # avdec_h264 (receivers in the tests)
  python3                     # os.openpty for the frame-sync test
  procps                      # ps: the tests and the benchmark find gst children by parent pid
)

# --runtime (the container image): what the service runs, without the tests' tools: no libav (the
# service decodes H.264 with openh264dec from plugins-bad when avdec_h264 is absent), no discoverer, no
# Python plugin loader (the image runs real cameras: simulated ones there stream without their time code).
RUNTIME=0
[ "${1:-}" = --runtime ] && RUNTIME=1
if [ "$RUNTIME" = 1 ]; then
  kept=()
  for p in "${PACKAGES[@]}"; do case "$p" in gstreamer1.0-libav | gstreamer1.0-plugins-base-apps | gstreamer1.0-python3-plugin-loader) ;; *) kept+=("$p") ;; esac; done
  PACKAGES=("${kept[@]}")
fi

source "$(dirname "$0")/apt.sh"
apt_install_missing "gstreamer setup" "${PACKAGES[@]}"

# setpriv (util-linux) gives children a parent-death signal; stty (coreutils) sets the board's baud rate.
tools=(gst-launch-1.0 gst-inspect-1.0 setpriv stty ps python3)
elements=(videotestsrc videoconvert x264enc jpegenc jpegdec h264parse openh264dec rtph264pay rtpjpegpay rtph264depay rtpjpegdepay multiudpsink udpsrc matroskamux matroskademux identity progressreport v4l2src decodebin)
[ "$RUNTIME" = 1 ] || { tools+=(gst-discoverer-1.0); elements+=(avdec_h264); }
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null || { echo "gstreamer setup: $tool missing after install" >&2; exit 1; }
done
for element in "${elements[@]}"; do
  gst-inspect-1.0 "$element" >/dev/null 2>&1 || { echo "gstreamer setup: element $element missing" >&2; exit 1; }
done
echo "gstreamer setup: ok"
