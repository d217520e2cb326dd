#include <gtest/gtest.h>

#include "core/error.h"

namespace sd {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return fail(ErrorCode::kUsage, "value " + std::to_string(v) + " is not positive");
  return v;
}

Status twice(int v, int& out) {
  SD_ASSIGN_OR_RETURN(int p, parse_positive(v));
  out = 2 * p;
  return ok();
}

TEST(Error, PropagatesThroughMacros) {
  int out = 0;
  ASSERT_TRUE(twice(3, out));
  EXPECT_EQ(out, 6);
  auto s = twice(-1, out);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kUsage);
  EXPECT_EQ(s.error().message, "value -1 is not positive");
}

TEST(Error, ExitCodesAreDistinctPerKind) {
  EXPECT_EQ(exit_code_for(ErrorCode::kModel), exit_code::kModel);
  EXPECT_EQ(exit_code_for(ErrorCode::kSource), exit_code::kSource);
  EXPECT_EQ(exit_code_for(ErrorCode::kOutput), exit_code::kOutput);
  EXPECT_EQ(exit_code_for(ErrorCode::kInterrupted), 130);
  EXPECT_NE(exit_code::kModel, exit_code::kSource);
}

}  // namespace
}  // namespace sd
