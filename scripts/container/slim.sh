#!/usr/bin/env bash
# The image's runtime stage, after the GStreamer packages: removes what a headless service never loads.
# Debian's gstreamer1.0-plugins-bad depends on GTK (its Wayland sink), which pulls Mesa and LLVM; its
# Intel Media SDK and speech-synthesis plugins pull libmfx and flite. None of that is a camera's path.
# The packages are removed with dpkg --force-depends (apt would take plugins-bad with them), then every
# GStreamer plugin whose libraries are gone is removed too, so the registry never tries to load it, and
# every element and module the service uses is checked to load. Prints what it saved and the largest
# packages left, so the next trim is a measurement.
set -euo pipefail

# Libraries and data only the removed plugins (or GL drivers loaded at run time) use.
DROP=(
  libllvm15 libz3-4 libgl1-mesa-dri mesa-vulkan-drivers mesa-va-drivers mesa-vdpau-drivers # GL/Vulkan drivers
  libgtk-3-0 libgtk-3-common libgtk-3-bin adwaita-icon-theme hicolor-icon-theme gtk-update-icon-cache # GTK
  librsvg2-2 librsvg2-common # SVG icons for GTK
  libmfx1 libflite1 # Intel Media SDK, speech synthesis
  iso-codes # language names for tags
  timgm6mb-soundfont fluid-soundfont-gm # MIDI
)
# The elements the service starts (drivers/gstreamer/pipeline.ts, plugins/jpeg/gst.ts, plugins/rtsp/server.py).
ELEMENTS=(v4l2src videotestsrc videoconvert videoscale videorate jpegenc jpegdec jpegparse x264enc h264parse
  openh264dec rtph264pay rtph264depay rtpjpegpay rtpjpegdepay rtpstreamdepay multiudpsink udpsrc udpsink matroskamux
  identity progressreport queue tee fdsrc fdsink filesink capsfilter)

size_kb() { dpkg-query -W -f='${Installed-Size}\n' 2>/dev/null | awk '{ s += $1 } END { print s }'; }
before=$(size_kb)
present=()
for p in "${DROP[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' && present+=("$p"); done
((${#present[@]})) && dpkg --purge --force-depends "${present[@]}" >/dev/null

plugins=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -dumpmachine 2>/dev/null || uname -m)-linux-gnu/gstreamer-1.0
[ -d "$plugins" ] || plugins=$(dirname "$(find /usr/lib -name libgstcoreelements.so | head -1)")
removed=0
for so in "$plugins"/*.so; do
  if ldd "$so" 2>/dev/null | grep -q 'not found'; then rm -f "$so"; removed=$((removed + 1)); fi
done
rm -rf /root/.cache/gstreamer-1.0

for element in "${ELEMENTS[@]}"; do
  gst-inspect-1.0 "$element" >/dev/null 2>&1 || { echo "slim: element $element does not load after the trim" >&2; exit 1; }
done
/usr/bin/python3 -c "import gi; gi.require_version('GstRtspServer', '1.0'); from gi.repository import GstRtspServer" \
  || { echo "slim: GstRtspServer does not import after the trim" >&2; exit 1; }
after=$(size_kb)
echo "slim: removed ${present[*]:-nothing} and $removed plugins that needed them: $(((before - after) / 1024)) MB of packages"
echo "slim: largest packages left (MB):"
dpkg-query -W -f='${Installed-Size} ${Package}\n' | sort -rn | head -25 | awk '{ printf "  %6.1f %s\n", $1 / 1024, $2 }'
