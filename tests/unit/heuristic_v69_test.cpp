// Heuristic v69 (docs/perf-notes.md, seventy-ninth session): at 128 rows 2- and 8-bit weights take the 4-bit
// wgmma rules for 8-48 M weights over 8 tiles per SM (wide_mid), under 5 (the few-block rule), at 7-10 (the
// one-wave rule) and the pair's short-K bound.
#include <cstdint>

#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/heuristic_helpers.hpp"

using lowbit::DType;
using lowbit::WqGemmProblem;
using lowbit::test::choose_hopper;
using lowbit::test::g128_problem;
using lowbit::test::wgmma_shape;
using lowbit::test::with_act;

TEST_CASE("choose_config v69: 2/8-bit at 128 rows take 4-bit's wgmma rules", "[config][heuristic]") {
  // The tuned layers (W8 and W2 8704×4096, W8 4608×3584 and 4352×4096; short K: 4608×2048 and 8192×1024) and
  // their neighbours, both dtypes: the config 4-bit weights get (wgmma).
  struct Layer {
    int64_t n, k;
  };
  for (Layer l : {Layer{8704, 4096}, Layer{12288, 2048}, Layer{4608, 3584}, Layer{4352, 4096},
                  Layer{5120, 4096}, Layer{4608, 2048}, Layer{5120, 2048}, Layer{8192, 1024}})
    for (int bits : {2, 8})
      for (DType act : {DType::F16, DType::BF16}) {
        INFO(l.n << "x" << l.k << " w" << bits << " " << static_cast<int>(act));
        const lowbit::WqGemmConfig four = choose_hopper(with_act(g128_problem(l.n, l.k, 128), act));
        CHECK(four.wgmma);
        CHECK(wgmma_shape(choose_hopper(with_act(g128_problem(l.n, l.k, 128, bits), act))) ==
              wgmma_shape(four));
      }
  // The tuned four in the tune's configs: stream K over 128-row blocks with the image.
  CHECK(wgmma_shape(choose_hopper(8704, 4096, 128, 8)) == "8,2,8,1 sK img");
  CHECK(wgmma_shape(choose_hopper(8704, 4096, 128, 2)) == "8,2,8,1 sK img");
  CHECK(wgmma_shape(choose_hopper(4608, 3584, 128, 8)) == "8,2,8,1 sK img");
  CHECK(wgmma_shape(choose_hopper(8192, 1024, 128, 8)) == "4,2,8,1 sk1 img");
  CHECK(wgmma_shape(choose_hopper(4608, 2048, 128, 2)) == "8,2,8,1 sk2 img");
  // Unchanged: 64 rows (2/8-bit had these rules there already), under 8 M weights.
  CHECK(choose_hopper(8704, 4096, 64, 8).wgmma);
  CHECK(!choose_hopper(4352, 1024, 128, 8).wgmma);
  // 1-bit weights follow 2; not on sm_90 without the a (no wgmma there).
  CHECK(wgmma_shape(choose_hopper(8704, 4096, 128, 1)) == "8,2,8,1 sK img");
  CHECK(!lowbit::choose_config(g128_problem(8704, 4096, 128, 8), lowbit::Arch::parse("sm_90"), 132).wgmma);
}
