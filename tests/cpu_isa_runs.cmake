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

# The int8 suites on the AVX-VNNI path (Intel's client processors since Alder Lake: AVX2 with
# 256-bit vpdpbusd), where this machine has AVX-VNNI or AVX-512 VNNI: oneDNN's jit_uni_int8:avx2_vnni
# kernels, exact with full-range weights and int8 sources, timed against our float32 and int16 ones
# (whose micro-kernel takes AVX-VNNI's vpdpwssd there; capped at avx2 above, its vpmaddwd form).
# Without VNNI the cap leaves oneDNN on AVX2: the suites' AVX2 run again.
add_test(NAME CpuIsa.Int8OnTheAvxVnniPath
         COMMAND streamdet_tests --cpu-isa=avx2_vnni "--gtest_filter=QdqFusion.*:Int8Dataflow.*:CpuIsa*:WinogradInt16.*:PointwiseInt16.*")
set_tests_properties(CpuIsa.Int8OnTheAvxVnniPath PROPERTIES
                     ENVIRONMENT "ONEDNN_MAX_CPU_ISA=AVX2_VNNI;DNNL_MAX_CPU_ISA=AVX2_VNNI"
                     TIMEOUT 600 COST 5)
