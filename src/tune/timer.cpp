#include "tune/timer.hpp"

#include <algorithm>
#include <vector>

#include "jit/context.hpp"
#include "jit/driver.hpp"

namespace lowbit::tune {

ScopedStream::ScopedStream() {
  CUstream s = nullptr;
  LOWBIT_CU_CHECK(jit::driver().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  stream_ = s;
}
ScopedStream::~ScopedStream() {
  if (stream_) jit::driver().cuStreamDestroy(stream_);
}
void ScopedStream::synchronize() const {
  LOWBIT_CU_CHECK(jit::driver().cuStreamSynchronize(stream_));
}

namespace {
struct Graph {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  ~Graph() {
    if (exec) jit::driver().cuGraphExecDestroy(exec);
    if (graph) jit::driver().cuGraphDestroy(graph);
  }
};
struct Event {
  CUevent e = nullptr;
  Event() { LOWBIT_CU_CHECK(jit::driver().cuEventCreate(&e, CU_EVENT_DEFAULT)); }
  ~Event() { jit::driver().cuEventDestroy(e); }
};
}  // namespace

GraphTiming time_in_graph(jit::Context& ctx, const std::function<void(Stream, int)>& enqueue, int calls,
                          int replays) {
  const jit::Driver& d = jit::driver();
  ctx.make_current();
  ScopedStream stream;
  Graph g;
  LOWBIT_CU_CHECK(d.cuStreamBeginCapture(stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  try {
    for (int i = 0; i < calls; ++i) enqueue(stream.get(), i);
  } catch (...) {
    CUgraph broken = nullptr;
    d.cuStreamEndCapture(stream.get(), &broken);
    if (broken) d.cuGraphDestroy(broken);
    throw;
  }
  LOWBIT_CU_CHECK(d.cuStreamEndCapture(stream.get(), &g.graph));
  LOWBIT_CU_CHECK(d.cuGraphInstantiateWithFlags(&g.exec, g.graph, 0));
  for (int w = 0; w < 2; ++w) LOWBIT_CU_CHECK(d.cuGraphLaunch(g.exec, stream.get()));  // warm up
  stream.synchronize();
  Event start, stop;
  std::vector<double> us;
  for (int r = 0; r < replays; ++r) {
    LOWBIT_CU_CHECK(d.cuEventRecord(start.e, stream.get()));
    LOWBIT_CU_CHECK(d.cuGraphLaunch(g.exec, stream.get()));
    LOWBIT_CU_CHECK(d.cuEventRecord(stop.e, stream.get()));
    LOWBIT_CU_CHECK(d.cuEventSynchronize(stop.e));
    float ms = 0;
    LOWBIT_CU_CHECK(d.cuEventElapsedTime(&ms, start.e, stop.e));
    us.push_back(ms * 1000.0 / calls);
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us.front(), us.back()};
}

}  // namespace lowbit::tune
