// Stream K (wgmma configs): the step arithmetic the kernel runs, checked against an enumeration (with
// the head-waits-last protocol it relies on), and the config's rules, file form, kernel name and
// launch geometry.
#include "../../templates/common/stream_k.cuh"  // plain integer arithmetic, host-compilable

#include <string>
#include <tuple>
#include <vector>

#include "kernels/wq_gemm_internal.hpp"
#include "lowbit/lowbit.hpp"
#include "support/catch.hpp"
#include "unit/unit_helpers.hpp"

using lowbit::Arch;
using lowbit::DType;
using lowbit::WqGemmConfig;
using lowbit::WqGemmProblem;
namespace kern = lowbit::kern;

TEST_CASE("stream K: blocks cover every step once; pieces count the blocks of each tile", "[stream_k]") {
  for (long long steps : {1, 2, 5, 32, 224})
    for (long long tiles : {1, 3, 112, 113, 600})
      for (long long blocks : {1, 2, 7, 132, 264, 1000}) {
        const long long work = tiles * steps;
        if (blocks > work) continue;  // the launch never has more blocks than steps
        std::vector<long long> owner(static_cast<std::size_t>(work), -1);
        for (long long b = 0; b < blocks; ++b)
          for (long long w = kern::stream_k_begin(b, work, blocks);
               w < kern::stream_k_begin(b + 1, work, blocks); ++w) {
            REQUIRE(owner[static_cast<std::size_t>(w)] == -1);
            owner[static_cast<std::size_t>(w)] = b;
          }
        REQUIRE(kern::stream_k_begin(blocks, work, blocks) == work);
        for (long long w = 0; w < work; ++w) {
          CAPTURE(steps, tiles, blocks, w);
          REQUIRE(owner[static_cast<std::size_t>(w)] == kern::stream_k_block_of(w, work, blocks));
        }
        for (long long u = 0; u < tiles; ++u) {
          unsigned distinct = 1;
          for (long long w = u * steps + 1; w < (u + 1) * steps; ++w)
            distinct += owner[static_cast<std::size_t>(w)] != owner[static_cast<std::size_t>(w - 1)];
          CAPTURE(steps, tiles, blocks, u);
          REQUIRE(kern::stream_k_pieces(u, steps, work, blocks) == distinct);
          if (distinct == 1) continue;
          // The kernel's protocol: the head (the tile's first steps) is its block's last piece, so it
          // waits at the end of its run; every other piece is its block's first, so it never waits
          // before it counts itself in (no block waits on a block that waits).
          const long long head = owner[static_cast<std::size_t>(u * steps)];
          REQUIRE(kern::stream_k_begin(head + 1, work, blocks) <= (u + 1) * steps);
          for (long long w = u * steps + 1; w < (u + 1) * steps; ++w) {
            const long long b = owner[static_cast<std::size_t>(w)];
            if (b != owner[static_cast<std::size_t>(w - 1)])
              REQUIRE(kern::stream_k_begin(b, work, blocks) == w);
          }
        }
      }
}

TEST_CASE("stream K: rules, JSON, name, geometry", "[stream_k]") {
  WqGemmProblem p;
  p.m = 64, p.n = 28672, p.k = 4096, p.bits = 4, p.group_size = 128;
  const Arch hopper = Arch::parse("sm_90a");
  WqGemmConfig c;
  c.m_tiles = 4, c.n_tiles = 4, c.warps_n = 8, c.warps_k = 1, c.split_k = 1, c.stages = 3, c.wgmma = true;
  c.stream_k = true;
  std::string why;
  CHECK(lowbit::can_implement(p, c, hopper, &why));
  INFO(why);
  WqGemmConfig split = c, mma_sync = c;
  split.split_k = 2;
  mma_sync.wgmma = false, mma_sync.warps_n = 4;
  for (const WqGemmConfig& bad : {split, mma_sync}) {
    CHECK_FALSE(lowbit::can_implement(p, bad, hopper, &why));
    CHECK(lowbit::test::contains(why, "stream_k needs wgmma and split_k = 1"));
  }
  // Optional in files: absent reads as false, false is not written, anything but a boolean is refused.
  WqGemmConfig plain = c;
  plain.stream_k = false;
  CHECK_FALSE(lowbit::wq::to_json(plain).contains("stream_k"));
  CHECK(lowbit::wq::config_from_json(lowbit::wq::to_json(c)) == c);
  auto bad = lowbit::wq::to_json(c);
  bad["stream_k"] = 1;
  CHECK_FALSE(lowbit::wq::config_from_json(bad).has_value());
  // Its own kernel: the name and the template's next-to-last argument (the last is x_image).
  const auto spec = lowbit::wq::kernel_spec(p, c, 64);
  CHECK(lowbit::test::contains(spec.name, "wgsk"));
  CHECK(lowbit::test::contains(spec.name_expression, ", true, false>"));
  CHECK(lowbit::test::contains(lowbit::wq::kernel_spec(p, plain, 64).name_expression, ", false, false>"));
  CHECK(lowbit::test::contains(c.str(), "stream_k"));
  // 112 column blocks × 32 chunks × 1 row block; the grid is the resident blocks, or fewer steps.
  CHECK(lowbit::wq::stream_k_steps(p, c, 64) == 112 * 32);
  CHECK(lowbit::wq::stream_k_steps(p, c, 65) == 2 * 112 * 32);
  const auto g = lowbit::wq::geometry(p, c, lowbit::test::kArch90, 64, 64, 132);
  CHECK(g.grid_x == 132);
  CHECK(g.grid_y == 1);
  CHECK(g.grid_z == 1);
  CHECK(lowbit::wq::geometry(p, c, lowbit::test::kArch90, 64, 64, 100000).grid_x == 112 * 32);
  std::string what;
  try {
    lowbit::wq::geometry(p, c, lowbit::test::kArch90, 64, 64);
  } catch (const lowbit::Error& e) {
    what = e.what();
  }
  CHECK(lowbit::test::contains(what, "resident blocks"));
  // Its workspace: the split-K one (counters, one fp32 slice) and a scratch slot per output tile, which
  // the functional API's bound covers for every config shape.
  for (int64_t m : {1, 17, 64, 65, 130}) {
    for (auto [mt, nt, wn] : {std::tuple{4, 4, 8}, {8, 2, 8}, {1, 2, 4}, {2, 4, 4}}) {
      WqGemmProblem pm = p;
      pm.m = m, pm.n = 28672 - 8;
      WqGemmConfig e = c;
      e.m_tiles = mt, e.n_tiles = nt, e.warps_n = wn;
      CAPTURE(m, mt, nt, wn);
      const std::size_t scratch = lowbit::wq::stream_k_scratch_bytes(pm, e);
      CHECK(scratch >= static_cast<std::size_t>(pm.m * pm.n * 4));
      CHECK(scratch % 256 == 0);  // the counters after it stay aligned
      CHECK(lowbit::workspace_bytes(pm) >= lowbit::wq::workspace_bytes(pm, 2) + scratch);
    }
  }
  // Off sm_90a the config falls back like every wgmma config: no stream K without wgmma.
  WqGemmConfig fitted = c;
  lowbit::wq::shrink_to_fit(p, fitted, Arch::parse("sm_89"), false);
  CHECK_FALSE(fitted.wgmma);
  CHECK_FALSE(fitted.stream_k);
}

TEST_CASE("choose_config v11: stream K where a K split would leave blocks 32 chunks or fewer", "[stream_k]") {
  const Arch hopper = Arch::parse("sm_90a");
  auto choice = [&](int64_t n, int64_t k, int64_t m) {
    WqGemmProblem p;
    p.m = m, p.n = n, p.k = k, p.bits = 4, p.group_size = 128;
    return lowbit::choose_config(p, hopper, 132);
  };
  // (v17 took 8192² M = 64, 4096×14336 M = 128 and 6144×4096 M = 64 to a cluster pair, below; v18
  // 4096×14336 M = 64 to a four-way split, below.)
  for (auto [n, k, m] : {std::tuple{5120, 13824, 64}}) {
    const WqGemmConfig c = choice(n, k, m);
    CAPTURE(n, k, m, c.str());
    CHECK(c.wgmma);
    CHECK(c.stream_k);
    CHECK(c.split_k == 1);
    CHECK(c.n_tiles == 2);  // 128-column blocks
  }
  // A grid that needs no split stays whole and takes the activations from an image (v14).
  const WqGemmConfig whole = choice(28672, 4096, 64);
  CHECK(whole.split_k == 1);
  CHECK_FALSE(whole.stream_k);
  CHECK(whole.x_image);
  // v15: where 128-column blocks over all of K make 0.7-1.5 blocks per SM, one such wave, no split,
  // the activations from an image (16384² at 64 rows; 8192² and 6144×4096 at 128 rows, 64 rows per
  // block; 16384² at 128 rows, all of them).
  for (auto [n, k, m, mt] : {std::tuple{16384, 16384, 64, 4}, {16384, 16384, 128, 8}}) {
    const WqGemmConfig c = choice(n, k, m);
    CAPTURE(n, k, m, c.str());
    CHECK((c.wgmma && c.x_image && !c.stream_k && c.split_k == 1 && c.n_tiles == 2 && c.m_tiles == mt));
  }
  // v17: where 128-column blocks split in two along K make 0.7-1 wave (64-132 of them on 132 SMs),
  // that pair, a thread-block cluster adding through shared memory: all 128 rows per block where
  // that is enough blocks, else 64. (4096×14336 at 128 rows left it for v24's four-way split of
  // 128-row blocks: tests/unit/heuristic_v24_test.cpp.)
  for (auto [n, k, m, mt] : {std::tuple{4096, 4096, 128, 4},
                             {8192, 8192, 64, 4},
                             {8192, 8192, 128, 8},
                             {6144, 4096, 64, 4},
                             {6144, 4096, 128, 8}}) {
    const WqGemmConfig c = choice(n, k, m);
    CAPTURE(n, k, m, c.str());
    CHECK((c.wgmma && c.x_image && !c.stream_k && c.split_k == 2 && c.n_tiles == 2 && c.m_tiles == mt));
  }
  // Not where the pair is under 0.7 waves (4096² M = 64: 64 blocks) or over one (16384²).
  CHECK(choice(4096, 4096, 64).split_k == 1);
  CHECK(choice(16384, 16384, 64).split_k == 1);
  // Off sm_90a nothing changes: no wgmma, no stream K.
  WqGemmProblem p;
  p.m = 64, p.n = 8192, p.k = 8192, p.bits = 4, p.group_size = 128;
  CHECK_FALSE(lowbit::choose_config(p, Arch::parse("sm_89"), 128).stream_k);
}

TEST_CASE("choose_config v18: a four-way K split of 128-column blocks on K-heavy layers at 64 rows",
          "[stream_k]") {
  // Where four pieces of each 128-column block make 0.7-1 wave and keep 16 chunks or more each: the
  // split adds in the workspace's scratch slots (no cluster). Not where the pieces get shorter
  // (4096²: 8 chunks each) or the blocks make more than a wave (5120 columns), nor at 128 rows with
  // 64-row blocks (v24 splits 128-row blocks four ways there: tests/unit/heuristic_v24_test.cpp).
  const Arch hopper = Arch::parse("sm_90a");
  for (int bits : {4, 2, 8})
    for (auto [n, k] : {std::pair{4096, 14336}, {3584, 18944}}) {
      WqGemmProblem p;
      p.m = 64, p.n = n, p.k = k, p.bits = bits, p.group_size = 128;
      const WqGemmConfig c = lowbit::choose_config(p, hopper, 132);
      CAPTURE(bits, n, k, c.str());
      CHECK((c.wgmma && c.x_image && !c.stream_k && c.split_k == 4 && c.n_tiles == 2 && c.m_tiles == 4));
      CHECK(lowbit::wq::needs_split_workspace(c, hopper));
      CHECK(lowbit::wq::adds_in_scratch(c));
      // Its slots (one per 64 × 128 tile, before the counters) fit in what the functional API asks for.
      const std::size_t scratch = lowbit::wq::stream_k_scratch_bytes(p, c);
      CHECK(scratch >= static_cast<std::size_t>(p.m * p.n * 4));
      CHECK(lowbit::workspace_bytes(p) >= lowbit::wq::counter_bytes(p.n, p.m) + scratch);
    }
  for (auto [n, k, m] : {std::tuple{4096, 4096, 64}, {5120, 13824, 64}, {4096, 14336, 128}}) {
    WqGemmProblem p;
    p.m = m, p.n = n, p.k = k, p.bits = 4, p.group_size = 128;
    const WqGemmConfig c = lowbit::choose_config(p, hopper, 132);
    CAPTURE(n, k, m, c.str());
    CHECK_FALSE((c.wgmma && c.split_k == 4 && c.m_tiles == 4));
  }
}

TEST_CASE("choose_config v18/v31/v62: 4096² at 64 rows stages per warp, 2 row tiles; 8-bit one 32-row block",
          "[heuristic]") {
  WqGemmProblem p;
  p.m = 64, p.n = 4096, p.k = 4096, p.group_size = 128;
  for (int bits : {2, 4, 8})
    for (DType act : {DType::F16, DType::BF16}) {
      if (bits != 4 && act == DType::BF16) continue;
      p.bits = bits, p.act = act, p.out = act;
      const WqGemmConfig c = lowbit::choose_config(p, Arch::parse("sm_90a"), 132);
      CAPTURE(bits, c.str());
      if (bits == 8) {  // v62: one 32-row mma.sync block of 4 tiles × 4 warps along K (v21's split 4 before)
        CHECK(
            (!c.wgmma && c.x_shared && c.m_tiles == 2 && c.n_tiles == 4 && c.warps_k == 4 && c.stages == 2));
      } else {
        CHECK(c.x_shared);
        CHECK(!c.wgmma);
        CHECK((c.m_tiles == 2 && c.n_tiles == 8 && c.warps_n == 1 && c.warps_k == 4));  // v31: 2 row tiles
      }
    }
  // Off sm_90a 8-bit keeps the block-shared mma.sync config.
  p.bits = 8, p.act = DType::F16, p.out = DType::F16;
  const WqGemmConfig a100 = lowbit::choose_config(p, Arch::parse("sm_80"), 108);
  CHECK(!a100.wgmma);
}

TEST_CASE("choose_config v21: bf16 4-bit at one row from 6 tiles per SM takes 8 tiles per warp",
          "[heuristic]") {
  WqGemmProblem p;
  p.m = 1, p.n = 8192, p.k = 8192, p.bits = 4, p.group_size = 128;
  p.act = p.out = DType::BF16;
  const Arch hopper = Arch::parse("sm_90a");
  CHECK(lowbit::choose_config(p, hopper, 132).n_tiles == 8);
  p.act = p.out = DType::F16;  // fp16 4-bit (zero folded in before the MMA) keeps 4
  CHECK(lowbit::choose_config(p, hopper, 132).n_tiles == 4);
  p.act = p.out = DType::BF16, p.n = 6144, p.k = 4096;  // under 6 tiles per SM: 2, as before
  CHECK(lowbit::choose_config(p, hopper, 132).n_tiles == 2);
}
