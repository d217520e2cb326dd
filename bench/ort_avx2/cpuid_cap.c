// A stand-in for an AVX2-only processor, for ONNX Runtime: preloaded into a process whose copy of
// libonnxruntime has each `cpuid` instruction replaced by `ud2` (bench/ort_avx2/ort-avx2.sh), it
// answers those with the processor's own CPUID, less every AVX-512, AMX and AVX-VNNI feature bit
// (AVX-VNNI kept on request, below).
// ONNX Runtime (MLAS and its CPUIDInfo) then picks the kernels it picks on a Zen 2/3 class
// processor: AVX2 and FMA3, no VNNI. streamdet caps itself with `--cpu-isa avx2`; ONNX Runtime has
// no such switch, and this machine's hypervisor offers no CPUID faulting (`cpuid_fault`), hence
// the patched copy. Each `cpuid` costs a signal (a few microseconds); ONNX Runtime asks at load.
#define _GNU_SOURCE
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

// CPUID.(EAX=7, ECX=0).EBX: AVX512F, DQ, IFMA, PF, ER, CD, BW, VL.
static const uint32_t kLeaf7Ebx = (1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 30) | (1u << 31);
// ECX: AVX512_VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ.
static const uint32_t kLeaf7Ecx = (1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14);
// EDX: AVX512_4VNNIW, 4FMAPS, VP2INTERSECT, AMX-BF16, AVX512_FP16, AMX-TILE, AMX-INT8.
static const uint32_t kLeaf7Edx = (1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25);
// CPUID.(EAX=7, ECX=1).EAX: AVX-VNNI, AVX512_BF16, AMX-FP16, AVX-IFMA.
static const uint32_t kLeaf7Sub1Eax = (1u << 4) | (1u << 5) | (1u << 21) | (1u << 23);
static const uint32_t kAvxVnni = 1u << 4;
// The bits taken out of that leaf: all of the above, or all but AVX-VNNI where the environment has
// CPUID_CAP_AVX_VNNI=1 (the stand-in for an AVX-VNNI processor, Alder Lake's kind: ort-avx2.sh's
// ORT_AVX_VNNI=1).
static uint32_t leaf7_sub1_cleared = kLeaf7Sub1Eax;

static unsigned long answered;

static void on_sigill(int sig, siginfo_t* info, void* uc_void) {
  ucontext_t* uc = (ucontext_t*)uc_void;
  greg_t* r = uc->uc_mcontext.gregs;
  const unsigned char* ip = (const unsigned char*)r[REG_RIP];
  if (ip[0] != 0x0f || ip[1] != 0x0b) {  // a real illegal instruction: die as without us
    signal(sig, SIG_DFL);
    (void)info;
    return;
  }
  const uint32_t leaf = (uint32_t)r[REG_RAX], sub = (uint32_t)r[REG_RCX];
  uint32_t a, b, c, d;
  __cpuid_count(leaf, sub, a, b, c, d);
  if (leaf == 7 && sub == 0) {
    b &= ~kLeaf7Ebx;
    c &= ~kLeaf7Ecx;
    d &= ~kLeaf7Edx;
  } else if (leaf == 7 && sub == 1) {
    a &= ~leaf7_sub1_cleared;
  }
  r[REG_RAX] = a;
  r[REG_RBX] = b;
  r[REG_RCX] = c;
  r[REG_RDX] = d;
  r[REG_RIP] += 2;
  ++answered;
}

static void report(void) {
  if (answered > 0) fprintf(stderr, "cpuid_cap: answered %lu cpuid instructions without AVX-512\n", answered);
}

__attribute__((constructor)) static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigill;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGILL, &sa, NULL);
  const char* keep = getenv("CPUID_CAP_AVX_VNNI");
  if (keep && strcmp(keep, "1") == 0) leaf7_sub1_cleared &= ~kAvxVnni;
  atexit(report);
}
