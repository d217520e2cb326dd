// The tests' main: GoogleTest's, plus --cpu-isa=NAME (sse4.2, avx2, avx512, avx512_vnni), which caps
// our CPU kernels' instruction set for the whole run (sd::cpu::cap_isa) as the streamdet option of
// the same name does: ctest runs the conformance suites a second time with AVX2 (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstdio>
#include <string_view>

#include "core/cpu_isa.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.rfind("--cpu-isa=", 0) != 0) continue;
    const auto isa = sd::cpu::parse_isa(arg.substr(10));
    if (!isa) {
      std::fprintf(stderr, "%s: unknown instruction set (sse4.2, avx2, avx512, avx512_vnni)\n", argv[i]);
      return 2;
    }
    if (!sd::cpu::cap_isa(*isa)) {
      std::fprintf(stderr, "%s: oneDNN refused the cap\n", argv[i]);
      return 2;
    }
    std::printf("CPU kernels capped at %s: %s\n", argv[i] + 10, sd::cpu::isa_summary().c_str());
  }
  return RUN_ALL_TESTS();
}
