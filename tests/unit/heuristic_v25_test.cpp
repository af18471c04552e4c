// Heuristic v25 (docs/perf-notes.md, forty-second session): fitted to out-of-sample tunes of twelve
// layers in neither shipped file (H200 and H100) and to an H200 bench of the new choices.
#include <cstdint>
#include <string>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"

namespace {

using lowbit::Arch;
using lowbit::WqGemmConfig;
using lowbit::WqGemmProblem;

const Arch kHopper = Arch::parse("sm_90a");

WqGemmConfig choose(int64_t n, int64_t k, int64_t m, int bits = 4) {
  WqGemmProblem p;
  p.n = n, p.k = k, p.m = m, p.bits = bits, p.group_size = 128;
  const WqGemmConfig c = lowbit::choose_config(p, kHopper, 132);
  INFO(p.str() << " -> " << c.str());
  CHECK(lowbit::can_implement(p, c, kHopper));
  return c;
}

// "wgmma mt,nt sK|skN [img]" for a warpgroup-MMA config, "mma.sync" otherwise.
std::string shape(const WqGemmConfig& c) {
  if (!c.wgmma) return "mma.sync";
  std::string s = "wgmma " + std::to_string(c.m_tiles) + "," + std::to_string(c.n_tiles) +
                  (c.stream_k ? " sK" : " sk" + std::to_string(c.split_k));
  return c.x_image ? s + " img" : s;
}

}  // namespace

TEST_CASE("choose_config v25: 32 rows on narrow K-heavy layers take wgmma stream K", "[config][heuristic]") {
  // 2-5 tiles per SM, 64 chunks or more, the K split under 0.7 wave: stream K, no image.
  for (auto [n, k] : {std::pair<int64_t, int64_t>{5120, 13824},
                      {5120, 17920},
                      {5120, 27648},
                      {2304, 16384},
                      {2560, 8192},
                      {5120, 8192}})
    CHECK(shape(choose(n, k, 32)) == "wgmma 2,2 sK");
  // Where the split makes 0.7-1 wave it stays: split 8 from 144 chunks (v24), else mma.sync.
  CHECK(shape(choose(3584, 18944, 32)) == "wgmma 2,4 sk8 img");
  CHECK(shape(choose(4096, 14336, 32)) == "mma.sync");
  CHECK(shape(choose(3584, 14336, 32)) == "mma.sync");
  // Edges: under 2 tiles per SM, under 64 chunks, 5 tiles per SM or more, other bit widths.
  CHECK(shape(choose(1280, 8192, 32)) == "mma.sync");
  CHECK(shape(choose(5120, 7936, 32)) == "mma.sync");   // 62 chunks
  CHECK(shape(choose(6144, 16384, 32)) == "mma.sync");  // 5.8 tiles per SM
  for (int bits : {2, 3, 8}) CHECK(shape(choose(5120, 13824, 32, bits)) == "mma.sync");
}

TEST_CASE("choose_config v25: 128 rows take stream K where the K split leaves under 0.7 wave",
          "[config][heuristic]") {
  // 40 column blocks of 128 rows, split in two: 80 blocks (v24 kept that split), at 2, 4 and 8 bits.
  for (int bits : {2, 4, 8})
    for (int64_t k : {13824, 17920, 27648}) CHECK(shape(choose(5120, k, 128, bits)) == "wgmma 8,2 sK img");
  // Where four pieces make 0.7-1 wave, v24's four-way split stays; a split that fills a wave stays.
  CHECK(shape(choose(4096, 14336, 128)) == "wgmma 8,2 sk4 img");
  CHECK(shape(choose(7168, 5120, 128)) == "wgmma 8,2 sk2 img");
  // 64 rows as before.
  CHECK(shape(choose(5120, 13824, 64)) == "wgmma 4,2 sK img");
}

TEST_CASE("choose_config v25: few-block K-heavy layers at 128 rows take all rows and the image",
          "[config][heuristic]") {
  CHECK(shape(choose(2304, 16384, 128)) == "wgmma 8,2 sK img");  // 128 chunks
  // Under 96 chunks as v24 (64-row blocks, no image under 4 tiles per SM); at 64 rows no image.
  CHECK(shape(choose(2560, 8192, 128)) == "wgmma 4,2 sK");
  CHECK(shape(choose(1280, 8192, 128)) == "wgmma 4,2 sK");
  CHECK(shape(choose(2304, 16384, 64)) == "wgmma 4,2 sK");
}
