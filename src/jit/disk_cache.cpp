#include "jit/disk_cache.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/check.hpp"
#include "common/digest.hpp"
#include "common/env.hpp"
#include "common/log.hpp"

namespace fs = std::filesystem;

namespace lowbit::jit {
namespace {

std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return std::nullopt;
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Writes a file and fsyncs it, so a published entry is complete on disk.
bool write_file_synced(const fs::path& p, const std::string& data, std::string* err) {
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *err = fmt::format("open({}): {}", p.string(), std::strerror(errno));
    return false;
  }
  size_t done = 0;
  while (done < data.size()) {
    ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      *err = fmt::format("write({}): {}", p.string(), std::strerror(errno));
      ::close(fd);
      return false;
    }
    done += static_cast<size_t>(w);
  }
  bool ok = ::fsync(fd) == 0;
  if (!ok) *err = fmt::format("fsync({}): {}", p.string(), std::strerror(errno));
  ::close(fd);
  return ok;
}

std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  return fmt::format("{}-{}-{}", ::getpid(),
                     std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000000, counter++);
}

}  // namespace

std::string default_cache_root(const std::string& explicit_dir) {
  if (!explicit_dir.empty()) return explicit_dir;
  if (auto d = env_string("LOWBIT_CACHE_DIR")) return *d;
  if (auto x = env_string("XDG_CACHE_HOME")) return (fs::path(*x) / "lowbit").string();
  if (auto h = env_string("HOME")) return (fs::path(*h) / ".cache" / "lowbit").string();
  return (fs::temp_directory_path() / "lowbit-cache").string();
}

DiskCache::DiskCache(std::string root) : root_(std::move(root)) {
  if (root_.empty()) return;
  std::error_code ec;
  fs::path base = fs::path(root_) / ("v" + std::to_string(kCacheSchema));
  fs::create_directories(base, ec);
  std::string err;
  fs::path probe = base / (".probe-" + unique_suffix());
  if (ec || !write_file_synced(probe, "ok", &err)) {
    warn_once("cache-unwritable:" + root_,
              fmt::format("cache dir '{}' is not writable ({}): using the memory cache only", root_,
                          ec ? ec.message() : err));
    return;
  }
  fs::remove(probe, ec);
  enabled_ = true;
}

std::string DiskCache::entry_dir(const std::string& root, const std::string& arch, const std::string& family,
                                 const std::string& name, const std::string& digest) {
  return (fs::path(root) / ("v" + std::to_string(kCacheSchema)) / arch / family / (name + "-" + digest))
      .string();
}

std::optional<CachedEntry> DiskCache::verify_dir(const std::string& dir, const std::string* expected_key,
                                                 std::string* why, nlohmann::json* meta_out) {
  auto meta_text = read_file(fs::path(dir) / "meta.json");
  if (!meta_text) {
    *why = "meta.json missing";
    return std::nullopt;
  }
  nlohmann::json meta = nlohmann::json::parse(*meta_text, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded() || !meta.is_object() || !meta.contains("key") || !meta.contains("cubin_bytes") ||
      !meta.contains("cubin_digest") || !meta.contains("lowered_name")) {
    *why = "meta.json is not a lowbit cache record";
    return std::nullopt;
  }
  if (meta_out) *meta_out = meta;
  try {
    if (expected_key && meta["key"].get<std::string>() != *expected_key) {
      *why = "meta.json key differs from the requested key";
      return std::nullopt;
    }
    auto cubin = read_file(fs::path(dir) / "kernel.cubin");
    if (!cubin) {
      *why = "kernel.cubin missing";
      return std::nullopt;
    }
    if (cubin->size() != meta["cubin_bytes"].get<std::size_t>()) {
      *why = fmt::format("kernel.cubin has {} bytes, meta.json says {} (truncated?)", cubin->size(),
                         meta["cubin_bytes"].get<std::size_t>());
      return std::nullopt;
    }
    if (digest_hex(*cubin) != meta["cubin_digest"].get<std::string>()) {
      *why = "kernel.cubin digest does not match meta.json (corrupt)";
      return std::nullopt;
    }
    CachedEntry e;
    e.cubin = std::move(*cubin);
    e.lowered_name = meta["lowered_name"].get<std::string>();
    e.compile_ms = meta.value("compile_ms", 0.0);
    e.path = dir;
    return e;
  } catch (const nlohmann::json::exception& ex) {
    *why = std::string("meta.json has a field of the wrong type: ") + ex.what();
    return std::nullopt;
  }
}

std::optional<CachedEntry> DiskCache::load(const std::string& arch, const std::string& family,
                                           const std::string& name, const std::string& digest,
                                           const std::string& key_json) const {
  if (!enabled_) return std::nullopt;
  const std::string dir = entry_dir(root_, arch, family, name, digest);
  std::error_code ec;
  if (!fs::exists(dir, ec)) return std::nullopt;
  std::string why;
  auto entry = verify_dir(dir, &key_json, &why);
  if (entry) return entry;
  warn_once("cache-corrupt:" + dir, fmt::format("cache entry '{}' is invalid ({}): rebuilding it", dir, why));
  // Move it aside atomically so no reader sees half of it, then delete. Losing this race is fine.
  fs::path trash = fs::path(dir).parent_path() / (".trash-" + unique_suffix());
  if (::rename(dir.c_str(), trash.c_str()) == 0) fs::remove_all(trash, ec);
  return std::nullopt;
}

std::string DiskCache::store(const std::string& arch, const std::string& family, const std::string& name,
                             const std::string& digest, const std::string& key_json,
                             const std::string& source, const std::string& cubin,
                             const std::string& lowered_name, double compile_ms) const {
  if (!enabled_) return {};
  const fs::path final_dir = entry_dir(root_, arch, family, name, digest);
  std::error_code ec;
  fs::create_directories(final_dir.parent_path(), ec);
  // mkdtemp: a directory no other writer (another process, container or host) can share.
  std::string tmp_template = (final_dir.parent_path() / (".tmp-" + unique_suffix() + "-XXXXXX")).string();
  const bool made = !ec && ::mkdtemp(tmp_template.data()) != nullptr;
  const fs::path tmp = tmp_template;
  if (!made && !ec) ec = std::error_code(errno, std::generic_category());
  nlohmann::json meta = {{"key", key_json},
                         {"name", name},
                         {"family", family},
                         {"arch", arch},
                         {"lowered_name", lowered_name},
                         {"cubin_bytes", cubin.size()},
                         {"cubin_digest", digest_hex(cubin)},
                         {"compile_ms", compile_ms},
                         {"schema", kCacheSchema}};
  std::string err;
  bool ok = !ec && write_file_synced(tmp / "kernel.cu", source, &err) &&
            write_file_synced(tmp / "kernel.cubin", cubin, &err) &&
            write_file_synced(tmp / "meta.json", meta.dump(2), &err);
  if (!ok) {
    warn_once("cache-write:" + root_, fmt::format("could not write cache entry under '{}' ({}): continuing "
                                                  "without it",
                                                  root_, ec ? ec.message() : err));
    fs::remove_all(tmp, ec);
    return {};
  }
  if (::rename(tmp.c_str(), final_dir.c_str()) != 0) {
    const int rename_errno = errno;
    fs::remove_all(tmp, ec);
    // EEXIST / ENOTEMPTY: another process published the same key first; theirs is equivalent.
    if (rename_errno != EEXIST && rename_errno != ENOTEMPTY) {
      warn_once("cache-publish:" + root_,
                fmt::format("could not publish cache entry '{}' ({}): continuing without "
                            "it",
                            final_dir.string(), std::strerror(rename_errno)));
      return {};
    }
  }
  return final_dir.string();
}

std::vector<CacheEntryInfo> DiskCache::list() const {
  std::vector<CacheEntryInfo> out;
  if (root_.empty()) return out;
  std::error_code ec;
  fs::path base = fs::path(root_) / ("v" + std::to_string(kCacheSchema));
  if (!fs::exists(base, ec)) return out;
  for (const auto& arch : fs::directory_iterator(base, ec)) {
    if (!arch.is_directory(ec)) continue;
    for (const auto& fam : fs::directory_iterator(arch.path(), ec)) {
      if (!fam.is_directory(ec)) continue;
      for (const auto& entry : fs::directory_iterator(fam.path(), ec)) {
        if (!entry.is_directory(ec) || entry.path().filename().string().starts_with(".")) continue;
        CacheEntryInfo info;
        info.path = entry.path().string();
        info.arch = arch.path().filename().string();
        info.family = fam.path().filename().string();
        info.name = entry.path().filename().string();
        for (const auto& f : fs::directory_iterator(entry.path(), ec)) {
          std::error_code fec;  // another process may trash or prune the entry meanwhile
          const auto size = f.is_regular_file(fec) ? f.file_size(fec) : 0;
          if (!fec) info.bytes += size;
        }
        std::string why;
        info.valid = verify_dir(info.path, nullptr, &why, &info.meta).has_value();
        info.problem = why;
        out.push_back(std::move(info));
      }
    }
  }
  return out;
}

std::size_t DiskCache::total_bytes() const {
  std::size_t total = 0;
  std::error_code ec;
  fs::path base = fs::path(root_) / ("v" + std::to_string(kCacheSchema));
  if (root_.empty() || !fs::exists(base, ec)) return 0;
  for (auto it = fs::recursive_directory_iterator(base, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code fec;
    const auto size = it->is_regular_file(fec) ? it->file_size(fec) : 0;
    if (!fec) total += size;
  }
  return total;
}

}  // namespace lowbit::jit
