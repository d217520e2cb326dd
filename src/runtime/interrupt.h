// Ctrl-C / SIGTERM / SIGHUP handling: the first signal asks the pipeline to stop and finalize its
// outputs; a second one exits at once (130), removing the outputs not yet complete
// (core/unfinished_files.h). SIGPIPE is ignored: a closed pipe is a write that fails (EPIPE).
#pragma once

namespace sd {

void install_interrupt_handler();
bool interrupt_requested();
void request_interrupt();  // what the handler does; also used by tests
void clear_interrupt();

}  // namespace sd
