#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "cli.hpp"
#include "common/env.hpp"
#include "jit/disk_cache.hpp"

namespace fs = std::filesystem;

namespace lowbit::cli {

int run_cache(const CommonFlags& f, const std::string& action, bool all, double older_than_days) {
  const std::string root = jit::default_cache_root(f.cache_dir);
  jit::DiskCache disk(root);
  const auto entries = disk.list();
  nlohmann::json rows = nlohmann::json::array();
  int invalid = 0, removed = 0;
  const auto now = fs::file_time_type::clock::now();
  for (const auto& e : entries) {
    invalid += e.valid ? 0 : 1;
    bool remove = false;
    if (action == "prune") {
      std::error_code ec;
      const auto age = now - fs::last_write_time(e.path, ec);
      const double days = std::chrono::duration<double>(age).count() / 86400.0;
      remove = all || !e.valid || (older_than_days >= 0 && days > older_than_days);
      if (remove) {
        fs::remove_all(e.path, ec);
        removed += ec ? 0 : 1;
      }
    }
    rows.push_back({{"path", e.path},
                    {"arch", e.arch},
                    {"family", e.family},
                    {"name", e.name},
                    {"bytes", e.bytes},
                    {"valid", e.valid},
                    {"problem", e.problem},
                    {"removed", remove}});
    if (!f.json && (action == "ls" || (action == "verify" && !e.valid) || remove))
      std::printf("%-8s %-8s %-78s %8zu  %s%s\n", e.arch.c_str(), e.family.c_str(), e.name.c_str(), e.bytes,
                  e.valid ? "ok" : ("INVALID: " + e.problem).c_str(), remove ? "  (removed)" : "");
  }
  if (action == "prune") {
    // Leftovers of interrupted writers: private temp and trash dirs.
    std::error_code ec;
    fs::path base = fs::path(root) / ("v" + std::to_string(jit::kCacheSchema));
    if (fs::exists(base, ec))
      for (auto it = fs::recursive_directory_iterator(base, ec); it != fs::recursive_directory_iterator();
           ++it) {
        const std::string name = it->path().filename().string();
        // Only leftovers older than an hour: a younger temp dir may belong to a writer still at work.
        const auto age = now - fs::last_write_time(it->path(), ec);
        const bool old = !ec && age > std::chrono::hours(1);
        if (it->is_directory(ec) && old && (name.starts_with(".tmp-") || name.starts_with(".trash-"))) {
          fs::remove_all(it->path(), ec);
          it.disable_recursion_pending();
        }
      }
  }
  if (f.json) {
    print_json({{"dir", root}, {"entries", rows}, {"invalid", invalid}, {"removed", removed}});
  } else {
    std::printf("%s: %zu entries, %d invalid%s\n", root.c_str(), entries.size(), invalid,
                action == "prune" ? fmt::format(", {} removed", removed).c_str() : "");
  }
  return action == "verify" && invalid > 0 ? 1 : 0;
}

}  // namespace lowbit::cli
