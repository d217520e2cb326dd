// What became of a frame that a source delivered: the pipeline tells the source exactly once per
// frame (Source::settle), so that a source with delivery guarantees (a Redis consumer group)
// acknowledges an entry only when it is done with, and leaves it pending when it is not.
#pragma once

namespace sd {

enum class FrameOutcome {
  kWritten,   // every sink wrote its results
  kPolicy,    // dropped by a queue's policy (latest, drop-oldest): a fresher frame took its place
  kEvery,     // skipped by --every
  kMaxAge,    // older than --max-age when a worker took it
  kAborted,   // the run stopped (an error elsewhere, Ctrl-C) before the frame was done
  kFailed,    // a sink failed to write it
};

inline constexpr int kFrameOutcomeCount = 6;

const char* frame_outcome_name(FrameOutcome outcome);

// Done with on purpose: written, or dropped by a rule the user chose. Aborted and failed frames
// were not done: a source that can deliver them again (Redis) should.
inline bool frame_outcome_is_final(FrameOutcome outcome) {
  return outcome != FrameOutcome::kAborted && outcome != FrameOutcome::kFailed;
}

}  // namespace sd
