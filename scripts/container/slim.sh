#!/usr/bin/env bash
# The image's runtime stage, after the GStreamer packages: keeps only what the service loads. Debian's
# GStreamer plugin packages depend on every library any of their plugins links (GTK, Mesa and LLVM for a
# Wayland sink, FFmpeg for chromaprint, codecs, fonts, X11, …); a headless camera service loads a few
# dozen elements. So the kept set is measured, not listed: the packages that own a file the service's
# elements, its tools and its RTSP helper (python3-gi with GstRtspServer) load, per ldd, plus the base
# system (priority required/important), Python and its GObject typelibs. Everything else is removed with
# dpkg --force-depends (apt would take the plugin packages along), then every plugin whose libraries are
# gone, so GStreamer's registry never tries to load one. Each element is checked to load afterwards, and
# a key frame is encoded, payloaded and decoded. Prints what it saved and the largest packages left.
set -euo pipefail

# The elements the service starts (drivers/gstreamer/pipeline.ts, simulated.ts and audio.ts, plugins/jpeg/gst.ts,
# plugins/rtsp/server.py), the sound's among them (alsasrc's alsa-lib and opusenc's libopus are loaded
# by no video element).
ELEMENTS=(v4l2src videotestsrc videoconvert videoscale videorate jpegenc jpegdec jpegparse x264enc h264parse
  openh264dec rtph264pay rtph264depay rtpjpegpay rtpjpegdepay rtpstreampay rtpstreamdepay multiudpsink udpsrc udpsink
  matroskamux splitmuxsink identity progressreport queue tee fdsrc fdsink filesink capsfilter rtpbin rtpjitterbuffer appsrc appsink funnel
  alsasrc audiotestsrc audioconvert audioresample volume level opusenc opusparse rtpopuspay rtpopusdepay
  rtpgstdepay srtenc subparse)
# Kept whatever ldd says, with what they depend on: loaded by name or read as data (Python, certificates,
# time zones).
KEEP_PATTERN='^(python3.*|libpython3.*|ca-certificates|tzdata|libsqlite3-0|libssl3|media-types|netbase)$'
# Kept without what they depend on: GObject typelibs (gir1.2-gst-plugins-base-1.0 holds GstGL's too, whose
# library pulls OpenGL and Mesa; the RTSP helper loads Gst, GstRtsp, GstSdp, GstNet, GstRtspServer).
LEAF_PATTERN='^gir1\.2-.*$'

size_kb() { dpkg-query -W -f='${Installed-Size}\n' | awk '{ s += $1 } END { print s }'; }
before=$(size_kb)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo "$(uname -m)-linux-gnu")
plugins=/usr/lib/$multiarch/gstreamer-1.0

files=()
for element in "${ELEMENTS[@]}"; do
  file=$(gst-inspect-1.0 "$element" 2>/dev/null | awk '$1 == "Filename" { print $2 }')
  [ -n "$file" ] || { echo "slim: element $element is not installed" >&2; exit 1; }
  files+=("$file")
done
# amixer: a sound card's own capture volume and switch (drivers/alsa/mixer.ts).
files+=("$(command -v gst-launch-1.0)" "$(command -v gst-inspect-1.0)" "$(command -v amixer)" /usr/bin/python3
  /usr/lib/"$multiarch"/gstreamer1.0/gstreamer-1.0/gst-plugin-scanner
  /usr/lib/"$multiarch"/libgstrtspserver-1.0.so.0 /usr/lib/"$multiarch"/libgirepository-1.0.so.1
  "$(/usr/bin/python3 -c 'import gi._gi as m; print(m.__file__)')")
# The packages owning these files; dpkg knows a merged-/usr file by either of its names.
owners() {
  while read -r f; do
    r=$(readlink -f "$f")
    dpkg -S "$r" 2>/dev/null || dpkg -S "${r#/usr}" 2>/dev/null || dpkg -S "$f" 2>/dev/null || echo "slim: no package owns $f" >&2
  done | cut -d: -f1 | tr ', ' '\n\n' | grep -v '^$' | sort -u
}
needed=$({ printf '%s\n' "${files[@]}"; for f in "${files[@]}"; do ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'; done; } | owners)

# The base system and what it depends on: packages of priority required or important, Python, and
# (recursively) every package those depend on; plus the measured set and the typelibs, which keep their
# own files only (their packages' other dependencies are what this script is here to drop).
mapfile -t drop < <(dpkg-query -W -f='${db:Status-Abbrev}\t${Package}\t${Priority}\t${Pre-Depends}, ${Depends}\n' | /usr/bin/python3 -c '
import re, sys
measured, keep_pattern, leaf_pattern = set(sys.argv[1].split()), re.compile(sys.argv[2]), re.compile(sys.argv[3])
deps, roots = {}, []
for line in sys.stdin:
    status, package, priority, depends = line.rstrip("\n").split("\t")
    if not status.startswith("ii"):
        continue
    deps[package] = [alt.split()[0].split(":")[0] for group in depends.split(",") for alt in group.split("|") if alt.strip()]
    if priority in ("required", "important") or keep_pattern.match(package):
        roots.append(package)
kept, todo = set(measured) | {p for p in deps if leaf_pattern.match(p)}, list(roots)
while todo:
    package = todo.pop()
    if package in kept or package not in deps:
        continue
    kept.add(package)
    todo.extend(deps[package])
print("\n".join(sorted(p for p in deps if p not in kept)))
' "$needed" "$KEEP_PATTERN" "$LEAF_PATTERN")
((${#drop[@]})) && dpkg --purge --force-depends "${drop[@]}" >/dev/null 2>&1

removed=0
for so in "$plugins"/*.so; do
  if ldd "$so" 2>/dev/null | grep -q 'not found'; then rm -f "$so"; removed=$((removed + 1)); fi
done
rm -rf /root/.cache/gstreamer-1.0

for element in "${ELEMENTS[@]}"; do
  gst-inspect-1.0 "$element" >/dev/null 2>&1 || { echo "slim: element $element does not load after the trim" >&2; exit 1; }
done
/usr/bin/python3 -c "import gi; gi.require_version('GstRtspServer', '1.0'); gi.require_version('Gst', '1.0'); from gi.repository import Gst, GstRtspServer; Gst.init(None); GstRtspServer.RTSPServer()" \
  || { echo "slim: GstRtspServer does not import after the trim" >&2; exit 1; }
# A software H.264 stream through the payloader and back, decoded by the JPEG views' decoder.
gst-launch-1.0 -q videotestsrc num-buffers=10 ! video/x-raw,width=320,height=240 ! x264enc tune=zerolatency sliced-threads=false \
  ! h264parse ! rtph264pay ! rtph264depay ! h264parse ! openh264dec ! videoconvert ! jpegenc ! fakesink \
  || { echo "slim: H.264 encode and decode fail after the trim" >&2; exit 1; }
# The sound: a tone encoded as Opus, payloaded and back, as plugins/audio and the recorder do.
gst-launch-1.0 -q audiotestsrc num-buffers=20 ! audioconvert ! audioresample ! volume ! level ! opusenc ! rtpopuspay ! rtpopusdepay ! opusparse ! fakesink \
  || { echo "slim: Opus encode and payload fail after the trim" >&2; exit 1; }
amixer --version >/dev/null || { echo "slim: amixer does not run after the trim" >&2; exit 1; }
after=$(size_kb)
echo "slim: removed ${#drop[@]} packages and $removed plugins that needed them: $(((before - after) / 1024)) MB; kept: $(tr '\n' ' ' <<<"$needed")"
echo "slim: largest packages left (MB):"
dpkg-query -W -f='${Installed-Size} ${Package}\n' | sort -rn | head -15 | awk '{ printf "  %6.1f %s\n", $1 / 1024, $2 }'
