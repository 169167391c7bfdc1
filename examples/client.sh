#!/usr/bin/env bash
# A tour of the API with curl. BASE defaults to a local service.
set -euo pipefail
BASE=${BASE:-http://localhost:8080}
J='content-type: application/json'
curl -s "$BASE/api/devices" | python3 -m json.tool | head -40
BUS=$(curl -s "$BASE/api/devices" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["bus_info"])')
curl -s -XPOST "$BASE/api/devices/set_nickname" -H "$J" -d "{\"bus_info\":\"$BUS\",\"nickname\":\"Bow\"}"; echo
curl -s -XPOST "$BASE/api/devices/set_uvc_control" -H "$J" -d "{\"bus_info\":\"$BUS\",\"control_id\":9963776,\"value\":10}"; echo
curl -s -XPOST "$BASE/api/devices/configure_stream" -H "$J" -d "{\"bus_info\":\"$BUS\",\"stream_type\":\"UDP\",\"encode_type\":\"H264\",\"stream_format\":{\"width\":1280,\"height\":720,\"interval\":{\"numerator\":1,\"denominator\":30}},\"enabled\":true,\"endpoints\":[{\"host\":\"127.0.0.1\",\"port\":5600}]}"; echo
curl -s "$BASE/api/health"; echo
