// The two ceilings of shared/BENCHMARKS.md, measured in the same run as the cases: device read
// bandwidth (≥ 1 GiB read-only stream) and the tensor-core rate (register-only m16n8k16 MMAs),
// plus the stream ceiling of one case (a trivial kernel moving exactly the case's bytes).
#pragma once
#include <cstddef>
#include <vector>

#include "jit/driver.hpp"

namespace lowbit::jit {
class Context;
}

namespace lowbit::tune {

struct Ceilings {
  double read_gbs = 0;    // GB/s (1e9 bytes/s)
  double mma_tflops = 0;  // dense fp16 m16n8k16, fp32 accumulate
  double empty_us = 0;    // one empty-ish launch inside a graph
};

Ceilings measure_ceilings(jit::Context& ctx);

// Median µs of one empty-ish launch inside a graph, now. It is not a constant of the device: on an H100
// it rose from 0.83 to 1.00 µs once a bench process had timed two standard layers, and stayed there
// (docs/perf-notes.md, fifty-fifth session), so the bench measures it before each layer.
double empty_launch_us(jit::Context& ctx);

// Median µs of one stream-kernel call reading `in_bytes` from copy i of `copies` (rotating, as the
// case does) and writing `out_bytes` into `out`: the faster of the kernel's two loop shapes. chain:
// consecutive calls chained by programmatic dependent launch, like WqGemmPlanOptions::overlap_previous.
double stream_ceiling_us(jit::Context& ctx, const std::vector<const jit::DeviceBuffer*>& copies,
                         std::size_t in_bytes, jit::DeviceBuffer& out, std::size_t out_bytes, int rounds,
                         bool chain = false);

}  // namespace lowbit::tune
