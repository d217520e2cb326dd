// Dense float32 tensors exchanged between preprocess, engines and decoders.
// Shapes are fixed-capacity (no heap allocation per frame); storage is 64-byte aligned.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

namespace sd {

struct Shape {
  static constexpr int kMaxRank = 8;
  std::array<int64_t, kMaxRank> dims{};
  int rank = 0;

  Shape() = default;
  Shape(std::initializer_list<int64_t> d);
  template <class It>
  static Shape from(It begin, It end) {
    Shape s;
    for (auto it = begin; it != end && s.rank < kMaxRank; ++it) s.dims[static_cast<size_t>(s.rank++)] = *it;
    return s;
  }

  int64_t operator[](int i) const { return dims[static_cast<size_t>(i)]; }
  int64_t& operator[](int i) { return dims[static_cast<size_t>(i)]; }
  // Product of dims; a negative (dynamic) dim makes it -1.
  int64_t numel() const;  // -1 with a dynamic dim; saturates at INT64_MAX (0 if a dim is 0)
  bool is_static() const;
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "[1, 84, 8400]", dynamic dims as "?"
};

// Non-owning view of a float tensor.
struct TensorView {
  const float* data = nullptr;
  Shape shape;
  int64_t numel() const { return shape.numel(); }
};

// A named tensor as a model declares it.
struct TensorInfo {
  std::string name;
  Shape shape;  // -1 for a dynamic dim
};

// Owning float tensor; resize() keeps the buffer when capacity suffices (steady state: no malloc).
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(const Shape& shape) { resize(shape); }
  void resize(const Shape& shape);
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  TensorView view() const { return TensorView{data_.get(), shape_}; }

 private:
  struct AlignedFree {
    void operator()(float* p) const;
  };
  std::unique_ptr<float[], AlignedFree> data_;
  int64_t capacity_ = 0;
  Shape shape_;
};

}  // namespace sd
