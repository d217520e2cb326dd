// The tests' main: GoogleTest's, plus --cpu-isa=NAME (sse4.2, avx2, avx2_vnni, avx512, avx512_vnni, avx512_bf16), which caps
// our CPU kernels' instruction set for the whole run (sd::cpu::cap_isa) as the streamdet option of
// the same name does: ctest runs the conformance suites a second time with AVX2 (tests/CMakeLists.txt);
// and --exit-77-when-all-skipped: exit 77 when tests ran and every one of them skipped (none passed,
// none failed), which CTest reports as a skipped test (tests/gtest_suites.cmake: one CTest test per
// suite, so that a suite of GPU tests shows as skipped where there is no GPU, not as passed).
#include <gtest/gtest.h>

#include <cstdio>
#include <string_view>

#include "core/cpu_isa.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  bool exit_77_when_all_skipped = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--exit-77-when-all-skipped") exit_77_when_all_skipped = true;
    if (arg.rfind("--cpu-isa=", 0) != 0) continue;
    const auto isa = sd::cpu::parse_isa(arg.substr(10));
    if (!isa) {
      std::fprintf(stderr, "%s: unknown instruction set (sse4.2, avx2, avx2_vnni, avx512, avx512_vnni, avx512_bf16)\n", argv[i]);
      return 2;
    }
    if (!sd::cpu::cap_isa(*isa)) {
      std::fprintf(stderr, "%s: oneDNN refused the cap\n", argv[i]);
      return 2;
    }
    std::printf("CPU kernels capped at %s: %s\n", argv[i] + 10, sd::cpu::isa_summary().c_str());
  }
  const int failed = RUN_ALL_TESTS();
  const auto& run = *::testing::UnitTest::GetInstance();
  if (failed == 0 && exit_77_when_all_skipped && run.successful_test_count() == 0 && run.skipped_test_count() > 0) return 77;
  return failed;
}
