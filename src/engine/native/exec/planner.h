// The planner behind build_plan() (plan.h), shared by the files that implement it; nothing outside
// exec/ includes it. One Planner builds one Plan: it walks the graph's nodes in order, keeps per
// value what it knows (ValueState), and turns each node into steps. Its parts, by concern:
//   plan.cpp            build(): values in, nodes planned, outputs out, the Plan assembled;
//                       build_plan() and plan_time_inputs()
//   plan_nodes.cpp      one node: inference, constant folding, the plain path, aliases
//   plan_layout.cpp     channels-last: layout conversions, convolutions and the layout-aware ops
//   plan_placement.cpp  backends: which one runs a step, copies between their memories
//   plan_memory.cpp     the arenas (offsets by lifetime) and where each step's buffers are
//   plan_precision.cpp  element types per backend memory (fp16 storage on a device, --precision fp16)
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/native/exec/plan.h"

namespace sd::native::exec {

enum class OpClass { kConv, kPool, kUnary, kBinary, kConcat, kSplit, kSlice, kResize, kAlias, kOther };

// A 4-D logical NCHW shape as it is stored channels-last (NHWC).
inline Shape physical_of(const Shape& s) { return Shape{s[0], s[2], s[3], s[1]}; }

struct ValueState {
  ValueType logical;
  bool nhwc = false;                      // stored channels-last (4-D only)
  std::shared_ptr<HostTensor> constant;   // known at plan time
  const void* uploaded = nullptr;         // a constant's copy in a device backend's memory
  int home = -1;                          // the backend whose memory holds it (-1: the host's)
  int input = -1;                         // a graph input
  int root = -1;                          // buffer owner (itself, or what it aliases)
  size_t alias_offset = 0;                // bytes into the root's buffer (a Split part)
  int64_t pixel_stride = 0;               // a channels-last Split's part read in place: elements a pixel (0: dense)
  int first_step = -1, last_step = -1;    // lifetime in steps
  bool defined = false;
};

class Planner {
 public:
  Planner(const Graph& g, const OpRegistry& r, std::span<const Backend* const> backends, const PlanOptions& options)
      : g_(g), registry_(r), backends_(backends.begin(), backends.end()), states_(g.values.size()),
        channels_last_(options.channels_last), memory_limit_(options.memory_limit_bytes), device_fp16_(options.device_fp16),
        threads_(options.threads), concat_in_place_(options.concat_in_place) {}

  Result<std::unique_ptr<Plan>> build(const std::vector<ValueType>& inputs, const std::vector<const HostTensor*>& fixed);

 private:
  struct PendingStep {
    std::unique_ptr<Kernel> kernel;
    std::vector<int> ins, outs;  // value ids (-1: omitted)
    std::vector<ValueType> in_types, out_types;  // physical
    std::string label;
    int backend = 0;
    bool copy = false;
  };

  // A kernel for the node from the first backend that supports it. A backend other than the last
  // that fails to build one leaves the node to the next (the CPU's, last, runs every op).
  struct Placed {
    std::unique_ptr<Kernel> kernel;
    int backend = 0;
  };

  // plan_placement.cpp
  Result<Placed> create_kernel(const OpContext& ctx);
  // The backend that would run the node (its layout preferences shape the plan around it).
  const Backend& preferred_backend(const OpContext& ctx) const;
  Device device_of(int v) const;
  int home_of(int v) const;
  // The value in the memory of backend `b`: itself, or a copy made by a step (cached, so that
  // every reader on `b` shares one), or a constant uploaded now.
  Result<int> on_backend(int v, int b);
  // Its type as the host sees it (the logical element type) in its physical layout.
  ValueType physical_type(int v) const;
  // Element types in the memory of backend `b`: float32 becomes the backend's float storage
  // (plan_precision.cpp; float16 with device_fp16 where the backend prefers it).
  DType stored_dtype(DType logical, int b) const;
  ValueType stored_type(ValueType t, int b) const { return {stored_dtype(t.dtype, b), t.shape}; }
  std::vector<ValueType> stored_types(const std::vector<ValueType>& ts, int b) const;
  // The value's type in its home's memory (what its buffer holds).
  ValueType stored_type(int v) const { return stored_type(physical_type(v), home_of(v)); }
  // A constant as backend `b` stores it (converted to fp16 on the host where it stores float16).
  std::shared_ptr<HostTensor> stored_constant(const std::shared_ptr<HostTensor>& c, int b) const;
  int new_value(const ValueType& t, bool nhwc);
  void use(int v, int step);
  // A step on the backend that made its kernel: inputs held elsewhere are copied there first.
  Status add_step(Placed placed, std::vector<int> ins, std::vector<ValueType> in_types, std::vector<int> outs,
                  std::vector<ValueType> out_types, std::string label);
  // The outputs live in the memory of `out_home` (-1: the step's backend; a copy's destination).
  void push_step(std::unique_ptr<Kernel> k, int backend, bool copy, std::vector<int> ins, std::vector<ValueType> in_types,
                 std::vector<int> outs, std::vector<ValueType> out_types, std::string label, int out_home = -1);
  Result<int> copy_to_arena(int v);

  // plan_nodes.cpp
  Status plan_node(const Node& original);
  Status fold(const Node& n, const OpSchema& schema, const std::vector<ValueType>& lin, const std::vector<const HostTensor*>& lconst,
              const std::vector<ValueType>& out_types);
  void define_outputs(const Node& n, const std::vector<ValueType>& out_types, bool nhwc);
  // Inputs of a step as physical types and (possibly converted) constants.
  Status gather(const std::vector<int>& ids, std::vector<ValueType>& types, std::vector<const HostTensor*>& consts);
  Status plan_plain(const Node& n, const OpSchema& schema, const std::vector<ValueType>& out_types);
  // A plain Split whose axis has nothing but ones before it cuts its input into contiguous parts:
  // the outputs alias the input at offsets, no copy.
  bool try_split_alias(const Node& n, const std::vector<ValueType>& out_types);
  Status plan_alias(const Node& n, const std::vector<ValueType>& out_types);
  Status plan_split_sum(const Node& fused);

  // plan_layout.cpp
  // A transpose step between layouts (or a constant converted now). A layout-neutral tensor
  // (one channel, or 1x1 spatial) has the same bytes in both: it becomes an alias instead.
  Result<int> convert(int v, bool to_nhwc);
  Result<int> as_plain(int v);
  // Convolutions and pooling: the backend that runs them decides the layout around them.
  Status plan_conv_like(const Node& n, const std::vector<ValueType>& lin, const std::vector<const HostTensor*>& lconst,
                        const std::vector<ValueType>& out_types, OpClass cls);
  // A per-tensor QuantizeLinear of a plain 4-D float tensor (a QDQ model's image) read by int8
  // convolutions only: quantized straight into channels-last (cpu/quantize_nhwc.h), one pass
  // instead of a quantize and a transpose of its bytes.
  bool quantizes_for_int8_convs(const Node& n, const std::vector<ValueType>& lin, const std::vector<const HostTensor*>& lconst,
                                const std::vector<ValueType>& out_types) const;
  Status plan_quantize_to_nhwc(const Node& n, const std::vector<ValueType>& out_types);
  Status plan_layout_aware(const Node& n, const OpSchema& schema, const std::vector<ValueType>& lin,
                           const std::vector<const HostTensor*>& lconst, const std::vector<ValueType>& out_types, OpClass cls);

  // plan_concat.cpp: Concat in place.
  // Readers of each graph value (node inputs and graph outputs).
  void count_readers();
  // An elementwise int8 step on the host (Int8Table, Int8AddTables, a per-tensor QuantizeLinear)
  // just added, channels-last: a Concat planned later may have it write into its output, strided.
  void record_strided_producer(const Node& planned, const std::vector<ValueType>& types, const std::vector<const HostTensor*>& consts,
                               const std::vector<ValueType>& out_types);
  // A float convolution just added that our Winograd runs (channels-last): a Concat planned later
  // may have it write its pixels' channels into the Concat's output, strided.
  void record_conv_producer(const Node& planned, const std::vector<ValueType>& lin, const std::vector<const HostTensor*>& lconst,
                            const std::vector<ValueType>& out_types);
  // A layout conversion to NCHW just added (value `out` of channels-last `source`): a Concat along
  // its last axis may have it write its channel planes into the Concat's rows.
  void record_row_producer(int out, int source, const Node& planned, const ValueType& in, const ValueType& out_type);
  // A Concat's step, `planned` with its physical axis and `types` its inputs' physical types:
  // inputs whose producers can write their part of the output themselves do, the Concat copies
  // the rest (or has no step when nothing is left).
  Status plan_concat(const Node& planned, const std::vector<int>& ins, const std::vector<ValueType>& types,
                     const std::vector<const HostTensor*>& consts, const std::vector<ValueType>& logical_out,
                     const std::vector<ValueType>& out_types, bool nhwc);
  // A channels-last Split with no step: its outputs are views of its input (pixel_stride) that
  // their readers read strided. Of bytes, where every reader is an Int8Table (kSrcPixelStride); of
  // float32, where a Concat (kSrcPixelStrides) or a convolution reading a part as its source or
  // residual sum (kSrcPixelStride, kSumPixelStride: our Winograd) reads one; other readers (and
  // convolutions our Winograd does not run) get a dense copy (dense_copy).
  bool try_split_views(const Node& n, const std::vector<int>& ins, const std::vector<ValueType>& types, const std::vector<ValueType>& out_types,
                       int64_t axis);
  // A strided view (pixel_stride) copied dense, for a reader that cannot read it strided (cached:
  // one copy for every such reader).
  Result<int> dense_copy(int v);
  // Every strided view among `ins` replaced by its dense copy.
  Status dense_copies(std::vector<int>& ins);
  // Whether input `k` of `n` can be read strided by the kernel it gets (see try_split_views).
  static bool reads_strided(const Node& n, size_t k);
  // A float Split's input whose producer can write it into the Concat that reads every part of
  // it (C2f's cv1 and Concat): its kernel made again to write rows as wide as the Concat's, its
  // parts' readers planned with that stride, and the Concat planned later moves it in place.
  // Returns that stride (elements a pixel), or 0 where it cannot.
  int64_t preplace_in_concat(const Node& split, int root, const std::vector<ValueType>& out_types);
  // A channels-last float32 Concat along the channels whose one reader is a 1x1 convolution our
  // 1x1 kernel runs: no step, its inputs recorded (read_in_parts_) for the convolution to read as
  // the parts of its source (kSrcParts), so that nothing copies them. False where it cannot: then
  // the upsampled views among its inputs get their steps first (materialize_upsampled).
  Result<bool> concat_read_in_parts(const Node& planned, const std::vector<int>& ins, const std::vector<ValueType>& types,
                                    const std::vector<ValueType>& logical_out, bool nhwc);
  // The one node reading value `v` (`input`: which of its inputs), or nullptr where more than one
  // reads it or a graph output alone does (readers_).
  const Node* sole_reader(int v, size_t& input) const;
  // How many parts the one reader of Concat output `v` (of logical type `t`) reads its source in:
  // a convolution taking it as its source, as its backend says (Backend::conv_source_parts); 0 if
  // anything else reads it.
  int parts_reader(int v, const ValueType& t) const;
  // A nearest 2x Resize of a channels-last float32 tensor whose one reader is a Concat that a
  // convolution can read in parts: no step, its output an upsampled view of its input (upsampled_)
  // that the convolution reads where it stands. False where it cannot.
  bool upsample_as_view(const Node& n, const std::vector<ValueType>& lin, const std::vector<const HostTensor*>& lconst,
                        const std::vector<ValueType>& out_types);
  // The Resize step of an upsampled view after all (its Concat is planned as a copy).
  Status materialize_upsampled(int v);
  // Moves the buffer of root `r` (and every value inside it) into `out`'s, `offset` bytes in.
  void reroot(int r, int out, size_t offset);
  // The conversion to NCHW of `v`, a channels-last Concat along the channels that copies every
  // input (channel_concats_) and that nothing else reads: its step made a ConcatPlanes
  // (cpu/concat_planes.cpp) that writes the NCHW value returned, recorded as a layout conversion
  // (a Concat along its rows may have it write there). -1 where it cannot.
  int concat_as_planes(int v);

  // plan_memory.cpp
  // Places the intermediate tensors: one arena per backend, offsets by lifetime.
  void allocate();
  BufferRef buffer_of(int v) const;

  const Graph& g_;
  const OpRegistry& registry_;
  std::vector<const Backend*> backends_;
  int host_ = -1;  // index of the host's backend in backends_
  std::map<std::pair<int, int>, int> moved_;  // (value, backend) -> its copy there
  std::vector<ValueState> states_;
  std::vector<PendingStep> steps_;
  std::unique_ptr<Plan> plan_;
  std::map<int, int> nhwc_copy_, plain_copy_, dense_copy_;
  std::map<int, size_t> offsets_;
  std::vector<int> output_values_;
  std::vector<std::shared_ptr<HostTensor>> made_constants_;
  size_t folded_bytes_ = 0;  // constants this plan folded (bounded by kFoldTotalBudgetBytes)
  std::vector<std::unique_ptr<Node>> filled_;  // nodes as planned (kernels may keep references)
  bool channels_last_ = true;
  size_t memory_limit_ = 0;  // 0: none
  bool device_fp16_ = false;
  int threads_ = 1;  // PlanOptions::threads
  bool concat_in_place_ = true;  // PlanOptions::concat_in_place
  std::vector<int> readers_;     // per graph value (count_readers)
  struct ProducerRecord {        // how a step's kernel was made, to make it again strided
    int step = -1;
    int source = -1;             // a layout conversion's: the channels-last value it converts
    int64_t row = 0;             // elements it writes in one row (a pixel's channels, a plane)
    const char* stride_attr = nullptr;  // the attribute that tells its kernel the stride
    const Node* node = nullptr;  // in filled_
    std::vector<ValueType> types, out_types;
    std::vector<const HostTensor*> consts;
  };
  std::map<int, ProducerRecord> strided_producers_;  // output value -> its step
  struct Preplaced {
    int concat_output = -1;  // the Concat that moves it in place
    size_t offset = 0;       // bytes into that Concat's rows
  };
  std::map<int, Preplaced> preplaced_;  // root -> where it must go (preplace_in_concat)
  std::map<int, std::vector<int>> read_in_parts_;  // a Concat with no step -> its inputs (concat_read_in_parts)
  struct Upsampled {
    const Node* node;  // the Resize, as the graph has it
    std::vector<ValueType> lin, out_types;
    std::vector<const HostTensor*> lconst;
  };
  std::map<int, Upsampled> upsampled_;  // a nearest 2x Resize's output with no step -> how to make it (upsample_as_view)
  bool no_views_ = false;               // set while materialize_upsampled plans a Resize
  std::map<int, int> channel_concats_;  // a channels-last Concat's output -> its step (concat_as_planes)
};

}  // namespace sd::native::exec
