// Timing by the protocol of shared/BENCHMARKS.md: the work is captured `calls` times into one CUDA
// graph, the graph is replayed `replays` times between CUDA events, and the median replay divided
// by `calls` is the time of one call.
#pragma once
#include <functional>

#include "lowbit/types.hpp"

namespace lowbit::jit {
class Context;
}

namespace lowbit::tune {

struct GraphTiming {
  double median_us_per_call = 0;
  double min_us_per_call = 0;
  double max_us_per_call = 0;
};

// enqueue(stream, i) launches call i (i = 0..calls-1) on `stream`.
GraphTiming time_in_graph(jit::Context& ctx, const std::function<void(Stream, int)>& enqueue, int calls,
                          int replays = 30);

// A stream owned by RAII (non-blocking).
class ScopedStream {
 public:
  ScopedStream();
  ~ScopedStream();
  Stream get() const { return stream_; }
  void synchronize() const;

 private:
  Stream stream_ = nullptr;
};

}  // namespace lowbit::tune
