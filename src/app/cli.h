// The command line: `streamdet run|bench|synth ...`. Returns the process exit code.
#pragma once

namespace sd {
int cli_main(int argc, char** argv);
}
