# Included by CTest (tests/CMakeLists.txt) once the test programs' tests are listed: the longest of
# them, with what they took on a 2-core machine (seconds), so that CTest starts them first. It goes
# by the times of the last run, which a fresh clone does not have; without these one of them may
# start last and run alone at the end of the suite. Only the order depends on them.
set_tests_properties(RtspReconnectTest.SurvivesTheCameraGoingAwayForTenSeconds PROPERTIES COST 14)
set_tests_properties(RobustnessOptions.NanAndOutOfRangeValuesAreRefusedWithAHumanRange PROPERTIES COST 5)
set_tests_properties(RtspReconnectTest.AStopRequestDuringTheOutageEndsTheRunAtOnce PROPERTIES COST 4)
set_tests_properties(RedisPipeline.ASigtermMidRunFinishesAndAcknowledgesEveryEntryTheWorkerRead PROPERTIES COST 4)
set_tests_properties(RobustnessOutputs.AWriterThatCannotWorkFailsBeforeTheFirstFrameAndLeavesNoFile PROPERTIES COST 4)
set_tests_properties(RobustnessOutputTargets.AFifoIsWrittenIntoNotReplaced PROPERTIES COST 3)
set_tests_properties(Cli.ReadmeBatchAndSweepExamplesRunWithTheDynamicModel PROPERTIES COST 3)
set_tests_properties(Cli.EachBadInputGetsItsExitCodeAndAOneLineMessage PROPERTIES COST 3)
