// A tiny RTSP server for the tests (tests/rtsp_reconnect_test.cpp): serves a live test pattern,
// 320x240 at 25 fps as RTP/JPEG, at rtsp://127.0.0.1:PORT/test until it is killed. The test
// kills it (a camera that dies) and starts it again on the same port (the camera comes back).
//   streamdet_rtsp_test_server PORT
// Prints "ready" on stdout once it listens.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gst/gst.h>
#include <gst/rtsp-server/rtsp-server.h>

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  if (argc != 2 || std::atoi(argv[1]) <= 0) {
    std::fprintf(stderr, "usage: %s PORT\n", argv[0]);
    return 2;
  }
  GMainLoop* loop = g_main_loop_new(nullptr, FALSE);
  GstRTSPServer* server = gst_rtsp_server_new();
  g_object_set(server, "address", "127.0.0.1", "service", argv[1], nullptr);
  GstRTSPMediaFactory* factory = gst_rtsp_media_factory_new();
  gst_rtsp_media_factory_set_launch(factory,
                                    "( videotestsrc is-live=true pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=25/1 "
                                    "! jpegenc ! rtpjpegpay name=pay0 pt=26 )");
  gst_rtsp_media_factory_set_shared(factory, TRUE);
  GstRTSPMountPoints* mounts = gst_rtsp_server_get_mount_points(server);
  gst_rtsp_mount_points_add_factory(mounts, "/test", factory);
  g_object_unref(mounts);
  if (gst_rtsp_server_attach(server, nullptr) == 0) {
    std::fprintf(stderr, "cannot listen on port %s\n", argv[1]);
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  g_main_loop_run(loop);
  return 0;
}
