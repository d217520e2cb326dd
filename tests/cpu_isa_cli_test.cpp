// What a user sees of the ISA dispatch: `--version` names the instruction set of our kernels and
// oneDNN's, `bench --json` records it, `--cpu-isa` caps both and refuses an unknown name.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "core/cpu_isa.h"
#include "test_util.h"

namespace sd {
namespace {
using namespace sd::test;

// Standard output of the command (stderr dropped) and its exit status.
std::pair<std::string, int> stdout_of(const std::string& args) {
  std::string out;
  FILE* p = popen((std::string(STREAMDET_BINARY) + " " + args + " 2>/dev/null").c_str(), "r");
  if (!p) return {out, -1};
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

TEST(CpuIsaCli, VersionNamesTheInstructionSetOfOurKernelsAndOneDnns) {
  const auto [out, code] = stdout_of("--version");
  ASSERT_EQ(code, 0);
  EXPECT_NE(out.find(std::string("cpu isa: kernels ") + cpu::isa_name(cpu::detected_isa()) + ", oneDNN "), std::string::npos) << out;
}

TEST(CpuIsaCli, BenchRecordsTheCappedInstructionSet) {
  const auto [out, code] = stdout_of(std::string("bench -m ") + kTinyModel + " -n 2 --threads 1 --cpu-isa avx2 --json");
  ASSERT_EQ(code, 0) << out;
  const auto j = nlohmann::json::parse(out.substr(out.find('{')));
  const cpu::Isa want = cpu::detected_isa() < cpu::Isa::kAvx2 ? cpu::detected_isa() : cpu::Isa::kAvx2;
  EXPECT_EQ(j.at("cpu_isa").at("kernels"), cpu::isa_name(want));
  if (cpu::detected_isa() >= cpu::Isa::kAvx2) EXPECT_EQ(j.at("cpu_isa").at("onednn"), "avx2");
}

TEST(CpuIsaCli, AnUnknownInstructionSetIsAUsageError) {
  TempDir dir;
  const CliResult r = run_cli(dir, {"bench", "-m", kTinyModel, "--cpu-isa", "avx3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(last_line(r.err).find("--cpu-isa"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sd
