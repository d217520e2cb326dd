// Bad input says so: a text file given as a video is refused in one line (exit 4); a truncated or
// damaged file is processed as far as it decodes and ends with one warning line saying what was
// lost, and exit 7, its outputs complete (the JSON lines are the frames that were decoded).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include "cli_util.h"
#include "core/error.h"
#include "test_util.h"

namespace sd {
namespace {

namespace fs = std::filesystem;
using test::kTinyModel;

void cut_to(const std::string& path, double fraction, uintmax_t extra = 0) {
  fs::resize_file(path, static_cast<uintmax_t>(static_cast<double>(fs::file_size(path)) * fraction) + extra);
}

TEST(RobustnessSources, TextGivenAsAVideoIsRefused) {
  test::TempDir dir;
  {
    std::ofstream numbers(dir.file("numbers.txt"));
    for (int i = 1; i <= 20000; ++i) numbers << i << "\n";  // `seq 20000`: 454 "frames" through FFmpeg's tty demuxer
  }
  fs::copy_file(std::string(STREAMDET_SOURCE_DIR) + "/README.md", dir.file("notes.txt"));
  for (const char* name : {"numbers.txt", "notes.txt"}) {
    test::CliResult r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", dir.file(name), "-q", "-d", dir.file("d.jsonl")});
    EXPECT_EQ(r.code, exit_code::kSource) << name << ": " << r.err;
    auto lines = test::nonempty_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_NE(lines[0].find("not a video: " + dir.file(name)), std::string::npos) << lines[0];
    EXPECT_FALSE(fs::exists(dir.file("d.jsonl"))) << name;
  }
}

struct DamagedCase {
  std::string file;
  std::string mentions;  // in the warning
};

// Runs a damaged file: exit 7, the last line a warning naming the file and what was lost, and
// the JSON lines exactly the frames the profile says were done.
void expect_damaged(const test::TempDir& dir, const DamagedCase& c) {
  test::CliResult r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", c.file, "-q", "-d", dir.file("d.jsonl"), "--profile-json",
                                          dir.file("p.json")});
  EXPECT_EQ(r.code, exit_code::kDamagedSource) << c.file << ": " << r.err;
  const std::string last = test::last_line(r.err);
  EXPECT_EQ(last.rfind("streamdet: warning: " + c.file + " is damaged: ", 0), 0u) << last;
  EXPECT_NE(last.find(c.mentions), std::string::npos) << last;
  const int64_t lines = test::count_valid_jsonl_lines(dir.file("d.jsonl"));
  EXPECT_GT(lines, 0) << c.file;
  EXPECT_NE(last.find(std::to_string(lines) + " frames decoded"), std::string::npos) << last;
}

TEST(RobustnessSources, ATruncatedFileIsProcessedAsFarAsItGoesAndExitsSeven) {
  test::TempDir dir;
  // AVI (MJPEG): its header declares the frame count.
  test::write_numbered_avi(dir.file("clip.avi"), 40);
  test::CliResult whole = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", dir.file("clip.avi"), "-q"});
  EXPECT_EQ(whole.code, 0) << whole.err;
  cut_to(dir.file("clip.avi"), 0.6);
  expect_damaged(dir, {dir.file("clip.avi"), "of 40 declared"});
  // Stopping before the cut (--max-frames) is not a damaged run.
  test::CliResult early = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", dir.file("clip.avi"), "-q", "--max-frames", "5"});
  EXPECT_EQ(early.code, 0) << early.err;

  // MPEG-TS: no frame count; cut inside a transport packet.
  {
    cv::VideoWriter w(dir.file("clip.ts"), cv::CAP_FFMPEG, cv::VideoWriter::fourcc('m', 'p', '4', 'v'), 25, cv::Size(320, 192));
    ASSERT_TRUE(w.isOpened());
    for (int i = 0; i < 60; ++i) {
      cv::Mat f(192, 320, CV_8UC3, cv::Scalar(i, 2 * i, 255 - i));
      cv::circle(f, {i * 5, 96}, 20, {0, 0, 0}, -1);
      w.write(f);
    }
  }
  test::CliResult ts = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", dir.file("clip.ts"), "-q"});
  EXPECT_EQ(ts.code, 0) << ts.err;
  cut_to(dir.file("clip.ts"), 0.6, 77);
  expect_damaged(dir, {dir.file("clip.ts"), "the file ends in the middle of a transport packet"});
}

// Sends `bytes` to streamdet listening on `port` (it may not listen yet: a bounded number of tries).
bool send_to(int port, const std::string& bytes) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      size_t sent = 0;
      while (sent < bytes.size()) {
        const ssize_t n = ::send(s, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      ::close(s);
      return sent == bytes.size();
    }
    ::close(s);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// A live stream that stops (the sender goes away) is a cut, not an end: every frame that came is
// read (a live source: those that come while inference is busy may be dropped), then, with
// --reconnect never (by default it would wait for the sender to come back), one warning and exit 7.
TEST(RobustnessSources, ALiveStreamCutShortExitsSeven) {
  test::TempDir dir;
  {
    cv::VideoWriter w(dir.file("clip.ts"), cv::CAP_FFMPEG, cv::VideoWriter::fourcc('m', 'p', '4', 'v'), 25, cv::Size(320, 192));
    ASSERT_TRUE(w.isOpened());
    for (int i = 0; i < 30; ++i) w.write(cv::Mat(192, 320, CV_8UC3, cv::Scalar(i * 8, 128, 255 - i * 8)));
  }
  const int port = test::free_loopback_port();
  ASSERT_GT(port, 0);
  const std::string url = "tcp://127.0.0.1:" + std::to_string(port) + "?listen=1";
  test::Process p = test::spawn_streamdet({"run", "-m", kTinyModel, "-s", url, "--reconnect", "never", "-q", "-d", dir.file("d.jsonl")}, dir.file("stderr.txt"));
  ASSERT_TRUE(send_to(port, test::read_file(dir.file("clip.ts"))));
  EXPECT_EQ(test::wait_exit_code(p), exit_code::kDamagedSource) << test::read_file(dir.file("stderr.txt"));
  const std::string last = test::last_line(test::read_file(dir.file("stderr.txt")));
  const int64_t lines = test::count_valid_jsonl_lines(dir.file("d.jsonl"));
  EXPECT_GT(lines, 0);
  EXPECT_LE(lines, 30);
  EXPECT_EQ(last, "streamdet: warning: " + url + " was cut short: the stream ended after 30 frames");
}

// Garbage in the middle of an MPEG-TS: the frames are read past it, and the profile counts what
// the warning counts (it said "7 cut off or corrupt" while the profile's corrupt count stayed 0).
TEST(RobustnessSources, ACorruptedTransportStreamIsCountedInTheProfileAsInTheWarning) {
  test::TempDir dir;
  {
    cv::VideoWriter w(dir.file("clip.ts"), cv::CAP_FFMPEG, cv::VideoWriter::fourcc('m', 'p', '4', 'v'), 25, cv::Size(320, 192));
    ASSERT_TRUE(w.isOpened());
    for (int i = 0; i < 60; ++i) {
      cv::Mat f(192, 320, CV_8UC3, cv::Scalar(i, 2 * i, 255 - i));
      cv::circle(f, {i * 5, 96}, 20, {0, 0, 0}, -1);
      w.write(f);
    }
  }
  {
    std::fstream f(dir.file("clip.ts"), std::ios::in | std::ios::out | std::ios::binary);
    const auto size = static_cast<std::streamoff>(fs::file_size(dir.file("clip.ts")));
    f.seekp(size / 2);
    for (int i = 0; i < 4000; ++i) f.put(static_cast<char>((i * 7) & 0xff));
  }
  test::CliResult r = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", dir.file("clip.ts"), "--profile-json", dir.file("p.json")});
  EXPECT_EQ(r.code, exit_code::kDamagedSource) << r.err;
  const std::string warning = test::last_line(r.err);
  const std::string counted = " cut off or corrupt in the file";
  const size_t at = warning.find(counted);
  ASSERT_NE(at, std::string::npos) << warning;
  const size_t number = warning.rfind(", ", at) + 2;
  const int64_t damaged = std::stoll(warning.substr(number, at - number));
  EXPECT_GT(damaged, 0) << warning;
  int64_t undecodable = 0;  // ", N could not be decoded", when the decoder refused some
  if (const size_t u = warning.find(" could not be decoded"); u != std::string::npos) {
    const size_t n = warning.rfind(", ", u) + 2;
    undecodable = std::stoll(warning.substr(n, u - n));
  }
  auto profile = nlohmann::json::parse(test::read_file(dir.file("p.json")));
  EXPECT_EQ(profile["corrupt_frames"], damaged + undecodable) << warning << "\n" << profile.dump();
  EXPECT_EQ(profile["sources"][0]["corrupt_frames"], damaged + undecodable);
  EXPECT_EQ(profile["sources"][0]["damaged_frames"], damaged);
  EXPECT_EQ(profile["sources"][0]["drops"]["corrupt"], undecodable);
  // The table says it too.
  EXPECT_NE(r.err.find(std::to_string(damaged) + " frame" + (damaged == 1 ? "" : "s") + " decoded from data cut off or corrupt"),
            std::string::npos) << r.err;
}

// A server that accepts and never answers: Ctrl-C or SIGTERM while the stream is still opening is
// an interrupted run (exit 130, one line), not a source that failed (it exited 4 with FFmpeg's
// "Invalid data found" for RTSP and "Immediate exit requested" for HTTP).
TEST(RobustnessSources, AStopRequestWhileAStreamIsOpeningExits130) {
  for (const char* scheme : {"rtsp", "http"}) {
    for (int sig : {SIGINT, SIGTERM}) {
      test::TempDir dir;
      const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      socklen_t len = sizeof a;
      ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
      ASSERT_EQ(::listen(listener, 4), 0);
      ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
      const std::string url = std::string(scheme) + "://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/live";
      test::Process p = test::spawn_streamdet({"run", "-m", kTinyModel, "-s", url, "-q"}, dir.file("stderr.txt"));
      // Once streamdet has connected it is opening the stream (its signal handlers are in place).
      pollfd pending{listener, POLLIN, 0};
      ASSERT_EQ(::poll(&pending, 1, 60000), 1) << url << ": streamdet never connected";
      const int connection = ::accept(listener, nullptr, nullptr);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ::kill(p.pid, sig);
      EXPECT_EQ(test::wait_exit_code(p), exit_code::kInterrupted) << url << " " << sig << ": " << test::read_file(dir.file("stderr.txt"));
      const auto lines = test::nonempty_lines(test::read_file(dir.file("stderr.txt")));
      ASSERT_EQ(lines.size(), 1u) << test::read_file(dir.file("stderr.txt"));
      EXPECT_EQ(lines[0], "streamdet: error: interrupted while opening source " + url);
      ::close(connection);
      ::close(listener);
    }
  }
}

// A truncated PNG: our one line, without libpng's own "libpng error: Read Error" beside it, alone
// (exit 4) and in a folder beside a whole one (the frame is skipped with a warning, exit 7).
TEST(RobustnessSources, ATruncatedPngSaysSoInOneLine) {
  test::TempDir dir;
  fs::create_directory(dir.file("images"));
  cv::Mat image(120, 160, CV_8UC3);
  cv::randu(image, 0, 255);  // noise: the compressed data fills most of the file
  ASSERT_TRUE(cv::imwrite(dir.file("images/a.png"), image));
  ASSERT_TRUE(cv::imwrite(dir.file("images/b.png"), image));
  cut_to(dir.file("images/b.png"), 0.5);

  test::CliResult alone = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", dir.file("images/b.png"), "-q"});
  EXPECT_EQ(alone.code, exit_code::kSource) << alone.err;
  auto lines = test::nonempty_lines(alone.err);
  ASSERT_EQ(lines.size(), 1u) << alone.err;
  EXPECT_EQ(lines[0].rfind("streamdet: error: image " + dir.file("images/b.png") + " could not be decoded: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("cut short"), std::string::npos) << lines[0];

  test::CliResult folder = test::run_cli(dir, {"run", "-m", kTinyModel, "-s", dir.file("images"), "-q", "-d", dir.file("d.jsonl")});
  EXPECT_EQ(folder.code, exit_code::kDamagedSource) << folder.err;
  // The skipped frame's warning, then the run's: ours, and nothing else.
  for (const std::string& line : test::nonempty_lines(folder.err)) EXPECT_EQ(line.rfind("streamdet: warning: ", 0), 0u) << folder.err;
  EXPECT_EQ(test::count_valid_jsonl_lines(dir.file("d.jsonl")), 1);
}

}  // namespace
}  // namespace sd
