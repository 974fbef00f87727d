// A request's stages: an encoder's and a VAE decoder's FLOPs and weights
// against their closed forms, and the ops a schedule with stages runs.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "gpu/sim_fixture.hpp"
#include "io/text_file.hpp"
#include "workload/dit.hpp"
#include "workload/stage_jobs.hpp"

using namespace osim;

namespace {
// Kernels, collectives, copies and markers whose label starts with `prefix`.
int64_t count_ops(const Schedule& s, int rank, const std::string& prefix) {
  const auto& ops = *s.programs[static_cast<size_t>(rank)].ops;
  return std::count_if(ops.begin(), ops.end(), [&](const Op& op) {
    const bool work = op.kind == OpKind::Kernel || op.kind == OpKind::Collective || op.kind == OpKind::Memcpy || op.kind == OpKind::Marker;
    return work && op.label.rfind(prefix, 0) == 0;
  });
}
}  // namespace

TEST_CASE("an encoder stage: FLOPs and weights of its blocks in closed form, once per prompt") {
  Stage s;
  s.kind = Stage::Kind::Encoder;
  s.encoder = EncoderShape{2, 64, 128, 4, 16, 2, 100, 8, 3};  // 2 layers, h 64, f 128, 4 heads of 16, 2 KV heads, 100 tokens' embeddings, 8 tokens
  const double T = 8, h = 64, f = 128, q = 4 * 16, kv = 2 * 16;
  // Per layer: q/k/v, attention (4 x heads x T^2 x head_dim), out, gated MLP up (2f) and down.
  const double layer = 2 * T * (q + 2 * kv) * h + 4 * 4 * T * T * 16 + 2 * T * h * q + 2 * T * 2 * f * h + 2 * T * h * f;
  const StagePlan p = stage_plan(s, StageJob{64, 64, 5, 2, 0});
  CHECK(p.flops == doctest::Approx(2 * 2 * layer));  // 2 prompts (CFG) x 2 layers
  CHECK(s.encoder.params() == 2 * (64 * (64 + 64) + 64 * 64 + 3 * 64 * 128) + 100 * 64);
  CHECK(p.weights == 2 * s.encoder.params());  // bf16
  REQUIRE(p.passes.size() == 1);
  CHECK(p.passes[0].count == 2);
  CHECK(p.passes[0].ops.size() == 2 + 10 * 2);  // embedding, 10 ops a layer, the final norm
  CHECK(p.result == 2 * 2 * 8 * 64);
  // umT5-XXL's: 24 x (4 h^2 + 3 h f) + 256,384 x h at h = 4096, f = 10240.
  CHECK(EncoderShape{24, 4096, 10240, 64, 64, 64, 256384, 512, 3}.params() == 24 * (4 * 4096 * 4096LL + 3 * 4096 * 10240LL) + 256384LL * 4096);
}

TEST_CASE("a Wan-shaped VAE decode stage: its convolutions' FLOPs and weights in closed form, one latent frame a pass") {
  Stage s;
  s.kind = Stage::Kind::VaeDecode;
  // z 4; conv in to 8; the mid block at 8; up block 0 (8 -> 8, time and space upsampling to 8/2); up block 1 (4 -> 4); out 3.
  s.vae = VaeShape{VaeShape::Family::Wan21, 4, {8, 8, 4}, 1, {true}, {true}, 3, 2, 4};
  auto conv = [](double m, double cin, double cout, double k) { return 2 * m * cin * cout * k; };
  // A pass of one latent frame of 2 x 2: m = 4 voxels until the upsampling.
  auto pass = [&](bool first) {
    const double m0 = 4, m1 = first ? 16 : 32;              // after: 4 x 4, one frame (the video's first) or two
    double f = conv(m0, 4, 8, 27);                          // conv in
    f += 2 * 2 * conv(m0, 8, 8, 27);                        // two mid residual blocks of two convs
    f += 2 * m0 * 24 * 8 + 4 * 4 * 4 * 8 + 2 * m0 * 8 * 8;  // mid attention: qkv, one head over 4 tokens of 8, proj
    f += 2 * 2 * conv(m0, 8, 8, 27);                        // up block 0: 2 residual blocks
    if (!first) f += conv(m0, 8, 16, 3);                    // time conv (the first frame keeps its own)
    f += conv(m1, 8, 4, 9);                                 // 2-D upsampling conv, halving
    f += 2 * 2 * conv(m1, 4, 4, 27);                        // up block 1
    f += conv(m1, 4, 3, 27);                                // conv out
    return f;
  };
  const StagePlan p = stage_plan(s, StageJob{4, 4, 5, 1, 0});  // 2 latent frames of 2 x 2
  REQUIRE(p.passes.size() == 3);                               // the first frame, the rest, the frames concatenated
  CHECK(p.flops == doctest::Approx(pass(true) + pass(false)));
  // conv in; the mid block's 4 convs, qkv and proj; up block 0's 4 convs, time conv and upsampling conv; up block 1's 4; conv out.
  const int64_t weights = 4 * 8 * 27 + 4 * 8 * 8 * 27 + 8 * 24 + 8 * 8 + 4 * 8 * 8 * 27 + 8 * 16 * 3 + 8 * 4 * 9 + 4 * 4 * 4 * 27 + 4 * 3 * 27;
  CHECK(s.vae.params() == weights);
  CHECK(p.weights == 2 * weights);
  CHECK(p.result == 2 * 3 * 5 * 4 * 4);  // bf16 frames
  // Spatial tiles of 2 x 2 output pixels every 2 over 4 x 4: four passes of a quarter each.
  s.tile = s.tile_stride = 2;
  const StagePlan tiled = stage_plan(s, StageJob{4, 4, 5, 1, 0});
  CHECK(tiled.passes[0].count == 4);
  CHECK(tiled.flops < p.flops);
}

TEST_CASE("a Wan-shaped VAE's convolutions as its vae.py runs them: cache clone, cat, F.pad, the unpadded kernel, the bias") {
  Stage s;
  s.kind = Stage::Kind::VaeDecode;
  s.vae = VaeShape{VaeShape::Family::Wan21, 4, {8, 8, 4}, 1, {true}, {true}, 3, 2, 4};
  const StagePlan p = stage_plan(s, StageJob{4, 4, 5, 1, 0});  // 2 latent frames of 2 x 2, bf16
  auto find = [](const std::vector<Op>& ops, const std::string& label) {
    const auto it = std::find_if(ops.begin(), ops.end(), [&](const Op& op) { return op.label == label; });
    REQUIRE(it != ops.end());
    return it;
  };
  // The first pass: conv in's input (4 channels, one 2 x 2 frame) cloned as the cache, then
  // padded by F.pad: two zero frames in front and a row and column each side (3 x 4 x 4).
  const auto& first = p.passes.at(0).ops;
  REQUIRE(first.size() > 4);
  CHECK(first[0].label == "conv in cache");
  CHECK(first[0].hbm_bytes == 2.0 * (4 * 1 * 2 * 2) * 2);
  CHECK(first[1].label == "conv in pad");
  CHECK(first[1].access == Access::Pad);
  CHECK(first[1].hbm_bytes == 2.0 * (4 * 1 * 2 * 2 + 4 * 3 * 4 * 4));
  REQUIRE(first[2].conv);
  CHECK(*first[2].conv == ConvShape{4, 48, 4, 8, 27, false, false});
  CHECK(first[3].label == "conv in bias");
  CHECK(first[3].access == Access::Indexed);
  CHECK(first[3].hbm_bytes == 2.0 * (8 * 2 * 2) * 2);
  // A later pass: the cache of one frame gets the previous pass's last in front, the two cached frames go in front of the input (cat),
  // and F.pad pads only the sides of the three frames.
  const auto& later = p.passes.at(1).ops;
  CHECK(later[1].label == "conv in cache cat");
  CHECK(later[1].hbm_bytes == 2.0 * (4 * 2 * 2 * 2) * 2);
  CHECK(later[2].label == "conv in cat");
  CHECK(later[2].access == Access::Indexed);
  CHECK(later[2].hbm_bytes == 2.0 * (4 * 3 * 2 * 2) * 2);
  CHECK(later[3].hbm_bytes == 2.0 * (4 * 3 * 2 * 2 + 4 * 3 * 4 * 4));
  // Its norms: F.normalize over the channels (3 passes), then scale, gamma (per channel) and bias.
  const auto norm = find(first, "mid res0 norm1");
  CHECK(norm->access == Access::ChannelNorm);
  CHECK(norm->hbm_bytes == 3.0 * (8 * 2 * 2) * 2);
  CHECK(norm[2].label == "mid res0 norm1 gamma");
  CHECK(norm[2].access == Access::Indexed);
  // The attention's q, k and v from a 1x1 convolution, transposed to tokens by a copy.
  CHECK(*find(first, "mid attn qkv")->conv == ConvShape{4, 4, 8, 24, 1, false, false});
  CHECK(find(first, "mid attn qkv transpose")->hbm_bytes == 2.0 * (24 * 2 * 2) * 2);
  // The 2-D upsampling conv pads by itself; before it the nearest upsampling in fp32 (bf16 converted there and back).
  const auto up = find(first, "up0 upsample conv");
  CHECK(up[-1].label == "up0 upsample from fp32");
  CHECK(up[-2].access == Access::Upsample);
  CHECK(up[-2].dtype == DType::FP32);
  CHECK(up[-2].hbm_bytes == 4.0 * (8 * 2 * 2 + 8 * 4 * 4));
  CHECK(*up->conv == ConvShape{16, 16, 8, 4, 9, false, false});
  // A later pass's time conv: its two halves interleaved into twice the frames.
  CHECK(find(later, "up0 time stack")->hbm_bytes == 2.0 * (8 * 2 * 2 * 2) * 2);
  // The decoded frames concatenated: the second pass writes its 1 + 4 frames of 3 x 4 x 4 and reads as many.
  REQUIRE(p.passes.at(2).ops.size() == 1);
  CHECK(p.passes.at(2).ops[0].hbm_bytes == 2.0 * (5 * 3 * 4 * 4) * 2);
  // fp32: the TF32 rate; the element width on every memory-bound kernel.
  s.dtype = DType::FP32;
  const StagePlan fp32 = stage_plan(s, StageJob{4, 4, 5, 1, 0});
  CHECK(fp32.passes.at(0).ops[2].conv->tf32);
  CHECK(fp32.passes.at(0).ops[1].dtype == DType::FP32);
}

TEST_CASE("an image VAE decode stage (Flux's 2-D decoder): 3x3 convolutions in closed form, one frame") {
  Stage s;
  s.kind = Stage::Kind::VaeDecode;
  // z 4; conv in to 8; the mid block at 8; up block 0 (8 -> 8, then 2x upsampling and its conv); up block 1 (8 -> 4, a shortcut); out 3.
  s.vae = VaeShape{VaeShape::Family::Image, 4, {8, 8, 4}, 1, {false}, {true}, 3, 2, 1};
  auto conv = [](double m, double cin, double cout, double k) { return 2 * m * cin * cout * k; };
  const double m0 = 4, m1 = 16;  // a latent of 2 x 2 pixels, then 4 x 4
  double f = conv(m0, 4, 8, 9);                           // conv in
  f += 2 * 2 * conv(m0, 8, 8, 9);                         // two mid residual blocks of two convs
  f += 2 * m0 * 24 * 8 + 4 * 4 * 4 * 8 + 2 * m0 * 8 * 8;  // mid attention: qkv, one head over the 4 pixels, proj
  f += 2 * 2 * conv(m0, 8, 8, 9);                         // up block 0: 2 residual blocks
  f += conv(m1, 8, 8, 9);                                 // 2-D upsampling conv, keeping the width
  f += conv(m1, 8, 4, 9) + conv(m1, 4, 4, 9) + conv(m1, 8, 4, 1) + 2 * conv(m1, 4, 4, 9);  // up block 1: 8 -> 4 with a 1x1 shortcut
  f += conv(m1, 4, 3, 9);                                 // conv out
  const StagePlan p = stage_plan(s, StageJob{4, 4, 1, 1, 0});
  REQUIRE(p.passes.size() == 1);
  CHECK(p.flops == doctest::Approx(f));
  const int64_t weights = 4 * 8 * 9 + 4 * 8 * 8 * 9 + 8 * 24 + 8 * 8 + 4 * 8 * 8 * 9 + 8 * 8 * 9 + (8 * 4 * 9 + 4 * 4 * 9 + 8 * 4) + 2 * 4 * 4 * 9 + 4 * 3 * 9;
  CHECK(s.vae.params() == weights);
  CHECK(p.result == 2 * 3 * 4 * 4);
  // A video is refused: an image VAE decodes one frame.
  CHECK_THROWS_AS((void)stage_plan(s, StageJob{4, 4, 5, 1, 0}), InputError);
  // The preset: Flux.1's decoder holds 49.5 M parameters (conv in 16 -> 512; mid 4 convs and attention at 512; up blocks to
  // 512, 512, 256, 128 with three upsampling convs; conv out 128 -> 3).
  const DitWorkload w = parse_workload_string(R"(name: w
model:
  dims: {hidden: 64}
  blocks:
    - {name: b, count: 1, params: 1, ops: [{gemm: g, m: local, n: hidden, k: hidden}]}
video: {width: 64, height: 64, frames: 1}
stages:
  - {name: vae, preset: flux-vae}
)",
                                              "w.yaml");
  REQUIRE(w.stages.size() == 1);
  const int64_t c512 = 512 * 512 * 9;
  CHECK(w.stages[0].vae.params() == 16 * 512 * 9 + 4 * c512 + 4 * 512 * 512 + 2 * (6 * c512 + c512) +
                                        (512 * 256 * 9 + 5 * 256 * 256 * 9 + 512 * 256 + 256 * 256 * 9) +
                                        (256 * 128 * 9 + 5 * 128 * 128 * 9 + 256 * 128) + 128 * 3 * 9);
  CHECK(w.stages[0].vae.params() == 49507712);
  CHECK(w.stages[0].dtype == DType::BF16);
}

TEST_CASE("a schedule with stages: the encoder before the steps, moved in and out, the VAE after the steps' end") {
  const std::string yaml = test::stage_job("offloaded");
  const DitWorkload w = parse_workload_string(yaml, "w.yaml");
  const Schedule s = generate_schedule(w);
  CHECK(count_ops(s, 0, "enc ") == 2 * 12);  // two prompts (CFG serial) of the embedding, one layer's 10 ops, the final norm
  // The Wan 2.1 VAE (fp32) as its vae.py runs: the first latent frame 302 kernels: 30 causal convs of
  // 4 (cache clone, F.pad, the kernel, its bias), 3 upsampling and 2 attention 1x1 convs of 2, the
  // shortcut of 3, 30 norms of 4 (normalize, scale, gamma, bias), 29 SiLUs, 15 adds, 3 upsamplings,
  // the attention and its transpose. Each later frame: a cat before each causal conv, and a cache cat
  // where the input is one frame (11 convs); two time convs with their copies and stack (7 + 6). The
  // decoded frames concatenated once.
  CHECK(count_ops(s, 0, "vae ") == 302 + (302 + 30 + 11 + 13) + 1);
  CHECK(count_ops(s, 0, "h2d enc") == 1);
  CHECK(count_ops(s, 0, "d2h enc") == 1);
  CHECK(count_ops(s, 0, "stage ") == 2);
  // In order: the encoder, the steps, their end, the VAE.
  const auto& ops = *s.programs[0].ops;
  auto at = [&](const std::string& label) {
    return std::find_if(ops.begin(), ops.end(), [&](const Op& op) { return op.label == label; }) - ops.begin();
  };
  CHECK(at("stage enc") < at("step 0 cond"));
  CHECK(at("step 1 uncond") < at(kStepsEndMarker));
  CHECK(at(kStepsEndMarker) < at("stage vae"));
  // Without stages: no markers beyond the steps'.
  const DitWorkload plain = parse_workload_string(yaml.substr(0, yaml.find("stages:")), "w.yaml");
  CHECK(count_ops(generate_schedule(plain), 0, "stage ") == 0);
  CHECK(count_ops(generate_schedule(plain), 0, kStepsEndMarker) == 0);
  // Run: the request takes longer than its steps.
  const hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/dgx-h100.yaml"));
  const ExecResult with = execute(s, topo, w.params), without = execute(generate_schedule(plain), topo, plain.params);
  CHECK(with.makespan > without.makespan);
}

TEST_CASE("an offloaded stage's host copy: pageable and copied back by default, pinned and dropped where the workload says so") {
  const Schedule pageable = generate_schedule(parse_workload_string(test::stage_job("offloaded"), "w.yaml"));
  const Schedule pinned = generate_schedule(parse_workload_string(test::stage_job("offloaded, host: pinned, copy_back: false"), "w.yaml"));
  auto copy = [](const Schedule& s, const std::string& label) {
    const auto& ops = *s.programs[0].ops;
    return std::find_if(ops.begin(), ops.end(), [&](const Op& op) { return op.label == label; });
  };
  REQUIRE(copy(pageable, "h2d enc") != pageable.programs[0].ops->end());
  CHECK(copy(pageable, "h2d enc")->host_mem == HostMem::Pageable);
  CHECK(count_ops(pageable, 0, "d2h enc") == 1);
  REQUIRE(copy(pinned, "h2d enc") != pinned.programs[0].ops->end());
  CHECK(copy(pinned, "h2d enc")->host_mem == HostMem::Pinned);
  CHECK(count_ops(pinned, 0, "d2h enc") == 0);
  CHECK_THROWS_WITH_AS(parse_workload_string(test::stage_job("resident, copy_back: false"), "w.yaml"),
                       doctest::Contains("'copy_back': applies to offloaded stages"), InputError);
}

TEST_CASE("a parallel VAE decode: each rank of the Ulysses group a band of rows, halos exchanged before each 3-high conv") {
  const std::string yaml = R"(name: w
model:
  dims: {hidden: 64}
  blocks:
    - {name: b, count: 2, params: hidden*hidden, ops: [{gemm: g, m: local, n: hidden, k: hidden}]}
video: {width: 64, height: 64, frames: 5}
steps: 1
cfg: none
parallelism: {ulysses: 2}
stages:
  - {name: vae, preset: wan2.1-vae, parallel: true}
)";
  const DitWorkload w = parse_workload_string(yaml, "w.yaml");
  const StagePlan one = stage_plan(w.stages[0], StageJob{64, 64, 5, 1, 0});
  const StagePlan two = stage_plan(w.stages[0], w.stage_job(0));
  // Half the rows a rank: the convolutions' FLOPs halve (the attention's a rank's queries over every key).
  CHECK(two.flops == doctest::Approx(one.flops / 2).epsilon(0.01));
  const Schedule s = generate_schedule(w);
  // Each of the Wan decoder's 33 convs 3 high (conv in, 4 + 3 x 6 in residual blocks, 3 upsampling, conv out; not
  // the 3x1x1 time convs) sends its edge rows both ways: 2 sends and 2 receives, in both passes.
  // Beside the kernels and the copies of the one-rank decode (see the test above): and 2 key/value gathers, 1 of the frames.
  // (No frames concatenated: the frames gather assembles them.)
  CHECK(count_ops(s, 0, "vae ") - 302 - (302 + 30 + 11 + 13) == 2 * 33 * 4 + 2 + 1);
  CHECK(count_ops(s, 0, "vae frames gather") == 1);
  CHECK(count_ops(s, 0, "vae mid attn kv gather") == 2);
  const hw::Topology dgx(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/dgx-h100.yaml"));
  const ExecResult r = execute(s, dgx, w.params);  // the exchanges pair up: the run ends
  CHECK(r.makespan > Time::zero());
}

TEST_CASE("a convolution's layout copies: its input, weights and output again, as conv.py --workspace measured them") {
  // Closed form: a channels-first 3x3x3 conv holds channels-last copies of all three; one tap or channels-last tensors none.
  const ConvShape c{10, 12, 4, 8, 27, false, false};
  CHECK(conv_layout_copies_bytes(c, 2.0) == 2.0 * (4 * 12 + 8 * 10 + 4 * 8 * 27));
  CHECK(conv_layout_copies_bytes(ConvShape{10, 10, 4, 8, 1, false, false}, 2.0) == 0.0);
  CHECK(conv_layout_copies_bytes(ConvShape{10, 12, 4, 8, 27, true, true}, 4.0) == 0.0);
  // Against the H100's measured rows (the allocator's peak during each call beyond its tensors): every channels-first call
  // of more than one tap whose input and output hold 256 MiB or more, within 4 % (below that cuDNN's own few tens of MiB show).
  const nlohmann::json doc = nlohmann::json::parse(
      read_maybe_gzip(std::string(OVERLAPSIM_SOURCE_DIR) + "/validate/reference/h100-sxm/conv-workspace/conv-workspace.json.gz"));
  int checked = 0;
  for (const auto& r : doc.at("results")) {
    const auto k = r.at("kernel").get<std::vector<int>>();
    const int taps = k[0] * k[1] * k[2];
    const double in = r.at("in_bytes").get<double>(), out = r.at("out_bytes").get<double>();
    if (r.at("layout") != "ncdhw" || taps == 1 || in + out < 256.0 * (1 << 20)) continue;
    const double es = r.at("dtype") == "fp32" ? 4.0 : 2.0;
    const int cin = r.at("cin").get<int>(), cout = r.at("cout").get<int>();
    const ConvShape shape{r.at("frames").get<int>() * r.at("h").get<int>() * r.at("w").get<int>(), static_cast<int32_t>(in / (es * cin)), cin, cout,
                          taps, es == 4.0, false};
    CAPTURE(r.dump());
    CHECK(r.at("workspace_bytes").get<double>() == doctest::Approx(conv_layout_copies_bytes(shape, es)).epsilon(0.04));
    ++checked;
  }
  CHECK(checked == 95);
}
