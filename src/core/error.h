// Errors as values on the runtime path: every fallible call returns Result<T> (or Status),
// carrying an ErrorCode (which decides the process exit code) and a one-line message that
// names the thing (file, node, frame) and the problem.
#pragma once

#include <string>
#include <utility>

#include <tl/expected.hpp>

namespace sd {

enum class ErrorCode {
  kInternal,         // a bug or an unexpected library failure
  kUsage,            // bad command-line arguments or option values
  kModel,            // missing, unreadable, unloadable or unsupported model; unknown layout
  kSource,           // missing or unreadable source, broken stream
  kOutput,           // unwritable output path, failed write
  kCorruptFrame,     // one frame could not be decoded (the pipeline skips and counts it)
  kInterrupted,      // Ctrl-C / SIGTERM
  kUnsupported,      // a valid request this build cannot serve (e.g. an op, a device)
  kDamagedSource,    // the run finished, but a source was damaged or cut short (frames lost to the
                     // decoder, a file shorter than it says): what could be decoded was processed
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

template <class T>
using Result = tl::expected<T, Error>;
using Status = tl::expected<void, Error>;

inline tl::unexpected<Error> fail(ErrorCode code, std::string message) {
  return tl::unexpected<Error>(Error{code, std::move(message)});
}

inline Status ok() { return {}; }

// Prefixes an error's message with context ("loading model x.onnx: ...").
inline Error with_context(Error e, const std::string& context) {
  e.message = context + ": " + e.message;
  return e;
}

// Process exit codes, documented in the README ("Exit codes").
namespace exit_code {
inline constexpr int kOk = 0;
inline constexpr int kInternal = 1;
inline constexpr int kUsage = 2;
inline constexpr int kModel = 3;
inline constexpr int kSource = 4;
inline constexpr int kOutput = 5;
inline constexpr int kUnsupported = 6;
inline constexpr int kDamagedSource = 7;
inline constexpr int kInterrupted = 130;
}  // namespace exit_code

int exit_code_for(ErrorCode code);
const char* error_code_name(ErrorCode code);

}  // namespace sd

// Propagates an error from an expression returning Status/Result<T>.
#define SD_TRY(expr)                                        \
  do {                                                      \
    auto sd_try_status_ = (expr);                           \
    if (!sd_try_status_) return tl::unexpected(std::move(sd_try_status_.error())); \
  } while (0)

#define SD_CONCAT_INNER_(a, b) a##b
#define SD_CONCAT_(a, b) SD_CONCAT_INNER_(a, b)
// Binds the value of a Result<T> expression to `lhs`, or returns its error.
#define SD_ASSIGN_OR_RETURN(lhs, expr) SD_ASSIGN_OR_RETURN_IMPL_(SD_CONCAT_(sd_res_, __LINE__), lhs, expr)
#define SD_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)           \
  auto tmp = (expr);                                        \
  if (!tmp) return tl::unexpected(std::move(tmp.error()));  \
  lhs = std::move(*tmp)
