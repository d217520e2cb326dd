# The CPU conformance suites once more on the AVX2 path, where this machine has more: oneDNN capped
# by its own ONEDNN_MAX_CPU_ISA (DNNL_MAX_CPU_ISA: the older name, also read by oneDNN 2.x), our
# kernels by the tests' --cpu-isa option (test_main.cpp; the program reads no environment
# variable). On a processor without AVX2 the cap is no cap: the suites run the baseline again.
add_test(NAME CpuIsa.ConformanceOnTheAvx2Path
         COMMAND streamdet_tests --cpu-isa=avx2
                 "--gtest_filter=Onnx/OnnxNodeTest.*:Ops/BackendConformance.*:NativeEngine.StemConv*:NativeEngine.*Silu*:NativeEngine.*Winograd*:Winograd*:CpuIsa*:QdqFusion.*:Int8Dataflow.*:NativeEngineConcatInPlace.*:NativeEngine.LayoutsAndPasses*")
set_tests_properties(CpuIsa.ConformanceOnTheAvx2Path PROPERTIES
                     ENVIRONMENT "ONEDNN_MAX_CPU_ISA=AVX2;DNNL_MAX_CPU_ISA=AVX2"
                     TIMEOUT 900 COST 63)  # COST: tests/longest_tests.cmake
