// The on-disk cubin cache: <root>/v1/<arch>/<family>/<name>-<digest>/{kernel.cu,kernel.cubin,meta.json}.
// Entries are never edited. A new entry is written into a private temp dir and published with one
// rename(); losing that race means another process published the same key, which is as good. An
// entry whose meta, size or digest does not match is reported once, moved aside and rebuilt.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lowbit::jit {

inline constexpr int kCacheSchema = 1;

struct CachedEntry {
  std::string cubin;
  std::string lowered_name;
  double compile_ms = 0;  // as recorded when it was built
  std::string path;       // the entry's directory
};

struct CacheEntryInfo {  // for `lowbit cache ls|verify`
  std::string path;
  std::string name;
  std::string arch;
  std::string family;
  std::size_t bytes = 0;
  bool valid = false;
  std::string problem;  // why it is invalid
  nlohmann::json meta;
};

// Resolves the cache root: explicit > $LOWBIT_CACHE_DIR > $XDG_CACHE_HOME/lowbit > ~/.cache/lowbit.
std::string default_cache_root(const std::string& explicit_dir);

class DiskCache {
 public:
  // root empty = disabled. An unwritable root disables the cache with one warning.
  explicit DiskCache(std::string root);
  bool enabled() const { return enabled_; }
  const std::string& root() const { return root_; }

  std::optional<CachedEntry> load(const std::string& arch, const std::string& family, const std::string& name,
                                  const std::string& digest, const std::string& key_json) const;
  // Publishes an entry; returns its path (or empty if the cache is off or the write failed, warned).
  std::string store(const std::string& arch, const std::string& family, const std::string& name,
                    const std::string& digest, const std::string& key_json, const std::string& source,
                    const std::string& cubin, const std::string& lowered_name, double compile_ms) const;

  std::vector<CacheEntryInfo> list() const;  // every entry, verified
  std::size_t total_bytes() const;

  static std::string entry_dir(const std::string& root, const std::string& arch, const std::string& family,
                               const std::string& name, const std::string& digest);
  // Checks one entry directory; fills `why` when invalid.
  static std::optional<CachedEntry> verify_dir(const std::string& dir, const std::string* expected_key,
                                               std::string* why, nlohmann::json* meta_out = nullptr);

 private:
  std::string root_;
  bool enabled_ = false;
};

}  // namespace lowbit::jit
