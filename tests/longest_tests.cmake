# Included by CTest (tests/CMakeLists.txt) once the test programs' tests are listed (one per
# GoogleTest suite: tests/gtest_suites.cmake): the longest of them, with what they took in one run
# of the suite (`ctest -j2`, seconds, on a 2-core machine shared with other builds: load average 7
# to 9), so that CTest starts them first. It goes by the times of the last run, which a fresh clone
# does not have; without these one of them may start last and run alone at the end of the suite.
# Only the order depends on them. The tests added by tests/CMakeLists.txt itself (Python.ModuleTests
# 139 s, CpuIsa.ConformanceOnTheAvx2Path 63 s, GpuCheck.ScriptRunsOnTheCpu 43 s in the same run) have
# their COST set there: CTest reads this file before their add_test.
foreach(entry
    "QuantizeCli 323" "Cli 117" "RedisPipeline 87"
    "RobustnessOutputTargets 73" "RobustnessOutputs 72"
    "RobustnessOptions 57" "Ops/BackendConformance 42"
    "ValCli 30" "RobustnessSources 24" "LinesZonesCli 18" "RtspReconnectTest 17")
  string(REPLACE " " ";" entry "${entry}")
  list(GET entry 0 name)
  list(GET entry 1 seconds)
  set_tests_properties("${name}" PROPERTIES COST ${seconds})
endforeach()
