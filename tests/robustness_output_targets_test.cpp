// Outputs never destroy what is not theirs: a device or a FIFO named as an output is written into,
// never renamed over (or the output is refused); a symbolic link keeps being a link and its target
// is replaced; a run refused at start leaves an existing JSON Lines file as it was; `-` is standard
// output, and a reader that closes it ends the run with exit 5 and one line, not SIGPIPE; a video
// written at another size than its frames' says so.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "cli_util.h"
#include "core/error.h"
#include "test_util.h"

namespace sd {
namespace {

namespace fs = std::filesystem;
using test::kTinyModel;

const std::string kShortClip = "synth:w=160,h=96,frames=6";
const std::string kEndlessClip = "synth:w=160,h=96,fps=60,frames=0,live=1";

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

bool is_fifo(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

bool is_char_device(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

std::vector<std::string> run_args(const std::string& source, std::vector<std::string> more) {
  std::vector<std::string> args = {"run", "-m", kTinyModel, "-s", source, "-q"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Reads a FIFO until its writer has gone and the writer's process has ended. Opened without
// blocking, so that a FIFO that nobody opens (the old rename replaced it) never hangs the test.
class FifoReader {
 public:
  explicit FifoReader(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)) {
    thread_ = std::thread([this] { read_all(); });
  }
  ~FifoReader() {
    finish();
    if (fd_ >= 0) ::close(fd_);
  }
  bool opened() const { return fd_ >= 0; }
  // Once the writer's process has exited: what it wrote.
  std::string finish() {
    writer_done_ = true;
    if (thread_.joinable()) thread_.join();
    return text_;
  }

 private:
  void read_all() {
    char buf[65536];
    while (fd_ >= 0) {
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n > 0) {
        text_.append(buf, static_cast<size_t>(n));
        continue;
      }
      // No data (no writer, or none yet): stop once the writer's process is gone and all is read.
      if (writer_done_) {
        if (::read(fd_, buf, sizeof buf) <= 0) break;
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  int fd_;
  std::atomic<bool> writer_done_{false};
  std::string text_;
  std::thread thread_;
};

TEST(RobustnessOutputTargets, AFifoIsWrittenIntoNotReplaced) {
  struct Case {
    std::vector<std::string> option;  // the FIFO's name is appended
    std::string fifo_name;
    bool (*holds)(const std::string& text, const std::string& dir);
  };
  const std::vector<Case> cases = {
      {{"--profile-json"}, "p.json", [](const std::string& t, const std::string&) { return nlohmann::json::accept(t); }},
      {{"--trace"}, "t.json", [](const std::string& t, const std::string&) { return nlohmann::json::accept(t); }},
      {{"--report"}, "r.html", [](const std::string& t, const std::string&) { return t.find("</html>") != std::string::npos; }},
      {{"-d"}, "d.jsonl",
       [](const std::string& t, const std::string& dir) {
         write_text(dir + "/copy.jsonl", t);
         return test::count_valid_jsonl_lines(dir + "/copy.jsonl") == 6;
       }},
      {{"-o"}, "v.mkv",  // Matroska streams
       [](const std::string& t, const std::string& dir) {
         write_text(dir + "/copy.mkv", t);
         return test::count_video_frames(dir + "/copy.mkv") == 6;
       }},
  };
  for (const auto& c : cases) {
    test::TempDir dir;
    const std::string fifo = dir.file(c.fifo_name);
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
    FifoReader reader(fifo);
    ASSERT_TRUE(reader.opened());
    std::vector<std::string> more = c.option;
    more.push_back(fifo);
    test::CliResult r = test::run_cli(dir, run_args(kShortClip, more));
    const std::string text = reader.finish();
    EXPECT_EQ(r.code, 0) << c.fifo_name << ": " << r.err;
    EXPECT_TRUE(is_fifo(fifo)) << c.fifo_name << ": the FIFO was replaced";
    EXPECT_TRUE(c.holds(text, dir.path().string())) << c.fifo_name << ": the reader got " << text.size() << " bytes";
    for (const auto& name : test::list_dir(dir.path().string())) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
  }
}

// An MP4 is finished by seeking back to its start, which a FIFO cannot do: refused in one line.
TEST(RobustnessOutputTargets, AVideoThatCannotStreamIsRefusedForAFifo) {
  test::TempDir dir;
  const std::string fifo = dir.file("v.mp4");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  FifoReader reader(fifo);
  test::CliResult r = test::run_cli(dir, run_args(kShortClip, {"-o", fifo}));
  reader.finish();
  EXPECT_EQ(r.code, exit_code::kOutput) << r.err;
  ASSERT_EQ(test::nonempty_lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("cannot write video to " + fifo), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(".mkv"), std::string::npos) << r.err;
  EXPECT_TRUE(is_fifo(fifo)) << "the FIFO was replaced";
  EXPECT_EQ(test::list_dir(dir.path().string()), (std::vector<std::string>{"stderr.txt", "v.mp4"}));
}

// A character device: /dev/null's twin made in the test's folder where the test may (as root, the
// old rename would have replaced /dev/null itself), else /dev/null (which then cannot be renamed over).
TEST(RobustnessOutputTargets, ACharacterDeviceIsWrittenIntoNotReplaced) {
  test::TempDir dir;
  std::string device = dir.file("null");
  if (::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    if (::geteuid() == 0) GTEST_SKIP() << "root, but cannot make a device node here: not risking /dev/null";
    device = "/dev/null";
  }
  for (const std::string option : {"--profile-json", "--trace", "--report", "-d"}) {
    test::CliResult r = test::run_cli(dir, run_args(kShortClip, {option, device}));
    EXPECT_EQ(r.code, 0) << option << ": " << r.err;
    EXPECT_TRUE(is_char_device(device)) << option << ": " << device << " was replaced";
  }
  for (const auto& name : test::list_dir(dir.path().string())) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
}

// As cp does: the link is followed, its target replaced, and the link stays a link.
TEST(RobustnessOutputTargets, ASymlinkStaysALinkAndItsTargetIsReplaced) {
  test::TempDir dir;
  fs::create_directories(dir.file("real"));
  for (const std::string name : {"p.json", "v.mp4", "d.jsonl"}) {
    write_text(dir.file("real/" + name), "an earlier file");
    fs::create_symlink(dir.file("real/" + name), dir.file(name));
  }
  test::CliResult r = test::run_cli(dir, run_args(kShortClip, {"--profile-json", dir.file("p.json"), "-o", dir.file("v.mp4"), "-d",
                                                               dir.file("d.jsonl")}));
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string name : {"p.json", "v.mp4", "d.jsonl"}) EXPECT_TRUE(fs::is_symlink(dir.file(name))) << name;
  EXPECT_TRUE(nlohmann::json::accept(test::read_file(dir.file("real/p.json"))));
  EXPECT_EQ(test::count_video_frames(dir.file("real/v.mp4")), 6);
  EXPECT_EQ(test::count_valid_jsonl_lines(dir.file("real/d.jsonl")), 6);
  EXPECT_EQ(test::list_dir(dir.file("real")), (std::vector<std::string>{"d.jsonl", "p.json", "v.mp4"}));
}

// A socket listening on loopback, closed with the test: the port a --serve must not get.
class TakenPort {
 public:
  TakenPort() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd_, 4) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
      port_ = ntohs(addr.sin_port);
  }
  ~TakenPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

TEST(RobustnessOutputTargets, ARunRefusedAtStartLeavesAnExistingDetectionsFileAsItWas) {
  test::TempDir dir;
  const std::string earlier = "{\"an\": \"earlier run's line\"}\n";
  TakenPort taken;
  ASSERT_GT(taken.port(), 0);
  const int closed_port = test::free_loopback_port();  // nobody listens there
  ASSERT_GT(closed_port, 0);
  const std::vector<std::vector<std::string>> refusals = {
      {"--serve", "127.0.0.1:" + std::to_string(taken.port())},
      {"--sink", "redis://127.0.0.1:" + std::to_string(closed_port) + "/dets"},
  };
  for (const auto& refusal : refusals) {
    write_text(dir.file("d.jsonl"), earlier);
    write_text(dir.file("p.json"), "an earlier profile");
    std::vector<std::string> more = {"-d", dir.file("d.jsonl"), "--profile-json", dir.file("p.json"), "-o", dir.file("v.mp4")};
    more.insert(more.end(), refusal.begin(), refusal.end());
    test::CliResult r = test::run_cli(dir, run_args(kShortClip, more));
    EXPECT_EQ(r.code, exit_code::kOutput) << refusal[0] << ": " << r.err;
    EXPECT_EQ(test::nonempty_lines(r.err).size(), 1u) << r.err;
    EXPECT_EQ(test::read_file(dir.file("d.jsonl")), earlier) << refusal[0] << ": the detections file was touched";
    EXPECT_EQ(test::read_file(dir.file("p.json")), "an earlier profile") << refusal[0];
    EXPECT_EQ(test::list_dir(dir.path().string()), (std::vector<std::string>{"d.jsonl", "p.json", "stderr.txt"})) << refusal[0];
  }
}

TEST(RobustnessOutputTargets, DashIsStandardOutputForDetectionsAndAMatroskaVideo) {
  test::TempDir dir;
  test::SpawnOptions to_file;
  to_file.stdout_path = dir.file("stdout.jsonl");
  test::CliResult r = test::run_cli(dir, run_args(kShortClip, {"-d", "-"}), to_file);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(test::count_valid_jsonl_lines(dir.file("stdout.jsonl")), 6);

  to_file.stdout_path = dir.file("stdout.mkv");
  r = test::run_cli(dir, run_args(kShortClip, {"-o", "-", "-d", dir.file("d.jsonl")}), to_file);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(test::count_video_frames(dir.file("stdout.mkv")), 6);
  EXPECT_EQ(test::list_dir(dir.path().string()), (std::vector<std::string>{"d.jsonl", "stderr.txt", "stdout.jsonl", "stdout.mkv"}))
      << "a file named '-' was written";

  // One standard output cannot take two outputs, nor the videos of two sources.
  r = test::run_cli(dir, run_args(kShortClip, {"-o", "-", "-d", "-"}));
  EXPECT_EQ(r.code, exit_code::kOutput) << r.err;
  EXPECT_NE(test::last_line(r.err).find("are the same file"), std::string::npos) << r.err;
  r = test::run_cli(dir, {"run", "-m", kTinyModel, "-q", "-s", kShortClip, "-s", kShortClip, "-o", "-"});
  EXPECT_EQ(r.code, exit_code::kOutput) << r.err;
  EXPECT_NE(test::last_line(r.err).find("2 sources cannot share it"), std::string::npos) << r.err;
}

// Spawns streamdet with its standard output into a pipe, reads up to the first newline byte (as
// `head -1` does) and closes the pipe. Returns what was read; `p` is the process, still running.
std::string read_first_line_then_close(const std::vector<std::string>& args, const std::string& stderr_path, test::Process& p) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return "";
  test::SpawnOptions to_pipe;
  to_pipe.stdout_fd = fds[1];
  p = test::spawn_streamdet(args, stderr_path, to_pipe);
  ::close(fds[1]);
  // A hang guard (not a measurement): a run that writes nothing to its standard output is ended.
  std::string first;
  char c = 0;
  pollfd readable{fds[0], POLLIN, 0};
  while (::poll(&readable, 1, 60000) == 1 && ::read(fds[0], &c, 1) == 1 && c != '\n') first += c;
  ::close(fds[0]);
  if (c != '\n') ::kill(p.pid, SIGKILL);
  return first;
}

// `run -d - | head -1`: the reader goes away after one line. The run ends with exit 5 and one line
// (not SIGPIPE's 141), the other outputs are finished and no temporary file is left. The same for
// a video on standard output (`-o - | player` where the player quits).
TEST(RobustnessOutputTargets, AClosedPipeOnStandardOutputEndsTheRunWithOneLine) {
  {
    test::TempDir dir;
    test::Process p;
    const std::string first = read_first_line_then_close(
        run_args(kEndlessClip, {"-d", "-", "-o", dir.file("v.mp4"), "--trace", dir.file("t.json")}), dir.file("stderr.txt"), p);
    const int code = test::wait_exit_code(p);
    const std::string err = test::read_file(dir.file("stderr.txt"));
    EXPECT_TRUE(nlohmann::json::accept(first)) << first;
    EXPECT_EQ(code, exit_code::kOutput) << err;
    auto lines = test::nonempty_lines(err);
    ASSERT_EQ(lines.size(), 1u) << err;
    EXPECT_NE(lines[0].find("writing detections to standard output failed: its reader closed the pipe"), std::string::npos)
        << lines[0];
    EXPECT_EQ(test::list_dir(dir.path().string()), (std::vector<std::string>{"stderr.txt", "t.json", "v.mp4"}));
    EXPECT_GE(test::count_video_frames(dir.file("v.mp4")), 1);
    EXPECT_TRUE(nlohmann::json::accept(test::read_file(dir.file("t.json"))));
  }
  {
    test::TempDir dir;
    test::Process p;
    read_first_line_then_close(run_args(kEndlessClip, {"-o", "-", "-d", dir.file("d.jsonl")}), dir.file("stderr.txt"), p);
    const int code = test::wait_exit_code(p);
    const std::string err = test::read_file(dir.file("stderr.txt"));
    EXPECT_EQ(code, exit_code::kOutput) << err;
    auto lines = test::nonempty_lines(err);
    ASSERT_EQ(lines.size(), 1u) << err;
    EXPECT_NE(lines[0].find("video standard output failed: its reader closed the pipe"), std::string::npos) << lines[0];
    EXPECT_EQ(test::list_dir(dir.path().string()), (std::vector<std::string>{"d.jsonl", "stderr.txt"}));
    EXPECT_GE(test::count_valid_jsonl_lines(dir.file("d.jsonl")), 1);
  }
}

// Encoders need even sizes: a 1x1 picture's video is written at 2x2, a 5x3 one at 4x2, and a
// warning says so, naming the video.
TEST(RobustnessOutputTargets, AnOddSizedVideoIsWrittenAtAnEvenSizeWithAWarning) {
  struct Case {
    cv::Size size;
    std::string written_at;
  };
  for (const Case& c : {Case{{1, 1}, "2x2"}, Case{{5, 3}, "4x2"}}) {
    test::TempDir dir;
    cv::imwrite(dir.file("tiny.png"), cv::Mat(c.size, CV_8UC3, cv::Scalar(40, 80, 120)));
    test::CliResult r = test::run_cli(dir, run_args(dir.file("tiny.png"), {"-o", dir.file("v.mp4")}));
    ASSERT_EQ(r.code, 0) << r.err;
    auto lines = test::nonempty_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_NE(lines[0].find("streamdet: warning: video " + dir.file("v.mp4")), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find("written at " + c.written_at), std::string::npos) << lines[0];
    EXPECT_EQ(test::count_video_frames(dir.file("v.mp4")), 1);
  }
}

}  // namespace
}  // namespace sd
