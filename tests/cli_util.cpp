#include "cli_util.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sources/ffmpeg_video_source.h"

extern char** environ;

namespace sd::test {

Process spawn_streamdet(const std::vector<std::string>& args, const std::string& stderr_path, const SpawnOptions& options) {
  std::vector<std::string> argv_s = {STREAMDET_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  Process p;
  p.stderr_path = stderr_path;
  // fork + exec rather than posix_spawn: the child needs its own rlimit and signal disposition.
  pid_t pid = fork();
  if (pid == 0) {
    int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int out = options.stdout_fd >= 0 ? dup(options.stdout_fd) : open(options.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err < 0 || out < 0) _exit(127);
    dup2(err, 2);
    dup2(out, 1);
    close(err);
    close(out);
    if (options.file_size_limit) {
      signal(SIGXFSZ, SIG_IGN);
      rlimit lim{*options.file_size_limit, *options.file_size_limit};
      setrlimit(RLIMIT_FSIZE, &lim);
    }
    if (options.open_files_soft_limit) {
      rlimit lim{};
      getrlimit(RLIMIT_NOFILE, &lim);
      lim.rlim_cur = *options.open_files_soft_limit;
      setrlimit(RLIMIT_NOFILE, &lim);
    }
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    execve(argv[0], argv.data(), environ);
    _exit(127);
  }
  EXPECT_GT(pid, 0) << "fork failed";
  p.pid = pid;
  return p;
}

int wait_exit_code(const Process& p) {
  int status = 0;
  waitpid(p.pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

CliResult run_cli(const TempDir& dir, const std::vector<std::string>& args, const SpawnOptions& options) {
  Process p = spawn_streamdet(args, dir.file("stderr.txt"), options);
  CliResult r;
  r.code = wait_exit_code(p);
  r.err = read_file(p.stderr_path);
  return r;
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

std::vector<std::string> nonempty_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) lines.push_back(line);
  return lines;
}

int64_t count_video_frames(const std::string& path) {
  SourceOptions so;
  auto src = FfmpegVideoSource::open(path, so);
  if (!src) return -1;
  Frame f;
  int64_t n = 0;
  while (true) {
    auto got = (*src)->read(f);
    if (!got || !*got) break;
    ++n;
  }
  return n;
}

int64_t count_valid_jsonl_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return -1;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!text.empty() && text.back() != '\n') return -1;  // a cut last line
  int64_t n = 0;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!nlohmann::json::accept(line)) return -1;
    ++n;
  }
  return n;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace sd::test
