// Wan2.2 TI2V-5B's request: the Wan 2.2 VAE decoder (vae2_2.py) against its
// closed forms, and the model's 32-pixel tokens.
#include <doctest/doctest.h>

#include <algorithm>

#include "core/errors.hpp"
#include "workload/dit.hpp"
#include "workload/stages.hpp"

using namespace osim;

namespace {
const Op& find(const std::vector<Op>& ops, const std::string& label) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const Op& op) { return op.label == label; });
  REQUIRE(it != ops.end());
  return *it;
}
}  // namespace

TEST_CASE("a Wan 2.2 VAE decode stage: widths kept by the upsampling convs, DupUp3D shortcuts, 2x2 patches out, in closed form") {
  Stage s;
  s.kind = Stage::Kind::VaeDecode;
  // z 4; conv in to 8; the mid block at 8; up block 0 (8 -> 8, time and space upsampling, its conv keeping 8); up block 1
  // (8 -> 4 with a 1x1 shortcut, no upsampling); out 3 x 2 x 2 = 12 channels; 4x spatial compression with the patches.
  s.vae = VaeShape{VaeShape::Family::Wan22, 4, {8, 8, 4}, 1, {true}, {true}, 3, 4, 4, 2};
  auto conv = [](double m, double cin, double cout, double k) { return 2 * m * cin * cout * k; };
  auto pass = [&](bool first) {
    const double m0 = 4, m1 = first ? 16 : 32;              // 2 x 2 latent positions, then 4 x 4 of one frame or two
    double f = conv(m0, 4, 8, 27);                          // conv in
    f += 2 * 2 * conv(m0, 8, 8, 27);                        // two mid residual blocks of two convs
    f += 2 * m0 * 24 * 8 + 4 * 4 * 4 * 8 + 2 * m0 * 8 * 8;  // mid attention per frame: qkv, one head over 4 tokens of 8, proj
    f += 2 * 2 * conv(m0, 8, 8, 27);                        // up block 0: 2 residual blocks
    if (!first) f += conv(m0, 8, 16, 3);                    // time conv
    f += conv(m1, 8, 8, 9);                                 // 2-D upsampling conv, keeping the width
    f += conv(m1, 8, 4, 27) + conv(m1, 4, 4, 27) + conv(m1, 8, 4, 1) + 2 * conv(m1, 4, 4, 27);  // up block 1
    f += conv(m1, 4, 12, 27);                               // conv out: 3 channels x 2 x 2 pixels
    return f;
  };
  const StagePlan p = stage_plan(s, StageJob{8, 8, 5, 1, 0});  // 2 latent frames of 2 x 2 (8 x 8 pixels)
  REQUIRE(p.passes.size() == 4);                               // the first frame, the rest, the frames concatenated, unpatchified
  CHECK(p.flops == doctest::Approx(pass(true) + pass(false)));
  const int64_t weights = 4 * 8 * 27 + 4 * 8 * 8 * 27 + 8 * 24 + 8 * 8 + 4 * 8 * 8 * 27 + 8 * 16 * 3 + 8 * 8 * 9 +
                          (8 * 4 * 27 + 4 * 4 * 27 + 8 * 4) + 2 * 4 * 4 * 27 + 4 * 12 * 27;
  CHECK(s.vae.params() == weights);
  CHECK(p.result == 2 * 3 * 5 * 8 * 8);  // bf16 RGB frames
  // Up block 0 computes from a clone of its input (8 x 1 x 2 x 2) and adds it duplicated to the output's size: the
  // channels repeated to 8 x 2 (frames) x 4 (pixels) of the input's positions, permuted into place, the first frame's
  // extra one dropped where the video starts (one 4 x 4 frame), then added.
  const auto& first = p.passes.at(0).ops;
  CHECK(find(first, "up0 clone").hbm_bytes == 2.0 * 32 * 2);
  CHECK(find(first, "up0 shortcut repeat").hbm_bytes == 2.0 * (32 + 256) / 2 * 2);
  CHECK(find(first, "up0 shortcut permute").hbm_bytes == 2.0 * 256 * 2);
  CHECK(find(first, "up0 shortcut add").hbm_bytes == 2.0 * (8 * 1 * 4 * 4) * 3);
  CHECK(find(p.passes.at(1).ops, "up0 shortcut add").hbm_bytes == 2.0 * (8 * 2 * 4 * 4) * 3);
  // The last block clones its input too, but upsamples nothing: no shortcut.
  CHECK(find(first, "up1 clone").hbm_bytes == 2.0 * (8 * 1 * 4 * 4) * 2);
  CHECK(std::none_of(first.begin(), first.end(), [](const Op& op) { return op.label == "up1 shortcut add"; }));
  // The patches put in place: the RGB frames read and written.
  REQUIRE(p.passes.at(3).ops.size() == 1);
  CHECK(p.passes.at(3).ops[0].label == "unpatchify");
  CHECK(p.passes.at(3).ops[0].hbm_bytes == 2.0 * (3 * 5 * 8 * 8) * 2);
}

TEST_CASE("the wan2.2-vae preset: vae2_2.py's decoder weights, 16x compression") {
  const std::string yaml = R"(name: w
model: {preset: wan2.2-ti2v-5b}
video: {width: 1280, height: 704, frames: 121}
stages:
  - {name: vae, preset: wan2.2-vae}
)";
  const DitWorkload w = parse_workload_string(yaml, "w.yaml");
  // Wan2.2 TI2V-5B: 30 blocks of 3072; (121 - 1) / 4 + 1 = 31 latent frames of 704 / 32 x 1280 / 32 tokens.
  CHECK(w.model.blocks == 30);
  CHECK(w.model.hidden == 3072);
  CHECK(w.model.heads == 24);
  CHECK(w.tokens == 31 * 22 * 40);
  REQUIRE(w.stages.size() == 1);
  // The decoder's convolution weights and attention projections (no biases, no norms' gammas), counted from vae2_2.py's
  // Decoder3d(dim 256, z 48, dim_mult [1, 2, 4, 4], 2 residual blocks): 554,992,640; the preset's VAE outside the blocks
  // (encoder and decoder with biases: the 2.82 GB fp32 checkpoint) 704,688,668.
  CHECK(w.stages[0].vae.params() == 554992640);
  CHECK(w.stages[0].vae.spatial == 16);
  const auto vae = std::find_if(w.model.spec.outside.begin(), w.model.spec.outside.end(), [](const OutsideModel& o) { return o.name == "vae"; });
  REQUIRE(vae != w.model.spec.outside.end());
  CHECK(vae->params == "704688668");
}

TEST_CASE("a model's tokens and its VAE agree: TI2V-5B's 32-pixel tokens refuse 720 rows and an 8x VAE") {
  const std::string head = "name: w\nmodel: {preset: wan2.2-ti2v-5b}\n";
  CHECK_THROWS_WITH_AS(parse_workload_string(head + "video: {width: 1280, height: 720, frames: 121}\n", "w.yaml"),
                       doctest::Contains("multiples of 32"), InputError);
  CHECK_THROWS_WITH_AS(
      parse_workload_string(head + "video: {width: 1280, height: 704, frames: 121}\nstages:\n  - {name: vae, preset: wan2.1-vae}\n", "w.yaml"),
      doctest::Contains("this VAE compresses 8x, but model wan2.2-ti2v-5b takes a token per 32 pixels"), InputError);
  // The 14B models keep 16-pixel tokens: 81 frames at 1280 x 720.
  const DitWorkload a14b = parse_workload_string("name: w\nmodel: {preset: wan2.2-14b}\nvideo: {width: 1280, height: 720, frames: 81}\n", "w.yaml");
  CHECK(a14b.tokens == 21 * 45 * 80);
}
