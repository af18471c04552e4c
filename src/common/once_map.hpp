// A map whose values are built once: concurrent requests for one key wait for a single build and
// share its result; requests for other keys never wait on it. A failed build is forgotten (a later
// request tries again) and its exception reaches every caller that waited for it.
#pragma once
#include <exception>
#include <future>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace lowbit {

template <class V>
class OnceMap {
 public:
  // Returns the value and whether this call built it.
  template <class Make>
  std::pair<V, bool> get(const std::string& key, Make&& make) {
    std::promise<V> promise;
    std::shared_future<V> future;
    bool owner = false;
    {
      std::lock_guard lock(mu_);
      auto it = map_.find(key);
      if (it != map_.end()) {
        future = it->second;
      } else {
        future = promise.get_future().share();
        map_.emplace(key, future);
        owner = true;
      }
    }
    if (owner) {
      try {
        promise.set_value(make());
      } catch (...) {
        promise.set_exception(std::current_exception());
        std::lock_guard lock(mu_);
        map_.erase(key);
        throw;
      }
    }
    return {future.get(), owner};
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_future<V>> map_;
};

}  // namespace lowbit
