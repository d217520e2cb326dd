// `streamdet quantize` as a user runs it: the bundled tiny model calibrated on synthetic frames
// that streamdet_synth's writer makes with their truth; the int8 model loads, keeps its accuracy
// (measured by `streamdet val` on the same set), has QuantizeLinear/DequantizeLinear around its
// convolutions and none around the ones kept float; bad input exits with one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "cli_util.h"
#include "core/cpu_isa.h"
#include "synthetic/clip_writer.h"
#include "test_util.h"

namespace sd {
namespace {

using test::CliResult;
using test::kTinyModel;
using test::last_line;
using test::run_cli;

void write_set(const test::TempDir& dir, int count) {
  synth::FrameDumpOptions set;
  set.count = count;
  set.seed = 515151;  // not a training seed
  set.sizes = {{320, 192}, {256, 256}};
  set.min_objects = 2;
  set.max_objects = 6;
  set.coco = true;
  ASSERT_TRUE(synth::write_training_frames(set, dir.file("set")));
}

double val_ap(const test::TempDir& dir, const std::string& model, const std::string& tag) {
  test::SpawnOptions out;
  out.stdout_path = dir.file(tag + ".json");
  CliResult r = run_cli(dir,
                        {"val", "-m", model, "--data", dir.file("set/instances.json"), "--images", dir.file("set/images"),
                         "--json", "--threads", "1", "-q"},
                        out);
  EXPECT_EQ(r.code, 0) << r.err;
  if (r.code != 0) return -1;
  return nlohmann::json::parse(test::read_file(dir.file(tag + ".json")))["stats"][0].get<double>();
}

onnx::ModelProto read_model(const std::string& path) {
  onnx::ModelProto m;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&in)) << path;
  return m;
}

struct Structure {
  std::map<std::string, std::string> producer_op;              // tensor -> op that writes it
  std::map<std::string, std::vector<std::string>> reader_ops;  // tensor -> ops that read it
  std::set<std::string> initializers;
};

Structure structure_of(const onnx::ModelProto& m) {
  Structure s;
  for (const auto& t : m.graph().initializer()) s.initializers.insert(t.name());
  for (const auto& n : m.graph().node()) {
    for (const auto& o : n.output()) s.producer_op[o] = n.op_type();
    for (const auto& i : n.input()) s.reader_ops[i].push_back(n.op_type());
  }
  return s;
}

// A quantized convolution: its input and weights come from DequantizeLinear, its output goes to a
// QuantizeLinear alone. A float one: weights a float initializer, no QuantizeLinear after it.
bool is_qdq_conv(const Structure& s, const onnx::NodeProto& conv) {
  auto from = [&](const std::string& t) { auto it = s.producer_op.find(t); return it == s.producer_op.end() ? "" : it->second; };
  const auto& readers = s.reader_ops.count(conv.output(0)) ? s.reader_ops.at(conv.output(0)) : std::vector<std::string>{};
  return from(conv.input(0)) == "DequantizeLinear" && from(conv.input(1)) == "DequantizeLinear" && readers.size() == 1 &&
         readers[0] == "QuantizeLinear";
}

// A head convolution as --head int8-input writes it: input and weights from DequantizeLinear, its
// output read by float ops (no QuantizeLinear).
bool is_int8_input_conv(const Structure& s, const onnx::NodeProto& conv) {
  auto from = [&](const std::string& t) { auto it = s.producer_op.find(t); return it == s.producer_op.end() ? "" : it->second; };
  const auto& readers = s.reader_ops.count(conv.output(0)) ? s.reader_ops.at(conv.output(0)) : std::vector<std::string>{};
  return from(conv.input(0)) == "DequantizeLinear" && from(conv.input(1)) == "DequantizeLinear" && !readers.empty() &&
         std::find(readers.begin(), readers.end(), "QuantizeLinear") == readers.end();
}

bool is_float_conv(const Structure& s, const onnx::NodeProto& conv) {
  const auto& readers = s.reader_ops.count(conv.output(0)) ? s.reader_ops.at(conv.output(0)) : std::vector<std::string>{};
  for (const auto& r : readers)
    if (r == "QuantizeLinear") return false;
  return s.initializers.count(conv.input(1)) > 0 && !s.producer_op.count(conv.input(1));
}

TEST(QuantizeCli, TinyModelKeepsItsAccuracyAndHasQdqAroundItsConvolutions) {
  test::TempDir dir;
  write_set(dir, 32);
  test::SpawnOptions out;
  out.stdout_path = dir.file("quantize.txt");
  CliResult r = run_cli(dir,
                        {"quantize", "-m", kTinyModel, "--calib", dir.file("set/images"), "--out", dir.file("int8.onnx"),
                         "--threads", "1", "-q"},
                        out);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string said = test::read_file(dir.file("quantize.txt"));
  EXPECT_NE(said.find("quantized 59 of 60 Conv/MatMul nodes"), std::string::npos) << said;
  EXPECT_NE(said.find("over 32 frames"), std::string::npos) << said;

  // Structure (--head int8-input, the default): the head's box/class convolutions read int8 and
  // write float, the DFL (after a Softmax) stays float, every other convolution has QDQ around it.
  const onnx::ModelProto m = read_model(dir.file("int8.onnx"));
  const Structure s = structure_of(m);
  int qdq = 0, int8_input = 0, kept = 0;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "Conv") continue;
    if (n.name() == "/detect/dfl/conv/Conv") {
      EXPECT_TRUE(is_float_conv(s, n)) << n.name();
      ++kept;
    } else if (n.name().rfind("/detect/", 0) == 0 && n.name().find(".2/Conv") != std::string::npos) {
      EXPECT_TRUE(is_int8_input_conv(s, n)) << n.name();
      ++int8_input;
    } else {
      EXPECT_TRUE(is_qdq_conv(s, n)) << n.name();
      ++qdq;
    }
  }
  EXPECT_EQ(kept, 1);
  EXPECT_EQ(int8_input, 6);
  EXPECT_EQ(qdq, 53);
  ASSERT_EQ(m.graph().output_size(), 1);
  EXPECT_EQ(m.graph().output(0).name(), "output0");

  // Valid ONNX by ONNX's own checker, where Debian's python3-onnx is installed.
  const std::string py = std::string(STREAMDET_PYTHON) + " -c 'import onnx' 2>/dev/null";
  if (std::system(py.c_str()) == 0) {
    const std::string check = std::string(STREAMDET_PYTHON) + " -c 'import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)' " +
                              dir.file("int8.onnx");
    EXPECT_EQ(std::system(check.c_str()), 0) << "onnx.checker refused " << dir.file("int8.onnx");
  } else {
    std::printf("python3-onnx is not installed: the model was not run through onnx.checker\n");
  }

  // On the AVX2 path (no VNNI: the stand-in for such a processor) the 8-bit weights do not fold
  // into int8 convolutions, and the load says so once, naming the fix; on a VNNI processor's own
  // path it says nothing.
  const std::string note = "59 quantized convolutions computed in float32 or 16-bit integers on this processor";
  CliResult avx2 = run_cli(dir, {"bench", "-m", dir.file("int8.onnx"), "-n", "2", "--threads", "1", "--workers", "1", "--cpu-isa", "avx2"});
  ASSERT_EQ(avx2.code, 0) << avx2.err;
  EXPECT_NE(avx2.err.find(note), std::string::npos) << avx2.err;
  EXPECT_NE(avx2.err.find("--reduce-range"), std::string::npos) << avx2.err;
  if (cpu::detected_isa() >= cpu::Isa::kAvx512Vnni) {
    CliResult own = run_cli(dir, {"bench", "-m", dir.file("int8.onnx"), "-n", "2", "--threads", "1", "--workers", "1"});
    ASSERT_EQ(own.code, 0) << own.err;
    EXPECT_EQ(own.err.find(note), std::string::npos) << own.err;
  }

  // Accuracy: the int8 model through `streamdet val` (it loads, its int8 convolutions fold) against
  // the fp32 model on the same set. Measured: 0.906 fp32, 0.903 int8 (48 images of another seed).
  const double fp32 = val_ap(dir, kTinyModel, "fp32"), int8 = val_ap(dir, dir.file("int8.onnx"), "int8");
  std::printf("tiny model, synthetic COCO set: AP fp32 %.3f, int8 %.3f\n", fp32, int8);
  EXPECT_GT(fp32, 0.7);
  EXPECT_NEAR(int8, fp32, 0.03);
}

TEST(QuantizeCli, KeepFloatAndBadInput) {
  test::TempDir dir;
  write_set(dir, 4);
  // --keep-float: the named convolution stays float, its neighbours do not.
  test::SpawnOptions out;
  out.stdout_path = dir.file("quantize.txt");
  CliResult r = run_cli(dir,
                        {"quantize", "-m", kTinyModel, "--calib", dir.file("set/images"), "--out", dir.file("int8.onnx"),
                         "--keep-float", "/stem/conv/Conv", "--calib-frames", "2", "--method", "percentile", "-q"},
                        out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(test::read_file(dir.file("quantize.txt")).find("kept float (--keep-float): /stem/conv/Conv"), std::string::npos);
  EXPECT_NE(test::read_file(dir.file("quantize.txt")).find("over 2 frames"), std::string::npos);
  const onnx::ModelProto m = read_model(dir.file("int8.onnx"));
  const Structure s = structure_of(m);
  for (const auto& n : m.graph().node()) {
    if (n.name() == "/stem/conv/Conv") EXPECT_TRUE(is_float_conv(s, n));
    if (n.name() == "/stage1/stage1.0/conv/Conv") EXPECT_TRUE(is_qdq_conv(s, n));
  }

  {  // --head float: the head's box/class convolutions stay float as a whole, as the DFL does
    CliResult f = run_cli(dir, {"quantize", "-m", kTinyModel, "--calib", dir.file("set/images"), "--out", dir.file("head_float.onnx"),
                                "--head", "float", "--calib-frames", "2", "--keep-float-auto", "0", "-q"},
                          out);
    ASSERT_EQ(f.code, 0) << f.err;
    EXPECT_NE(test::read_file(dir.file("quantize.txt")).find("quantized 53 of 60 Conv/MatMul nodes"), std::string::npos);
    const onnx::ModelProto hf = read_model(dir.file("head_float.onnx"));
    const Structure hs = structure_of(hf);
    int kept = 0;
    for (const auto& n : hf.graph().node())
      if (n.op_type() == "Conv" && n.name().rfind("/detect/", 0) == 0 &&
          (n.name().find(".2/Conv") != std::string::npos || n.name() == "/detect/dfl/conv/Conv")) {
        EXPECT_TRUE(is_float_conv(hs, n)) << n.name();
        ++kept;
      }
    EXPECT_EQ(kept, 7);
    CliResult bad = run_cli(dir, {"quantize", "-m", kTinyModel, "--calib", dir.file("set/images"), "--out", dir.file("x.onnx"),
                                  "--head", "int4"});
    EXPECT_EQ(bad.code, 2) << bad.err;
    EXPECT_NE(last_line(bad.err).find("--head"), std::string::npos) << bad.err;
  }
  {  // a model quantized already: exit 3
    CliResult bad = run_cli(dir, {"quantize", "-m", dir.file("int8.onnx"), "--calib", dir.file("set/images"), "--out", dir.file("x.onnx")});
    EXPECT_EQ(bad.code, 3) << bad.err;
    EXPECT_NE(last_line(bad.err).find(dir.file("int8.onnx") + ": already quantized (QuantizeLinear node"), std::string::npos) << bad.err;
    EXPECT_EQ(test::nonempty_lines(bad.err).size(), 1u) << bad.err;
  }
  {  // --keep-float naming no node: exit 2
    CliResult bad = run_cli(dir, {"quantize", "-m", kTinyModel, "--calib", dir.file("set/images"), "--out", dir.file("x.onnx"),
                                  "--keep-float", "/stem/conv/Conv,/no/such/Conv"});
    EXPECT_EQ(bad.code, 2) << bad.err;
    EXPECT_NE(last_line(bad.err).find("--keep-float /no/such/Conv: model " + kTinyModel + " has no node of that name"), std::string::npos)
        << bad.err;
  }
  {  // no calibration frames: exit 4
    std::filesystem::create_directories(dir.file("empty"));
    CliResult bad = run_cli(dir, {"quantize", "-m", kTinyModel, "--calib", dir.file("empty"), "--out", dir.file("x.onnx")});
    EXPECT_EQ(bad.code, 4) << bad.err;
    EXPECT_EQ(test::nonempty_lines(bad.err).size(), 1u) << bad.err;
    EXPECT_NE(last_line(bad.err).find(dir.file("empty")), std::string::npos) << bad.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.onnx")));
}

}  // namespace
}  // namespace sd
