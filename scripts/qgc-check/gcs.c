/*
 * QGroundControl's camera sequence, on the official MAVLink C headers (mavlink/c_library_v2, fetched
 * beside the project, never copied into it): a ground station (255/190) and the vehicle's autopilot
 * (1/1, sending GLOBAL_POSITION_INT) talk to Periscope's MAVLink link over UDP on 127.0.0.1, and one
 * camera component is asked, in QGC's order: CAMERA_INFORMATION (the definition's URI),
 * VIDEO_STREAM_INFORMATION of every stream, every PARAM_EXT_VALUE, one PARAM_EXT_SET, one still
 * (IMAGE_START_CAPTURE, answered by CAMERA_IMAGE_CAPTURED). It prints what it got, a line each, for
 * scripts/qgc-check.ts to compare with the HTTP API; it exits 1 when an answer does not come.
 *   cc -I <c_library_v2> -o gcs gcs.c && ./gcs <service port> <camera component> <param id> <int value> <lat e7> <lon e7>
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "common/mavlink.h"

static int sock;
static struct sockaddr_in service;
static uint8_t camera;
static int32_t lat, lon;

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void send_msg(const mavlink_message_t *msg) {
  uint8_t buf[MAVLINK_MAX_PACKET_LEN];
  uint16_t len = mavlink_msg_to_send_buffer(buf, msg);
  sendto(sock, buf, len, 0, (struct sockaddr *)&service, sizeof service);
}

/* The ground station's heartbeat and the autopilot's position, as a vehicle's link carries them. */
static void send_background(void) {
  mavlink_message_t msg;
  mavlink_msg_heartbeat_pack(255, 190, &msg, MAV_TYPE_GCS, MAV_AUTOPILOT_INVALID, 0, 0, MAV_STATE_ACTIVE);
  send_msg(&msg);
  mavlink_msg_global_position_int_pack(1, 1, &msg, 0, lat, lon, 0, -5000, 0, 0, 0, 27100);
  send_msg(&msg);
}

/* Waits up to timeout_ms for a message from the camera with id `msgid` (any id: 0xffffffff). */
static int receive(uint32_t msgid, mavlink_message_t *out, int timeout_ms) {
  static mavlink_status_t status;
  long long deadline = now_ms() + timeout_ms, background = 0;
  for (;;) {
    long long left = deadline - now_ms();
    if (left <= 0) return 0;
    if (now_ms() >= background) {
      send_background();
      background = now_ms() + 500;
    }
    struct pollfd p = {sock, POLLIN, 0};
    if (poll(&p, 1, left < 100 ? (int)left : 100) <= 0) continue;
    uint8_t buf[2048];
    ssize_t n = recv(sock, buf, sizeof buf, 0);
    for (ssize_t i = 0; i < n; i++) {
      if (!mavlink_parse_char(MAVLINK_COMM_0, buf[i], out, &status)) continue;
      if (out->compid == camera && (msgid == 0xffffffff || out->msgid == msgid)) return 1;
    }
  }
}

static void command(uint16_t cmd, float p1, float p2, float p3, float p4) {
  mavlink_message_t msg;
  mavlink_msg_command_long_pack(255, 190, &msg, 1, camera, cmd, 0, p1, p2, p3, p4, 0, 0, 0);
  send_msg(&msg);
}

static int fail(const char *what) {
  printf("FAIL %s\n", what);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s <service port> <camera component> <param id> <int value> <lat e7> <lon e7>\n", argv[0]);
    return 2;
  }
  camera = (uint8_t)atoi(argv[2]);
  lat = atoi(argv[5]);
  lon = atoi(argv[6]);
  sock = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in local = {.sin_family = AF_INET, .sin_port = 0};
  inet_pton(AF_INET, "127.0.0.1", &local.sin_addr);
  bind(sock, (struct sockaddr *)&local, sizeof local);
  service.sin_family = AF_INET;
  service.sin_port = htons((uint16_t)atoi(argv[1]));
  inet_pton(AF_INET, "127.0.0.1", &service.sin_addr);
  mavlink_message_t msg;

  /* Discovery: the camera's HEARTBEAT (MAV_TYPE_CAMERA). */
  do {
    if (!receive(MAVLINK_MSG_ID_HEARTBEAT, &msg, 15000)) return fail("no HEARTBEAT from the camera");
  } while (mavlink_msg_heartbeat_get_type(&msg) != MAV_TYPE_CAMERA);
  printf("HEARTBEAT %d %d\n", msg.sysid, msg.compid);

  /* CAMERA_INFORMATION: vendor, model, flags and the definition's URI and version. */
  command(MAV_CMD_REQUEST_MESSAGE, MAVLINK_MSG_ID_CAMERA_INFORMATION, 0, 0, 0);
  if (!receive(MAVLINK_MSG_ID_CAMERA_INFORMATION, &msg, 5000)) return fail("no CAMERA_INFORMATION");
  mavlink_camera_information_t info;
  mavlink_msg_camera_information_decode(&msg, &info);
  printf("INFO %u %u %.32s|%.32s|%.140s\n", info.flags, info.cam_definition_version, (char *)info.vendor_name, (char *)info.model_name, info.cam_definition_uri);

  /* VIDEO_STREAM_INFORMATION of every stream (param2 0). */
  command(MAV_CMD_REQUEST_MESSAGE, MAVLINK_MSG_ID_VIDEO_STREAM_INFORMATION, 0, 0, 0);
  int streams = 0, count = 1;
  while (streams < count) {
    if (!receive(MAVLINK_MSG_ID_VIDEO_STREAM_INFORMATION, &msg, 5000)) return fail("too few VIDEO_STREAM_INFORMATION");
    mavlink_video_stream_information_t s;
    mavlink_msg_video_stream_information_decode(&msg, &s);
    count = s.count;
    streams++;
    printf("STREAM %u %u %u %u %ux%u %.160s\n", s.stream_id, s.count, s.type, s.encoding, s.resolution_h, s.resolution_v, s.uri);
  }

  /* Every parameter (PARAM_EXT_REQUEST_LIST), in any order. */
  mavlink_msg_param_ext_request_list_pack(255, 190, &msg, 1, camera);
  send_msg(&msg);
  int seen = 0, total = -1;
  char got[512] = {0};
  while (total < 0 || seen < total) {
    if (!receive(MAVLINK_MSG_ID_PARAM_EXT_VALUE, &msg, 10000)) return fail("too few PARAM_EXT_VALUE");
    mavlink_param_ext_value_t v;
    mavlink_msg_param_ext_value_decode(&msg, &v);
    total = v.param_count;
    if (v.param_index >= sizeof got || got[v.param_index]) continue;
    got[v.param_index] = 1;
    seen++;
    int32_t value = 0;
    if (v.param_type == MAV_PARAM_EXT_TYPE_INT32) memcpy(&value, v.param_value, 4);
    else if (v.param_type == MAV_PARAM_EXT_TYPE_UINT8) value = (uint8_t)v.param_value[0];
    printf("PARAM %u %.16s %u %d\n", v.param_index, v.param_id, v.param_type, value);
  }

  /* One set, as QGC's settings panel sends it: an int32 in the value's first bytes. */
  char id[16] = {0}, value[128] = {0};
  strncpy(id, argv[3], sizeof id);
  int32_t wanted = atoi(argv[4]);
  memcpy(value, &wanted, 4);
  mavlink_msg_param_ext_set_pack(255, 190, &msg, 1, camera, id, value, MAV_PARAM_EXT_TYPE_INT32);
  send_msg(&msg);
  if (!receive(MAVLINK_MSG_ID_PARAM_EXT_ACK, &msg, 5000)) return fail("no PARAM_EXT_ACK");
  mavlink_param_ext_ack_t ack;
  mavlink_msg_param_ext_ack_decode(&msg, &ack);
  int32_t held;
  memcpy(&held, ack.param_value, 4);
  printf("SET %.16s %u %d\n", ack.param_id, ack.param_result, held);

  /* A still: COMMAND_ACK, then CAMERA_IMAGE_CAPTURED with the vehicle's position. */
  command(MAV_CMD_IMAGE_START_CAPTURE, 0, 0, 1, 1);
  do {
    if (!receive(MAVLINK_MSG_ID_COMMAND_ACK, &msg, 5000)) return fail("no COMMAND_ACK for IMAGE_START_CAPTURE");
  } while (mavlink_msg_command_ack_get_command(&msg) != MAV_CMD_IMAGE_START_CAPTURE);
  printf("ACK %u\n", mavlink_msg_command_ack_get_result(&msg));
  if (!receive(MAVLINK_MSG_ID_CAMERA_IMAGE_CAPTURED, &msg, 20000)) return fail("no CAMERA_IMAGE_CAPTURED");
  mavlink_camera_image_captured_t image;
  mavlink_msg_camera_image_captured_decode(&msg, &image);
  printf("IMAGE %d %d %d %d %.205s\n", image.capture_result, image.lat, image.lon, image.image_index, image.file_url);
  return 0;
}
