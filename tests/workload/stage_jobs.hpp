// The small job the stage tests share: one rank, two DiT blocks, a one-layer
// CLIP-shaped encoder placed as asked, and the Wan VAE.
#pragma once

#include <string>

namespace osim::test {

inline std::string stage_job(const std::string& encoder_place) {
  return R"(name: w
model:
  dims: {hidden: 64}
  blocks:
    - {name: b, count: 2, params: hidden*hidden, ops: [{gemm: g, m: local, n: hidden, k: hidden}]}
video: {width: 64, height: 64, frames: 5}
steps: 2
stages:
  - {name: enc, preset: clip-l, layers: 1, place: )" +
         encoder_place + R"(, dtype: bf16}
  - {name: vae, preset: wan2.1-vae}
)";
}

}  // namespace osim::test
