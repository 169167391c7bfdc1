# Periscope as a container image and a BlueOS extension, for linux/amd64 and linux/arm64:
#   docker buildx build --platform linux/amd64,linux/arm64 -t <you>/periscope:0.1.0 --push .
# Without a registry (as here), scripts/container/build.sh builds it with podman from a base made of
# Debian's packages. README: "BlueOS extension and container".
ARG BASE_IMAGE=docker.io/library/debian:bookworm-slim
# The npm stage runs on the build machine's own architecture (no emulation); it needs a base of that
# architecture, which is BASE_IMAGE itself when that is a multi-arch image.
ARG BUILD_BASE_IMAGE=${BASE_IMAGE}

FROM --platform=$BUILDPLATFORM ${BUILD_BASE_IMAGE} AS app
ARG TARGETARCH
# package.json's bun (the contract tier checks that they agree).
ARG BUN_VERSION=1.4.5
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs npm ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/periscope
COPY package.json package-lock.json ./
# The production dependencies from the lock (plain JavaScript, the same for every architecture);
# dbus-next's optional native socket is left out, as on a machine without compilers: it falls back to node:net.
# (npm warns that werift wants Node 22: Bun, not this Node, runs it; warnings are not shown.)
# Then what only an editor or a compiler reads goes: source maps, type declarations, and TypeScript
# itself (npm installs it as a peer of Elysia's types; Bun runs TypeScript without it). About 55 MB.
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund --loglevel=error \
 && find node_modules \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -delete \
 && rm -rf node_modules/typescript node_modules/@types
# Bun for the target: the npm package that holds its binary (what the `bun` package's install script
# picks on such a machine; named here by TARGETARCH, so a cross-build picks right).
RUN case "$TARGETARCH" in \
      amd64) pkg=@oven/bun-linux-x64 ;; \
      arm64) pkg=@oven/bun-linux-aarch64 ;; \
      *) echo "Periscope's image is built for amd64 and arm64, not $TARGETARCH" >&2; exit 1 ;; \
    esac \
 && npm pack --silent "$pkg@$BUN_VERSION" \
 && tar -xzf oven-bun-linux-*.tgz package/bin/bun \
 && install -D -m 755 package/bin/bun /opt/bun/bin/bun \
 && rm -rf package oven-bun-linux-*.tgz
COPY bunfig.toml tsconfig.json ./
COPY core core
COPY drivers drivers
COPY media media
# Every plugin the tree holds (the console among them).
COPY plugins plugins
COPY examples examples

FROM ${BASE_IMAGE} AS runtime
# GStreamer (streams, recordings, JPEG) and its RTSP server through python3-gi: the packages
# `npm start` installs on a Debian machine, from the same scripts.
# Then scripts/container/slim.sh removes what a headless service never loads (GTK, Mesa, LLVM: pulled by
# plugins-bad) and checks that every element the service starts still loads.
COPY scripts/setup/apt.sh scripts/setup/gstreamer.sh scripts/setup/rtsp.sh scripts/container/slim.sh /tmp/setup/
RUN apt-get update && bash /tmp/setup/gstreamer.sh --runtime && bash /tmp/setup/rtsp.sh --runtime \
 && bash /tmp/setup/slim.sh && apt-get clean && rm -rf /tmp/setup /var/lib/apt/lists/*

FROM runtime
COPY --from=app /opt/bun/bin/bun /usr/local/bin/bun
COPY --from=app /opt/periscope /opt/periscope
WORKDIR /opt/periscope
# 8080: the HTTP API, the console and /register_service (BlueOS finds the extension by it).
# RTSP on 8555: BlueOS's own mavlink-camera-manager holds 8554 on the same host network.
# Cockpit's signalling on 6021 (--cockpit-port) and the stream list its Video page reads on 6020
# (--cockpit-streams-port) when nothing else holds them; on BlueOS mavlink-camera-manager does, and
# Cockpit is given ws://<vehicle>:8080/api/cockpit/signalling (docs/cockpit.md).
# Simulated cameras are off: an onboard computer without a camera plugged in shows none.
ENV PERISCOPE_PORT=8080 \
    PERISCOPE_RTSP_PORT=8555 \
    PERISCOPE_DATA_DIR=/data \
    PERISCOPE_SIMULATE=off
# Settings (periscope.sqlite) and recordings (/data/recordings).
VOLUME /data
EXPOSE 8080/tcp 8555/tcp
STOPSIGNAL SIGTERM
CMD ["bun", "run", "core/main.ts"]

# BlueOS reads these labels (its Extensions manager). permissions is the body of Docker's
# create-container call: the host's network (NetworkManager, RTP to the topside, RTSP), /dev and /sys
# (cameras and the frame-sync board come and go: the cgroup rules let in V4L2 81, ttyACM 166 and
# ttyUSB 188 devices plugged in later), the host's D-Bus (NetworkManager) and a directory for /data.
ARG PROJECT_URL=https://periscope.invalid
LABEL version="0.1.0"
LABEL permissions='{\
  "ExposedPorts": {"8080/tcp": {}, "8555/tcp": {}},\
  "HostConfig": {\
    "NetworkMode": "host",\
    "Binds": [\
      "/dev:/dev",\
      "/sys:/sys",\
      "/run/dbus:/run/dbus",\
      "/usr/blueos/extensions/periscope:/data"\
    ],\
    "DeviceCgroupRules": ["c 81:* rwm", "c 166:* rwm", "c 188:* rwm"]\
  }\
}'
LABEL authors='[{"name": "The Periscope developers", "email": "periscope@periscope.invalid"}]'
LABEL company='{"name": "Periscope", "about": "Camera and network management for robots"}'
LABEL readme="${PROJECT_URL}/README.md"
LABEL links="{\"website\": \"${PROJECT_URL}\", \"support\": \"${PROJECT_URL}/issues\"}"
LABEL type="device-integration"
LABEL tags='["camera", "video", "rtsp", "webrtc", "recording", "network"]'
LABEL requirements="core >= 1.1"
