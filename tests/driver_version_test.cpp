// The GPU check's driver version (tools/driver_version.h) from /proc's line, as the open and the
// proprietary kernel modules write it.
#include <gtest/gtest.h>

#include "driver_version.h"

namespace sd::gpu_check {
namespace {

TEST(GpuCheckDriverVersion, TheOpenKernelModulesLineGivesItsVersionNotAWord) {
  // What the first GPU run's H100 had (check.json recorded "for" then).
  EXPECT_EQ(driver_version_from("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
                                "(dvs-builder@U16-I2-C04-35-2)  Thu Oct 30 00:00:00 UTC 2025"),
            "580.159.04");
}

TEST(GpuCheckDriverVersion, TheProprietaryModulesLineToo) {
  EXPECT_EQ(driver_version_from("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024"), "550.54.15");
}

TEST(GpuCheckDriverVersion, ALineWithNoVersionIsGivenWhole) {
  EXPECT_EQ(driver_version_from("something else"), "something else");
  EXPECT_EQ(driver_version_from(""), "");
}

}  // namespace
}  // namespace sd::gpu_check
