// The request's stages as kernels (stages.hpp): a text encoder's blocks and
// a causal 3-D VAE decoder's convolutions, walked over the job's shapes.
#include "workload/stages.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "io/yaml_reader.hpp"
#include "schedule/builder.hpp"

namespace osim {

double conv_layout_copies_bytes(const ConvShape& c, double element) {
  if (c.taps <= 1 || c.channels_last) return 0.0;
  const double weights = element * static_cast<double>(c.cin) * static_cast<double>(c.cout) * c.taps;
  return c.conversion_bytes(element) / 2 + weights;
}

namespace {

// Emits a pass's kernels and counts what they compute, move and hold.
// Elements are counted in the stage's dtype; fp32 convolutions and matmuls
// run on TF32 tensor cores (PyTorch's default for cuDNN convolutions), at
// half the bf16 rate: twice their FLOPs at the bf16 rate.
class Emitter {
 public:
  Emitter(DType dtype, int stream, double efficiency, std::vector<Op>* out)
      : es(dtype_bytes(dtype)), dtype_(dtype), stream_(stream), efficiency_(efficiency), out_(out) {}
  const double es;  // bytes an element
  // What the kernels so far compute, move and hold: weights in elements;
  // peak, held (what the current block keeps, e.g. its input for the
  // residual) and cache (kept across passes) in bytes.
  double flops = 0, bytes = 0, weights = 0, peak = 0, held = 0, cache = 0;

  // A matmul or convolution: `w` weights; `in` and `out` elements.
  // `conv`: the convolution it is (ConvParams times it where calibrated).
  void tensor(const std::string& label, double f, double in, double out, double w, std::optional<ConvShape> conv = std::nullopt) {
    weights += w;
    const double b = es * (in + out + w);
    count(f, b, in, out);
    if (conv) peak = std::max(peak, held + es * (in + out) + conv_copies(*conv));
    if (!out_) return;
    Op op = ops::memory_kernel(stream_, b, label);
    op.flops = dtype_ == DType::FP32 ? 2 * f : f;
    op.dtype = dtype_ == DType::FP32 ? DType::BF16 : dtype_;
    op.efficiency = static_cast<float>(efficiency_);
    if (conv) {
      conv->tf32 = dtype_ == DType::FP32;
      op.conv = conv;
    }
    out_->push_back(std::move(op));
  }
  // What a convolution holds beyond its input and output (its layout copies).
  [[nodiscard]] double conv_copies(const ConvShape& c) const { return conv_layout_copies_bytes(c, es); }
  void gemm(const std::string& label, int64_t m, int64_t n, int64_t k) {
    const double md = static_cast<double>(m), nd = static_cast<double>(n), kd = static_cast<double>(k);
    if (dtype_ == DType::FP32 || efficiency_ > 0) {
      tensor(label, 2 * md * nd * kd, md * kd, md * nd, kd * nd);
      return;
    }
    weights += kd * nd;
    count(2 * md * nd * kd, es * (md * kd + kd * nd + md * nd), md * kd, md * nd);
    if (out_) out_->push_back(ops::gemm(stream_, m, n, k, dtype_, label));
  }
  void attention(const std::string& label, const AttentionShape& a) {
    const double io = static_cast<double>(a.batch) * a.heads * a.head_dim;
    const double in = io * (a.seq_q + 2.0 * a.seq_kv), out = io * a.seq_q;
    if (dtype_ == DType::FP32) {
      tensor(label, a.flops(), in, out, 0);
      return;
    }
    count(a.flops(), es * (in + out), in, out);
    if (!out_) return;
    Op op = ops::attention(stream_, a, label);
    op.dtype = dtype_;
    out_->push_back(std::move(op));
  }
  // A parallel decode (par != null): before a convolution, its halo rows
  // (`bytes` each way) sent to the next and previous rank of the group
  // while theirs are received, the kernels waiting for them; a collective
  // on the group (the attention's keys and values, the decoded frames).
  void set_parallel(const StageJob* par) { par_ = par; }
  [[nodiscard]] int ranks() const { return par_ ? par_->ranks : 1; }
  void halo(const std::string& label, double b) {
    if (!out_ || !par_) return;
    const auto n = static_cast<Bytes>(b);
    out_->push_back(ops::wait_stream(par_->send_stream, stream_));  // the rows are ready
    for (const bool down : {true, false}) {
      Op send = ops::collective(par_->send_stream, CollKind::Send, -1, n, CollAlgo::Nccl, DType::BF16, label + (down ? " send down" : " send up"));
      send.peer = down ? par_->next : par_->prev;
      Op recv = ops::collective(par_->recv_stream, CollKind::Recv, -1, n, CollAlgo::Nccl, DType::BF16, label + (down ? " recv up" : " recv down"));
      recv.peer = down ? par_->prev : par_->next;
      out_->push_back(std::move(send));
      out_->push_back(std::move(recv));
    }
    out_->push_back(ops::record(par_->recv_stream, par_->event));
    out_->push_back(ops::wait_event(stream_, par_->event));
  }
  void gather(const std::string& label, double b) {
    if (out_ && par_)
      out_->push_back(ops::collective(stream_, CollKind::AllGather, par_->group, static_cast<Bytes>(b), CollAlgo::Nccl, DType::BF16, label));
  }
  // A memory-bound kernel reading and writing `elements` `passes` times in
  // all, of the stage's dtype or `dtype` (an op converting or computing in another).
  void memory(const std::string& label, double elements, double passes, Access access = Access::Elementwise,
              std::optional<DType> dtype = std::nullopt) {
    const double b = dtype_bytes(dtype.value_or(dtype_)) * elements * passes;
    count(0, b, elements, elements);
    if (!out_) return;
    Op op = ops::memory_kernel(stream_, b, label, access);
    op.dtype = dtype.value_or(dtype_);
    out_->push_back(std::move(op));
  }

 private:
  void count(double f, double b, double in, double out) {
    flops += f;
    bytes += b;
    peak = std::max(peak, held + es * (in + out));
  }
  const DType dtype_;
  const int stream_;
  const double efficiency_;
  std::vector<Op>* out_;  // null: count only
  const StageJob* par_ = nullptr;
};

// ------------------------------------------------------------------ encoder
// A pre-norm transformer block per layer: norm, the q/k/v projection,
// attention, the output projection, the residual add; norm, the MLP (up,
// its activation: gated 3 tensors, else 2, down), the residual add. The
// block's input is held for its residual.
void walk_encoder(const EncoderShape& e, Emitter& x) {
  const int64_t T = e.tokens, h = e.hidden, q = e.heads * e.head_dim, kv = e.kv_heads * e.head_dim;
  const double th = static_cast<double>(T) * static_cast<double>(h);
  x.weights += static_cast<double>(e.vocab) * static_cast<double>(h);
  x.memory("embed", th, 1);
  for (int l = 0; l < e.layers; ++l) {
    const std::string n = fmt::format("l{} ", l);
    x.held = x.es * th;
    x.memory(n + "norm1", th, 2);
    x.gemm(n + "qkv", T, q + 2 * kv, h);
    x.attention(n + "attn",
                AttentionShape{1, static_cast<int32_t>(e.heads), static_cast<int32_t>(T), static_cast<int32_t>(T), static_cast<int32_t>(e.head_dim)});
    x.gemm(n + "out", T, h, q);
    x.memory(n + "residual1", th, 3);
    x.memory(n + "norm2", th, 2);
    x.gemm(n + "mlp up", T, (e.mlp_matrices - 1) * e.ffn, h);
    x.memory(n + "act", static_cast<double>(T) * static_cast<double>(e.ffn), e.mlp_matrices == 3 ? 3 : 2);
    x.gemm(n + "mlp down", T, h, e.ffn);
    x.memory(n + "residual2", th, 3);
  }
  x.held = 0;
  x.memory("final norm", th, 2);
}

// ------------------------------------------------------------------ VAE
// The decoder walked over one pass of latent frames (t, h, w); `first`: the
// pass starts the video (a causal upsampling keeps its first frame).
// Norms: the statistics read, the normalised tensor written, scaled and
// shifted (4 passes of the tensor); SiLU 2; a residual add 3. Wan's decoder
// as its vae.py runs it (channels-first throughout): RMS_norm is
// F.normalize over the channels, then * scale, * gamma (per channel) and
// + bias (0.); each CausalConv3d puts its cached frames in front (cat), pads
// with F.pad (zero frames where there is no cache, and the sides) and
// convolves unpadded, its input's last two frames cloned for the next pass;
// PyTorch adds each convolution's bias in a kernel of its own. Its
// rearranges of one batch are views.
class VaeWalk {
 public:
  VaeWalk(const VaeShape& v, Emitter& x, int64_t t, int64_t h, int64_t w, bool first, SourceLocation where = {})
      : v_(v), x_(x), t_(t), h_(h), w_(w), first_(first), where_(std::move(where)) {}
  void run() {
    const bool wan = v_.wan(), wan22 = v_.family == VaeShape::Family::Wan22;
    c_ = v_.z_dim;
    conv("conv in", v_.channels[0], kt_, 3, 3);
    res("mid res0", v_.channels[0]);
    attention("mid attn");
    res("mid res1", v_.channels[0]);
    const size_t blocks = v_.channels.size() - 1;
    for (size_t i = 0; i < blocks; ++i) {
      const std::string b = fmt::format("up{} ", i);
      const bool last = i + 1 == blocks;
      const bool up_t = !last && v_.time_up[i], up_s = !last && v_.space_up[i];
      // Wan 2.2: the block computes from a clone of its input and, where it
      // upsamples, holds the input for its shortcut.
      const bool shortcut = wan22 && (up_t || up_s);
      const double held = x_.held, in_elements = elements();
      const int64_t t_in = t_, h_in = h_, w_in = w_;
      if (wan22) x_.memory(b + "clone", elements(), 2);
      if (shortcut) x_.held += x_.es * elements();
      for (int r = 0; r <= v_.res_blocks; ++r) res(b + fmt::format("res{}", r), v_.channels[i + 1]);
      if (last) break;
      if (!up_t && !up_s) continue;
      if (wan) {
        if (up_t && !first_) {  // time_conv: 2c channels read as twice the frames
          conv(b + "time conv", 2 * c_, 3, 1, 1);
          c_ /= 2;
          t_ *= 2;
          x_.memory(b + "time stack", elements(), 2, Access::Indexed);  // the two halves' frames interleaved
        }
        upsample(b + "upsample", 1, up_s ? 2 : 1);
        // Wan 2.1: the next block takes half the width; Wan 2.2 keeps it.
        conv(b + "upsample conv", wan22 ? c_ : c_ / 2, 1, 3, 3, /*conv2d=*/true);
      } else {
        upsample(b + "upsample", up_t ? 2 : 1, up_s ? 2 : 1);
        conv(b + "upsample conv", c_, kt_, 3, 3);
      }
      if (shortcut) {
        // DupUp3D: the input's channels repeated (repeat_interleave) to the
        // output's width times the upsampling factors, permuted into place
        // (a contiguous copy), the video's first frame's extra ones dropped
        // (a view), then added.
        const int ft = up_t ? 2 : 1, fs = up_s ? 2 : 1;
        const double full = static_cast<double>(c_) * ft * fs * fs * static_cast<double>(t_in * h_in * w_in);
        x_.memory(b + "shortcut repeat", (in_elements + full) / 2, 2, Access::Indexed);
        x_.memory(b + "shortcut permute", full, 2, Access::Strided);
        x_.held = held;
        x_.memory(b + "shortcut add", elements(), 3);
      }
    }
    norm("norm out");
    x_.memory("silu out", elements(), 2);
    conv("conv out", v_.out_channels * v_.patch * v_.patch, kt_, 3, 3);
  }
  [[nodiscard]] int64_t frames() const { return t_; }

 private:
  double elements() const { return static_cast<double>(c_) * static_cast<double>(t_) * static_cast<double>(h_) * static_cast<double>(w_); }
  // `conv2d`: a 2-D convolution padding by itself (no causal module around it).
  void conv(const std::string& label, int64_t cout, int kt, int kh, int kw, bool conv2d = false) {
    if (v_.wan()) return wan_conv(label, cout, kt, kh, kw, conv2d);
    const double frame = static_cast<double>(c_ * h_ * w_);
    // A causal conv's input with the two frames in front it needs, copied
    // whole before the kernel: HunyuanVideo's replicate padding.
    const bool causal = v_.family != VaeShape::Family::Image && kt == 3;
    if (causal) x_.memory(label + " pad", frame * static_cast<double>(t_ + 2), 2);
    kernel(label, cout, kt, kh, kw, (causal ? t_ + 2 : t_) * h_ * w_);
  }
  // The convolution's kernel over `in_positions` input positions (its
  // output: the current frames), after a band's halo rows where the decode
  // is parallel; the width becomes `cout`.
  ConvShape kernel(const std::string& label, int64_t cout, int kt, int kh, int kw, int64_t in_positions) {
    const double m = static_cast<double>(t_) * static_cast<double>(h_) * static_cast<double>(w_);
    const double k = static_cast<double>(c_) * kt * kh * kw;
    // A band of rows: a 3-high kernel needs the neighbours' edge row each way.
    if (kh == 3 && x_.ranks() > 1) x_.halo(label + " halo", x_.es * static_cast<double>(c_ * t_ * w_));
    if (in_positions > INT32_MAX)
      throw InputError(where_, fmt::format("{}: {} positions do not fit 32 bits: tile or chunk the VAE", label, in_positions));
    const ConvShape shape{static_cast<int32_t>(t_ * h_ * w_), static_cast<int32_t>(in_positions), static_cast<int32_t>(c_),
                          static_cast<int32_t>(cout), kt * kh * kw};
    x_.tensor(label, 2.0 * m * static_cast<double>(cout) * k, m * static_cast<double>(c_), m * static_cast<double>(cout),
              k * static_cast<double>(cout), shape);
    c_ = cout;
    return shape;
  }
  // Wan's CausalConv3d (and a Conv2d): the copies of its input, the kernel,
  // the bias. A CausalConv3d's input stays referenced by its caller while
  // the module pads it and convolves the padded copy: both are live then.
  void wan_conv(const std::string& label, int64_t cout, int kt, int kh, int kw, bool conv2d) {
    const double frame = static_cast<double>(c_ * h_ * w_), t = static_cast<double>(t_);
    const int64_t ph = kh / 2, pw = kw / 2;
    int64_t in_frames = t_, in_h = h_, in_w = w_;
    const double held = x_.held;
    if (!conv2d) {
      x_.held += x_.es * frame * t;
      if (kt == 3) {
        // The input's last two frames kept (with the previous pass's last in front of a single frame).
        x_.memory(label + " cache", frame * std::min(t, 2.0), 2);
        if (t_ < 2 && !first_) x_.memory(label + " cache cat", frame * 2, 2, Access::Indexed);
        x_.cache += x_.es * 2.0 * frame;
        if (!first_) x_.memory(label + " cat", frame * (t + 2), 2, Access::Indexed);  // the cache in front
        in_frames = t_ + 2;
      }
      in_h = h_ + 2 * ph;
      in_w = w_ + 2 * pw;
      const double padded = static_cast<double>(c_ * in_frames * in_h * in_w);
      // F.pad: zero frames where no cache is in front, the sides; padding nothing, a clone.
      const bool pads = (kt == 3 && first_) || ph > 0 || pw > 0;
      const double source = frame * static_cast<double>(kt == 3 && !first_ ? t_ + 2 : t_);
      if (pads)
        x_.memory(label + " pad", (source + padded) / 2, 2, Access::Pad);
      else
        x_.memory(label + " pad", padded, 2);
    }
    const double in_elements = static_cast<double>(c_ * in_frames * in_h * in_w);
    const ConvShape shape = kernel(label, cout, kt, kh, kw, in_frames * in_h * in_w);
    // The kernel reads the padded copy, not the input it counted.
    if (!conv2d) x_.peak = std::max(x_.peak, x_.held + x_.es * (in_elements + elements()) + x_.conv_copies(shape));
    x_.held = held;
    x_.memory(label + " bias", elements(), 2, Access::Indexed);
  }
  // Wan normalises over the channels (F.normalize: a reduction across them
  // and a division), then scales, multiplies by gamma and adds a bias of 0.
  void norm(const std::string& label) {
    if (!v_.wan()) return x_.memory(label, elements(), 4);
    x_.memory(label, elements(), 3, Access::ChannelNorm);
    x_.memory(label + " scale", elements(), 2);
    x_.memory(label + " gamma", elements(), 2, Access::Indexed);
    x_.memory(label + " bias", elements(), 2);
  }
  void res(const std::string& label, int64_t cout) {
    const double held = x_.held;
    x_.held += x_.es * elements();  // the block's input, for the shortcut
    const int64_t cin = c_;
    norm(label + " norm1");
    x_.memory(label + " silu1", elements(), 2);
    conv(label + " conv1", cout, kt_, 3, 3);
    norm(label + " norm2");
    x_.memory(label + " silu2", elements(), 2);
    conv(label + " conv2", cout, kt_, 3, 3);
    if (cin != cout) {
      const int64_t c = c_;
      c_ = cin;
      conv(label + " shortcut", cout, 1, 1, 1);
      c_ = c;
    }
    x_.held = held;
    x_.memory(label + " add", elements(), 3);
  }
  // One head over the channels: per frame (Wan) or over every token of the pass.
  void attention(const std::string& label) {
    // In a parallel decode each rank's queries see every rank's keys: the
    // keys and values gathered first.
    const int64_t P = x_.ranks(), hw = h_ * w_, tokens = t_ * hw;
    const double held = x_.held;
    x_.held += x_.es * elements();
    norm(label + " norm");
    const bool per_frame = v_.wan();
    const int64_t c = c_;
    if (per_frame) {  // Wan: 1x1 Conv2d to q, k, v, transposed to tokens by a copy
      conv(label + " qkv", 3 * c, 1, 1, 1, true);
      c_ = c;
      x_.memory(label + " qkv transpose", 3 * elements(), 2, Access::Strided);
    } else {
      x_.gemm(label + " qkv", tokens, 3 * c_, c_);
    }
    const int64_t q = per_frame ? hw : tokens;
    if (q * P > INT32_MAX || c_ > INT32_MAX)
      throw InputError(where_, fmt::format("{}: {} tokens do not fit 32 bits: tile or chunk the VAE", label, q * P));
    if (P > 1) x_.gather(label + " kv gather", 2 * x_.es * static_cast<double>(tokens * c_));
    x_.attention(label, AttentionShape{static_cast<int32_t>(per_frame ? t_ : 1), 1, static_cast<int32_t>(q), static_cast<int32_t>(q * P),
                                       static_cast<int32_t>(c_)});
    if (per_frame)
      conv(label + " proj", c_, 1, 1, 1, true);
    else
      x_.gemm(label + " proj", tokens, c_, c_);
    x_.held = held;
    x_.memory(label + " add", elements(), 3);
  }
  // Nearest-neighbour upsampling: the input read, the output written. A
  // causal time upsampling keeps the pass's first frame when it starts the video.
  void upsample(const std::string& label, int ft, int fs) {
    const double in = elements();
    if (ft == 2) t_ = first_ ? 2 * t_ - 1 : 2 * t_;
    h_ *= fs;
    w_ *= fs;
    if (!v_.wan()) return x_.memory(label, (in + elements()) / 2, 2);
    // Wan's Upsample computes in fp32 (x.float(), then back to the input's type).
    const bool convert = x_.es < 4;
    if (convert) x_.memory(label + " to fp32", in, x_.es / 4 + 1, Access::Elementwise, DType::FP32);
    x_.memory(label, (in + elements()) / 2, 2, Access::Upsample, DType::FP32);
    if (convert) x_.memory(label + " from fp32", elements(), x_.es / 4 + 1, Access::Elementwise, DType::FP32);
  }

  const VaeShape& v_;
  Emitter& x_;
  int64_t c_ = 0, t_, h_, w_;
  const int kt_ = v_.family == VaeShape::Family::Image ? 1 : 3;  // the convs' extent in time
  const bool first_;
  const SourceLocation where_;
};

// Extents of tiles of `size` every `stride` over `n` (the last ones cut short), by extent.
std::map<int64_t, int> tiles(int64_t n, int64_t size, int64_t stride) {
  std::map<int64_t, int> out;
  if (size <= 0 || n <= size) {
    out[n] = 1;
    return out;
  }
  for (int64_t i = 0; i < n; i += stride) ++out[std::min(size, n - i)];
  return out;
}

StagePlan vae_plan(const Stage& s, const StageJob& job) {
  const VaeShape& v = s.vae;
  if (job.width % v.spatial || job.height % v.spatial || (job.frames - 1) % v.temporal)
    throw InputError(s.where, fmt::format("stage '{}': {}x{} with {} frames does not fit the VAE's {}x spatial and {}x temporal compression", s.name,
                                          job.width, job.height, job.frames, v.spatial, v.temporal));
  if (v.family == VaeShape::Family::Image && job.frames != 1)
    throw InputError(s.where, fmt::format("stage '{}': an image VAE decodes one frame, not {}: give the job frames: 1", s.name, job.frames));
  const int64_t lt = (job.frames - 1) / v.temporal + 1, lh = job.height / v.spatial, lw = job.width / v.spatial;
  // Temporal passes (latent frames, starts the video, count).
  struct Chunk {
    int64_t t;
    bool first;
    int count;
  };
  std::vector<Chunk> chunks;
  if (v.wan()) {
    chunks.push_back({1, true, 1});  // one latent frame at a time, with its causal cache
    if (lt > 1) chunks.push_back({1, false, static_cast<int>(lt - 1)});
  } else if (s.chunk > 0) {
    // diffusers' temporal tiles: every stride/temporal latent frames, chunk/temporal + 1 of them, each decoded afresh.
    for (const auto& [t, n] : tiles(lt, s.chunk / v.temporal + 1, std::max<int64_t>(1, s.chunk_stride / v.temporal))) chunks.push_back({t, true, n});
  } else {
    chunks.push_back({lt, true, 1});
  }
  const auto th = tiles(lh, s.tile / v.spatial, std::max<int64_t>(1, s.tile_stride / v.spatial));
  const auto tw = tiles(lw, s.tile / v.spatial, std::max<int64_t>(1, s.tile_stride / v.spatial));
  StagePlan plan;
  double peak = 0, cache = 0;
  // A parallel decode: each rank a band of a tile's rows (the slowest rank's, rounded up).
  const int64_t P = s.parallel ? job.ranks : 1;
  for (const Chunk& c : chunks)
    for (const auto& [h, nh] : th)
      for (const auto& [w, nw] : tw) {
        StagePlan::Pass pass;
        pass.count = c.count * nh * nw;
        Emitter x(s.dtype, job.stream, s.efficiency, &pass.ops);
        if (P > 1) x.set_parallel(&job);
        VaeWalk(v, x, c.t, (h + P - 1) / P, w, c.first, s.where).run();
        plan.flops += pass.count * x.flops;
        plan.bytes += pass.count * x.bytes;
        peak = std::max(peak, x.peak);
        cache = std::max(cache, x.cache);
        plan.passes.push_back(std::move(pass));
      }
  if (v.wan() && lt > 1 && P == 1) {
    // Wan concatenates each pass's frames to those decoded so far: pass i
    // (from 1) writes its 1 + 4i frames and reads as many.
    StagePlan::Pass pass;
    Emitter x(s.dtype, job.stream, s.efficiency, &pass.ops);
    const double frames = static_cast<double>(lt - 1) * (1.0 + static_cast<double>(lt) * v.temporal / 2.0);  // sum of 1 + 4i
    x.memory("frames cat", frames * static_cast<double>(v.out_channels * job.height * job.width), 2, Access::Indexed);
    plan.bytes += x.bytes;
    plan.passes.push_back(std::move(pass));
  }
  const double es = dtype_bytes(s.dtype);
  plan.weights = static_cast<Bytes>(static_cast<double>(v.params()) * es);
  plan.result = static_cast<Bytes>(es * static_cast<double>(v.out_channels * job.frames * job.height * job.width));
  if (v.patch > 1) {  // the decoded positions' patch x patch pixels put in place: a copy of the frames (a rank's band)
    StagePlan::Pass pass;
    Emitter x(s.dtype, job.stream, s.efficiency, &pass.ops);
    x.memory("unpatchify", static_cast<double>(v.out_channels * job.frames * job.height * job.width) / static_cast<double>(P), 2, Access::Strided);
    plan.bytes += x.bytes;
    plan.passes.push_back(std::move(pass));
  }
  if (P > 1) {  // every rank's band of the frames gathered
    StagePlan::Pass pass;
    Emitter x(s.dtype, job.stream, s.efficiency, &pass.ops);
    x.set_parallel(&job);
    x.gather("frames gather", static_cast<double>(plan.result) / static_cast<double>(P));
    plan.passes.push_back(std::move(pass));
  }
  // Its peak: the largest op's, the causal caches, and the frames decoded so far.
  plan.activations = static_cast<Bytes>(peak + cache) + plan.result;
  return plan;
}

StagePlan encoder_plan(const Stage& s, const StageJob& job) {
  StagePlan plan;
  StagePlan::Pass pass;
  pass.count = s.prompts > 0 ? s.prompts : job.prompts;
  Emitter x(s.dtype, job.stream, s.efficiency, &pass.ops);
  walk_encoder(s.encoder, x);
  plan.flops = pass.count * x.flops;
  plan.bytes = pass.count * x.bytes;
  plan.weights = static_cast<Bytes>(x.weights * x.es);
  plan.activations = static_cast<Bytes>(x.peak);
  plan.result = static_cast<Bytes>(x.es * static_cast<double>(pass.count * s.encoder.tokens * s.encoder.hidden));
  plan.passes.push_back(std::move(pass));
  return plan;
}

// ------------------------------------------------------------------ presets
struct Preset {
  const char* name;
  Stage::Kind kind;
  DType dtype;
  EncoderShape encoder;
  VaeShape vae;
  int64_t tile = 0, tile_stride = 0, chunk = 0, chunk_stride = 0;
};

// Encoders (their Hugging Face configs): umT5-XXL (Wan's text encoder,
// google/umt5-xxl: d_model 4096, d_ff 10240, 64 heads of 64, 24 layers,
// gated GELU, 256,384 tokens; Wan pads the prompt to 512), T5-XXL v1.1
// (Flux's, 32,128 tokens, 512), CLIP ViT-L/14's text model (12 layers of
// 768, MLP 3072, 12 heads, 49,408 tokens, 77 positions), Llama 3 8B
// (HunyuanVideo's LLaVA text encoder: 32 layers of 4096, SwiGLU 14336, 32
// heads and 8 KV heads of 128; its prompt template and 256 tokens: 351).
// VAEs: Wan 2.1's (Wan-Video/Wan2.1 wan/modules/vae.py, diffusers'
// AutoencoderKLWan: base 96, dim_mult [1, 2, 4, 4], 2 residual blocks,
// temporal upsampling [True, True, False], z 16, fp32 in Wan's pipelines)
// and HunyuanVideo's (diffusers' AutoencoderKLHunyuanVideo: block_out_channels
// [128, 256, 512, 512] reversed, layers_per_block 2, spatial upsampling in
// up blocks 0-2, temporal in 1-2, z 16, fp16 in its pipeline, tiled by
// default: 256-pixel tiles every 192, 16-frame chunks every 12),
// Wan 2.2's (Wan-Video/Wan2.2 wan/modules/vae2_2.py, Wan2_2_VAE: z 48,
// decoder base 256, dim_mult [1, 2, 4, 4], 2 residual blocks + 1 an up
// block, temporal upsampling [True, True, False], 12 channels out
// unpatchified 2x2 to RGB: 16x spatial compression; fp32 in its pipelines)
// and Flux.1's 2-D decoder (black-forest-labs/flux util.py ae_params: ch 128,
// ch_mult [1, 2, 4, 4], num_res_blocks 2, z_channels 16; diffusers'
// FLUX.1-dev vae/config.json: AutoencoderKL, block_out_channels
// [128, 256, 512, 512], layers_per_block 2, latent_channels 16, no
// quant convs; bf16 in FluxPipeline, untiled by default: 49.5 M parameters).
const std::vector<Preset>& presets() {
  static const std::vector<Preset> p = {
      {"umt5-xxl", Stage::Kind::Encoder, DType::BF16, EncoderShape{24, 4096, 10240, 64, 64, 64, 256384, 512, 3}, {}},
      {"t5-xxl", Stage::Kind::Encoder, DType::BF16, EncoderShape{24, 4096, 10240, 64, 64, 64, 32128, 512, 3}, {}},
      {"clip-l", Stage::Kind::Encoder, DType::FP16, EncoderShape{12, 768, 3072, 12, 64, 12, 49408, 77, 2}, {}},
      {"llama3-8b", Stage::Kind::Encoder, DType::FP16, EncoderShape{32, 4096, 14336, 32, 128, 8, 128256, 351, 3}, {}},
      {"wan2.1-vae",
       Stage::Kind::VaeDecode,
       DType::FP32,
       {},
       VaeShape{VaeShape::Family::Wan21, 16, {384, 384, 384, 192, 96}, 2, {true, true, false}, {true, true, true}, 3, 8, 4}},
      {"wan2.2-vae",
       Stage::Kind::VaeDecode,
       DType::FP32,
       {},
       VaeShape{VaeShape::Family::Wan22, 48, {1024, 1024, 1024, 512, 256}, 2, {true, true, false}, {true, true, true}, 3, 16, 4, 2}},
      {"hunyuanvideo-vae",
       Stage::Kind::VaeDecode,
       DType::FP16,
       {},
       VaeShape{VaeShape::Family::Hunyuan, 16, {512, 512, 512, 256, 128}, 2, {false, true, true}, {true, true, true}, 3, 8, 4},
       256,
       192,
       16,
       12},
      {"flux-vae",
       Stage::Kind::VaeDecode,
       DType::BF16,
       {},
       VaeShape{VaeShape::Family::Image, 16, {512, 512, 512, 256, 128}, 2, {false, false, false}, {true, true, true}, 3, 8, 1}},
  };
  return p;
}

}  // namespace

int64_t EncoderShape::params() const {
  Emitter x(DType::BF16, 0, 0, nullptr);
  walk_encoder(*this, x);
  return static_cast<int64_t>(x.weights);
}

int64_t VaeShape::params() const {
  Emitter x(DType::BF16, 0, 0, nullptr);
  VaeWalk(*this, x, 2, 1, 1, false).run();  // two frames: every conv runs
  return static_cast<int64_t>(x.weights);
}

StagePlan stage_plan(const Stage& s, const StageJob& job) {
  StagePlan plan = s.kind == Stage::Kind::Encoder ? encoder_plan(s, job) : vae_plan(s, job);
  if (s.params) plan.weights = static_cast<Bytes>(static_cast<double>(*s.params) * dtype_bytes(s.dtype));
  return plan;
}

std::vector<std::string> stage_preset_names() {
  std::vector<std::string> n;
  for (const Preset& p : presets()) n.emplace_back(p.name);
  return n;
}

const std::vector<std::string>& stage_keys() {
  static const std::vector<std::string> keys = {"name",  "preset",     "place",      "dtype",  "prompts",  "tokens", "layers",   "tile",
                                                "chunk", "cpu_tflops", "efficiency", "params", "parallel", "host",   "copy_back"};
  return keys;
}

std::vector<Stage> read_stages(const std::string& file, const YAML::Node& node) {
  if (!node.IsSequence())
    throw InputError(location_of(file, node), "stages: expected a list of {name, preset, place: resident | offloaded | cpu, ...}");
  std::vector<Stage> out;
  for (const auto& item : node) {
    MapReader r(file, item, "stage", stage_keys());
    Stage s;
    s.where = location_of(file, item);
    s.name = r.str("name");
    for (const Stage& o : out)
      if (o.name == s.name) r.fail("name", fmt::format("'{}' is named twice", s.name));
    const std::string preset = r.choice("preset", stage_preset_names());
    for (const Preset& p : presets())
      if (preset == p.name) {
        s.kind = p.kind;
        s.dtype = p.dtype;
        s.encoder = p.encoder;
        s.vae = p.vae;
        s.tile = p.tile, s.tile_stride = p.tile_stride, s.chunk = p.chunk, s.chunk_stride = p.chunk_stride;
      }
    const bool encoder = s.kind == Stage::Kind::Encoder;
    if (auto pl = r.opt_choice("place", {"resident", "offloaded", "cpu"}))
      s.place = *pl == "resident" ? StagePlace::Resident : *pl == "offloaded" ? StagePlace::Offloaded : StagePlace::Cpu;
    if (auto d = r.opt_choice("dtype", {"bf16", "fp16", "fp32"})) s.dtype = *d == "bf16" ? DType::BF16 : *d == "fp16" ? DType::FP16 : DType::FP32;
    auto only = [&](const char* key, bool applies, const char* what) {
      if (r.has(key) && !applies) r.fail(key, fmt::format("applies to {} stages", what));
    };
    only("prompts", encoder, "encoder");
    only("tokens", encoder, "encoder");
    only("layers", encoder, "encoder");
    only("tile", !encoder, "VAE");
    only("chunk", !encoder, "VAE");
    if (auto n = r.opt_int32("prompts")) {
      if (*n < 1 || *n > 64) r.fail("prompts", "is the prompts encoded one after the other, 1..64");
      s.prompts = *n;
    }
    if (auto n = r.opt_int32("tokens")) {
      if (*n < 1 || *n > 1'000'000) r.fail("tokens", "is the encoder's sequence length, 1..1,000,000");
      s.encoder.tokens = *n;
    }
    if (auto n = r.opt_int32("layers")) {
      if (*n < 1 || *n > 1000) r.fail("layers", "is the encoder's layer count, 1..1000");
      s.encoder.layers = *n;
    }
    // tile / chunk: none, or {size, stride} in output pixels / frames.
    auto window = [&](const char* key, int64_t& size, int64_t& stride) {
      if (!r.has(key)) return;
      const YAML::Node n = r.get(key);
      if (n.IsScalar() && n.Scalar() == "none") {
        size = stride = 0;
        return;
      }
      MapReader w(file, n, key, {"size", "stride"});
      size = w.integer("size");
      stride = w.has("stride") ? w.integer("stride") : size;
      if (size < 1 || stride < 1 || stride > size) w.fail_here("size and stride are positive, stride at most size (or give: none)");
    };
    window("tile", s.tile, s.tile_stride);
    window("chunk", s.chunk, s.chunk_stride);
    if (s.vae.wan() && s.chunk > 0 && !encoder)
      r.fail("chunk", "the Wan VAE decodes one latent frame at a time (its causal cache): give no chunk");
    if (!encoder && s.tile > 0 && (s.tile % s.vae.spatial || s.tile_stride % s.vae.spatial))
      r.fail("tile", fmt::format("size and stride are multiples of the VAE's {}x compression", s.vae.spatial));
    if (auto c = r.opt_num("cpu_tflops")) {
      if (!(*c > 0 && *c <= 1000)) r.fail("cpu_tflops", "is the host's rate for place: cpu, in (0, 1000] TFLOP/s");
      s.cpu_tflops = *c;
    }
    if (auto e = r.opt_num("efficiency")) {
      if (!(*e > 0 && *e <= 1)) r.fail("efficiency", "is its kernels' share of the peak rate, in (0, 1]");
      s.efficiency = *e;
    }
    only("parallel", !encoder, "VAE");
    s.parallel = r.boolean("parallel", false);
    if (s.parallel && s.place == StagePlace::Cpu) r.fail("parallel", "splits a decode over GPUs: not with place: cpu");
    only("host", s.place == StagePlace::Offloaded, "offloaded");
    only("copy_back", s.place == StagePlace::Offloaded, "offloaded");
    if (auto h = r.opt_choice("host", {"pageable", "pinned"})) s.host = *h == "pinned" ? HostMem::Pinned : HostMem::Pageable;
    s.copy_back = r.boolean("copy_back", true);
    if (auto p = r.opt_int("params")) {
      if (*p < 0) r.fail("params", "must not be negative");
      s.params = *p;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace osim
