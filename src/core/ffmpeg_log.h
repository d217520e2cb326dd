// FFmpeg's own printing ("[tcp @ 0x55..] Connection refused"), ours and OpenCV's videoio's alike:
// shown only with --verbose; otherwise an error it logs is kept, per thread, so that the one line
// we print can say why ("cannot open stream rtsp://cam/x: Connection refused").
#pragma once

#include <string>

namespace sd {

// Routes FFmpeg's log through us; idempotent, call before opening anything with FFmpeg.
void capture_ffmpeg_log();

// The last error FFmpeg logged on this thread since the previous call, one line; empty if none.
std::string take_ffmpeg_error();

}  // namespace sd
