// Helpers for the postprocess tests: hand-built head tensors and an allocation counter.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include <gtest/gtest.h>

#include "core/detection.h"
#include "core/tensor.h"

namespace sd::testing {

inline Tensor filled(const Shape& shape, float value = 0.f) {
  Tensor t(shape);
  std::fill_n(t.data(), t.numel(), value);
  return t;
}

// Element at a multi-dimensional index of a contiguous tensor.
inline float& at(Tensor& t, std::initializer_list<int64_t> index) {
  int64_t offset = 0, d = 0;
  for (int64_t i : index) offset = offset * t.shape()[static_cast<int>(d++)] + i;
  return t.data()[offset];
}

inline std::vector<TensorView> views(std::initializer_list<const Tensor*> tensors) {
  std::vector<TensorView> v;
  for (const Tensor* t : tensors) v.push_back(t->view());
  return v;
}

// Heap allocations (operator new) made by this process so far; counted by the replacement
// operator new in postprocessor_test.cpp. Returns -1 when counting is off (sanitizer builds).
int64_t allocation_count();

inline void expect_same(const Detections& got, const Detections& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].x1, want[i].x1) << "detection " << i;
    EXPECT_EQ(got[i].y1, want[i].y1) << "detection " << i;
    EXPECT_EQ(got[i].x2, want[i].x2) << "detection " << i;
    EXPECT_EQ(got[i].y2, want[i].y2) << "detection " << i;
    EXPECT_EQ(got[i].score, want[i].score) << "detection " << i;
    EXPECT_EQ(got[i].class_id, want[i].class_id) << "detection " << i;
  }
}

inline bool same(const Detection& a, const Detection& b) {
  return a.x1 == b.x1 && a.y1 == b.y1 && a.x2 == b.x2 && a.y2 == b.y2 && a.score == b.score && a.class_id == b.class_id;
}

}  // namespace sd::testing
