#include "core/error.h"

namespace sd {

int exit_code_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUsage: return exit_code::kUsage;
    case ErrorCode::kModel: return exit_code::kModel;
    case ErrorCode::kSource: return exit_code::kSource;
    case ErrorCode::kCorruptFrame: return exit_code::kSource;
    case ErrorCode::kOutput: return exit_code::kOutput;
    case ErrorCode::kUnsupported: return exit_code::kUnsupported;
    case ErrorCode::kDamagedSource: return exit_code::kDamagedSource;
    case ErrorCode::kInterrupted: return exit_code::kInterrupted;
    case ErrorCode::kInternal: return exit_code::kInternal;
  }
  return exit_code::kInternal;
}

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUsage: return "usage";
    case ErrorCode::kModel: return "model";
    case ErrorCode::kSource: return "source";
    case ErrorCode::kCorruptFrame: return "corrupt-frame";
    case ErrorCode::kOutput: return "output";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kDamagedSource: return "damaged-source";
    case ErrorCode::kInterrupted: return "interrupted";
    case ErrorCode::kInternal: return "internal";
  }
  return "internal";
}

}  // namespace sd
