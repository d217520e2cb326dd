// NVTX ranges in the "streamdet" domain, so an nsys timeline shows the same stages as our own
// profile. Built on the NVTX3 header of the CUDA toolkit when CMake finds it (STREAMDET_HAVE_NVTX);
// without it, or with no profiler attached, a range costs next to nothing.
#pragma once

#ifdef STREAMDET_HAVE_NVTX
#include <sys/syscall.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>
#endif

namespace sd {

class NvtxRange {
 public:
#ifdef STREAMDET_HAVE_NVTX
  explicit NvtxRange(const char* name) {
    nvtxEventAttributes_t attr{};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = name;
    nvtxDomainRangePushEx(domain(), &attr);
  }
  ~NvtxRange() { nvtxDomainRangePop(domain()); }

 private:
  static nvtxDomainHandle_t domain() {
    static nvtxDomainHandle_t d = nvtxDomainCreateA("streamdet");
    return d;
  }

 public:
#else
  explicit NvtxRange(const char*) {}
#endif
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// Loads the NVTX injection (or the no-op table) now, on the calling thread. NVTX otherwise does
// it lazily on the first call from whichever thread comes first, and the other threads then read
// its function table without synchronisation (ThreadSanitizer reports it). Call before starting
// the pipeline's threads.
inline void nvtx_initialize() {
#ifdef STREAMDET_HAVE_NVTX
  nvtxInitialize(nullptr);
  NvtxRange warm("init");  // also creates the "streamdet" domain before any thread needs it
#endif
}

// Names the calling thread in nsys ("reader 0", "worker 1", ...).
inline void nvtx_name_thread(const char* name) {
#ifdef STREAMDET_HAVE_NVTX
  nvtxNameOsThreadA(static_cast<uint32_t>(::syscall(SYS_gettid)), name);
#else
  (void)name;
#endif
}

}  // namespace sd
