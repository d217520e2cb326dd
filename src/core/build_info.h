// What a benchmark row records about where it ran: the commit it was built from and the machine.
#pragma once

#include <string>

namespace sd {

const char* build_commit();      // generated at build time (cmake/write_version.cmake)
std::string cpu_model_name();    // /proc/cpuinfo "model name"
int cpu_count();                 // logical CPUs this process may use
std::string machine_summary();   // "AMD EPYC, 2 CPUs"

}  // namespace sd
