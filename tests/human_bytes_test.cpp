#include <gtest/gtest.h>

#include "core/human_bytes.h"

namespace sd {
namespace {

TEST(HumanBytes, ThreeSignificantDigitsInSiUnits) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(999), "999 B");
  EXPECT_EQ(human_bytes(1200), "1.2 kB");
  EXPECT_EQ(human_bytes(1280000000), "1.28 GB");
  EXPECT_EQ(human_bytes(97000000000), "97 GB");
  EXPECT_EQ(human_bytes(999999), "1 MB");
  EXPECT_EQ(human_bytes(UINT64_MAX), "18.4 EB");
}

}  // namespace
}  // namespace sd
