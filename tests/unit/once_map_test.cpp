// OnceMap: one build per key under concurrency; a failed build is retried by the next request.
#include "common/once_map.hpp"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/catch.hpp"

TEST_CASE("OnceMap builds each key once for concurrent callers", "[once_map]") {
  lowbit::OnceMap<int> map;
  std::atomic<int> builds{0}, owners{0};
  std::vector<std::thread> threads;
  std::vector<int> seen(8, 0);
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      auto [v, owner] = map.get("k", [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // others arrive while building
        return ++builds * 7;
      });
      seen[i] = v;
      owners += owner ? 1 : 0;
    });
  for (auto& t : threads) t.join();
  CHECK(builds == 1);
  CHECK(owners == 1);
  for (int v : seen) CHECK(v == 7);
  CHECK(map.get("other", [] { return 3; }).first == 3);
}

TEST_CASE("OnceMap forgets a failed build", "[once_map]") {
  lowbit::OnceMap<int> map;
  CHECK_THROWS_AS(map.get("k", []() -> int { throw std::runtime_error("no"); }), std::runtime_error);
  auto [v, owner] = map.get("k", [] { return 5; });
  CHECK(v == 5);
  CHECK(owner);
}
