// The kernels of a wq_gemm config: the GEMM's spec (its instantiation source), and the specs and launch
// shapes of its pre-kernels (act-order permutation, x_image, x_sums).
#include <fmt/format.h>

#include <algorithm>

#include "kernels/wq_gemm_internal.hpp"

namespace lowbit::wq {

jit::KernelSpec kernel_spec(const WqGemmProblem& problem, const WqGemmConfig& c, int64_t bucket, bool chain) {
  // Act-order layers run a plain layer's kernel on permuted activations (on sm_90 the chained one, whose
  // cache entry chained plans share): no act-order variant.
  WqGemmProblem p = problem;
  p.act_order = false;
  const bool bf16 = p.act == DType::BF16;
  const bool upper_rows = !skips_upper_rows(c, bucket);
  const bool one_row = one_row_kernel(c, bucket);
  auto b = [](bool v) { return v ? "true" : "false"; };
  jit::KernelSpec s;
  s.family = "wq_gemm";
  s.name = fmt::format("wq_gemm_w{}{}{}{}_{}{}{}_n{}k{}_mt{}{}nt{}wn{}wk{}sk{}st{}{}{}{}{}{}{}", p.bits,
                       p.group_size ? fmt::format("g{}", p.group_size) : std::string("pc"), mode_tag(p.mode),
                       p.deterministic ? "det" : "", to_string(p.act), p.out == DType::F32 ? "o32" : "",
                       p.accum == DType::F16 ? "a16" : "", p.n, p.k, c.m_tiles,
                       one_row      ? "r"
                       : upper_rows ? ""
                                    : "h",
                       c.n_tiles, c.warps_n, c.warps_k, c.split_k, c.stages, c.x_shared ? "xs" : "",
                       c.wgmma ? "wg" : "", c.stream_k ? "sk" : "", c.x_image ? "xi" : "",
                       c.x_sums ? "xz" : "", chain ? "ch" : "");
  s.name_expression =
      c.wgmma ? fmt::format(
                    "lowbit::kern::wq_gemm_wgmma_kernel<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                    "{}, {}>",
                    p.bits, p.group_size, p.n, p.k, c.m_tiles, c.n_tiles, c.warps_n, c.split_k,
                    b(wq::cluster_split(c)), c.stages, b(bf16), b(p.out == DType::F32),
                    static_cast<int>(p.mode), b(c.stream_k), b(c.x_image))
              : fmt::format(
                    "lowbit::kern::wq_gemm_kernel<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                    "{}, {}, {}, {}, {}{}>",
                    p.bits, p.group_size, p.n, p.k, c.m_tiles, c.n_tiles, c.warps_n, c.warps_k, c.split_k,
                    c.stages, b(upper_rows), b(one_row), b(bf16), b(p.out == DType::F32),
                    static_cast<int>(p.mode), b(p.deterministic), b(c.x_shared), b(p.accum == DType::F16),
                    b(c.x_sums), chain ? ", true" : "");
  // The source must not mention M: one kernel serves every M of its bucket's config (M is a run-time
  // argument; the one-row kernel of bucket 1 serves M = 1, which is all that bucket holds).
  s.source = fmt::format(
      "// {}\n// {}\n// {}\n#include \"{}\"\n// instantiated through the name expression:\n// {}\n", s.name,
      to_json(p).dump(), c.str(), c.wgmma ? "wq_gemm_wgmma.cuh" : "wq_gemm.cuh", s.name_expression);
  s.specialization = to_json(p);
  s.config = to_json(c);
  return s;
}

jit::KernelSpec permute_spec(const WqGemmProblem& p, int image_rows) {
  return jit::header_instance_spec("wq_gemm",
                                   image_rows ? fmt::format("wq_permute_x_k{}_r{}", p.k, image_rows)
                                              : fmt::format("wq_permute_x_k{}", p.k),
                                   "wq_permute_x.cuh",
                                   fmt::format("lowbit::kern::wq_permute_x_kernel<{}, {}>", p.k, image_rows),
                                   {{"k", p.k}, {"rows", image_rows}});
}

bool permute_in_shared(const WqGemmProblem& p, int64_t m) {
  return m > 16 && p.k <= 24576;  // 24576: kRowInShared of templates/wq_permute_x.cuh
}

jit::LaunchShape permute_shape(const WqGemmProblem& p, int image_rows, int64_t m, int sm_count) {
  const int64_t vectors = image_rows ? ceil_div(p.k, 128) * 16 : p.k / 8;  // per row: one per thread
  const int64_t rows = image_rows ? ceil_div(m, image_rows) * image_rows : m;
  jit::LaunchShape shape;
  shape.grid_y = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
  if (!permute_in_shared(p, m)) {  // gathers from global memory: blocks of 256, each row its own
    shape.block = 256;
    shape.grid_x = static_cast<unsigned>(ceil_div(vectors, 256));
    return shape;
  }
  // Each block copies its row of x whole (wq_permute_x.cuh): as few blocks per row as give every SM
  // one (fewer copies of the row), at most 1024 threads and at least 128 per block.
  const int64_t per_row = std::clamp<int64_t>(ceil_div(sm_count, rows), ceil_div(vectors, 1024),
                                              std::max<int64_t>(1, ceil_div(vectors, 128)));
  shape.block = static_cast<unsigned>(ceil_div(ceil_div(vectors, per_row), 32) * 32);
  shape.grid_x = static_cast<unsigned>(ceil_div(vectors, shape.block));  // (rounding may leave one idle)
  shape.smem = static_cast<unsigned>(p.k * 2);                           // the row
  return shape;
}

jit::KernelSpec x_image_spec(const WqGemmProblem& p, const WqGemmConfig& c) {
  // Act-order: the permutation writes the image itself.
  if (p.act_order) return permute_spec(p, 16 * c.m_tiles);
  const int rows = 16 * c.m_tiles;
  return jit::header_instance_spec(
      "wq_gemm", fmt::format("wq_x_image_k{}_r{}", p.k, rows), "wq_gemm_wgmma.cuh",
      fmt::format("lowbit::kern::wq_x_image_kernel<{}, {}>", p.k, rows), {{"k", p.k}, {"rows", rows}});
}

jit::KernelSpec x_sums_spec(const WqGemmProblem& p) {
  return jit::header_instance_spec(
      "wq_gemm", fmt::format("wq_x_sums_k{}_w{}_{}", p.k, p.bits, to_string(p.act)), "wq_gemm.cuh",
      fmt::format("lowbit::kern::wq_x_sums_kernel<{}, {}, {}>", p.k, p.bits,
                  p.act == DType::BF16 ? "true" : "false"),
      {{"k", p.k}, {"bits", p.bits}, {"act", to_string(p.act)}});
}

}  // namespace lowbit::wq
