#include "engine/native/backend.h"

namespace sd::native {

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_;
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.owner_ = nullptr;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::reset() noexcept {
  if (data_ && owner_) owner_->release(data_, bytes_);
  owner_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

Status Backend::copy_convert(void*, DType dst_type, Device, const void*, DType src_type, Device, size_t, void*, BackendStream*) const {
  return fail(ErrorCode::kUnsupported, name() + " cannot convert " + dtype_name(src_type) + " to " + dtype_name(dst_type) + " in a copy");
}

Result<DeviceBuffer> Backend::allocate_host(size_t) const {
  return fail(ErrorCode::kUnsupported, name() + " has no page-locked host memory");
}

Status Backend::begin_capture(BackendStream&) const { return fail(ErrorCode::kUnsupported, name() + " cannot record a run"); }

Result<std::unique_ptr<BackendGraph>> Backend::end_capture(BackendStream&) const {
  return fail(ErrorCode::kUnsupported, name() + " cannot record a run");
}

Status Backend::replay(BackendGraph&, BackendStream&) const { return fail(ErrorCode::kUnsupported, name() + " cannot replay a run"); }

const char* layout_name(Layout layout) { return layout == Layout::kNhwc ? "NHWC" : "NCHW"; }

}  // namespace sd::native
