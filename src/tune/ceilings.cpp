#include "tune/ceilings.hpp"

#include <algorithm>
#include <limits>

#include "jit/context.hpp"
#include "jit/launch.hpp"
#include "tune/timer.hpp"

namespace lowbit::tune {
namespace {

jit::KernelSpec bench_spec(const std::string& name, const std::string& expr) {
  jit::KernelSpec s;
  s.family = "bench";
  s.name = name;
  s.name_expression = expr;
  s.source = "#include \"bench/ceilings.cuh\"\n";
  s.specialization = {{"kernel", name}};
  s.config = nlohmann::json::object();
  return s;
}

void launch_stream(jit::Context& ctx, CUfunction f, CUdeviceptr in, std::size_t in_bytes, CUdeviceptr out,
                   std::size_t out_bytes, Stream stream, bool chain = false) {
  unsigned long long in16 = in_bytes / 16, out16 = out_bytes / 16;
  unsigned never = 0x9e3779b9u;
  const unsigned threads = 256;
  const unsigned long long want = std::max(in16, out16) / (threads * 4) + 1;
  const unsigned blocks = static_cast<unsigned>(
      std::min<unsigned long long>(want, static_cast<unsigned long long>(ctx.device().sm_count) * 8));
  void* args[] = {&in, &in16, &out, &out16, &never};
  jit::LaunchShape shape;
  shape.grid_x = blocks;
  shape.block = threads;
  jit::LaunchOptions o;
  o.overlap_previous = chain;
  jit::launch(f, shape, static_cast<CUstream>(stream), args, o);
}

}  // namespace

double stream_ceiling_us(jit::Context& ctx, const std::vector<const jit::DeviceBuffer*>& copies,
                         std::size_t in_bytes, jit::DeviceBuffer& out, std::size_t out_bytes, int rounds,
                         bool chain) {
  // What one trivial kernel can reach at this size: the faster of the two loop shapes of
  // stream_kernel (templates/bench/ceilings.cuh), each timed like the case.
  const int n = static_cast<int>(copies.size());
  chain = chain && ctx.arch().sm() >= 90;  // as the GEMM: no chained launch before sm_90
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [name, expr] : {std::pair{"stream_u4", "lowbit::kern::stream_kernel<4, false"},
                                   std::pair{"stream_u4p", "lowbit::kern::stream_kernel<4, true"}}) {
    const auto& k = ctx.load(chain ? bench_spec(std::string(name) + "c", std::string(expr) + ", true>")
                                   : bench_spec(name, std::string(expr) + ">"));
    auto t = time_in_graph(
        ctx,
        [&](Stream s, int i) {
          const jit::DeviceBuffer* c = copies[static_cast<std::size_t>(i % n)];
          LOWBIT_CHECK(c->bytes() >= in_bytes, "stream ceiling: copy of {} bytes is smaller than {} bytes",
                       c->bytes(), in_bytes);
          launch_stream(ctx, k.function, c->ptr(), in_bytes, out.ptr(), out_bytes, s, chain);
        },
        n * rounds);
    best = std::min(best, t.median_us_per_call);
  }
  return best;
}

double empty_launch_us(jit::Context& ctx) {
  jit::DeviceBuffer in(16), sink(16);
  return stream_ceiling_us(ctx, {&in}, 0, sink, 0, 200);
}

Ceilings measure_ceilings(jit::Context& ctx) {
  Ceilings c;
  // Read bandwidth: 2 GiB read-only, far over any L2.
  const std::size_t big = std::size_t{2} << 30;
  jit::DeviceBuffer buf(big), sink(4096);
  buf.fill_bytes(0x5a);
  std::vector<const jit::DeviceBuffer*> one{&buf};
  const double us = stream_ceiling_us(ctx, one, big, sink, 0, 3);
  c.read_gbs = static_cast<double>(big) / (us * 1e3);
  c.empty_us = empty_launch_us(ctx);
  // Tensor-core rate.
  const auto& mk = ctx.load(bench_spec("mma_peak", "lowbit::kern::mma_peak_kernel"));
  int iters = 4096;
  unsigned seed = 12345;
  CUdeviceptr out = sink.ptr();
  const unsigned blocks = static_cast<unsigned>(ctx.device().sm_count) * 8, threads = 256;
  auto t = time_in_graph(
      ctx,
      [&](Stream s, int) {
        void* args[] = {&iters, &out, &seed};
        LOWBIT_CU_CHECK(
            jit::driver().cuLaunchKernel(mk.function, blocks, 1, 1, threads, 1, 1, 0, s, args, nullptr));
      },
      4, 10);
  const double flops = static_cast<double>(blocks) * (threads / 32) * iters * 4 * (2.0 * 16 * 8 * 16);
  c.mma_tflops = flops / (t.median_us_per_call * 1e-6) / 1e12;
  return c;
}

}  // namespace lowbit::tune
