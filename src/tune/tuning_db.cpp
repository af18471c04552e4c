#include "tune/tuning_db.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/check.hpp"

namespace fs = std::filesystem;

namespace lowbit::tune {

namespace {
// Writes "w4.g128.f16.zp|m16.n8192.k8192" into a stack buffer: a lookup probes with it unallocated.
void append_key(fmt::memory_buffer& out, const TuningKey& k) {
  out.append(k.format);
  out.push_back('|');
  for (std::size_t i = 0; i < k.shape.size(); ++i) {
    if (i) out.push_back('.');
    out.append(k.shape[i].first);
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, k.shape[i].second).ptr;
    out.append(digits, end);
  }
}
}  // namespace

std::vector<std::string_view> format_fields(std::string_view format) {
  std::vector<std::string_view> out;
  for (std::size_t at = 0;;) {
    const std::size_t dot = format.find('.', at);
    out.push_back(format.substr(at, dot - at));
    if (dot == std::string_view::npos) return out;
    at = dot + 1;
  }
}

std::string TuningKey::str() const {
  fmt::memory_buffer b;
  append_key(b, *this);
  return fmt::to_string(b);
}

std::optional<int64_t> TuningKey::field(const std::string& name) const {
  for (const auto& [n, v] : shape)
    if (n == name) return v;
  return std::nullopt;
}

std::optional<TuningKey> TuningKey::parse(const std::string& s) {
  const auto bar = s.find('|');
  if (bar == std::string::npos || bar == 0 || bar + 1 >= s.size()) return std::nullopt;
  TuningKey k;
  k.format = s.substr(0, bar);
  std::stringstream ss(s.substr(bar + 1));
  std::string item;
  while (std::getline(ss, item, '.')) {
    std::size_t i = 0;
    while (i < item.size() && std::isalpha(static_cast<unsigned char>(item[i]))) ++i;
    if (i == 0 || i == item.size()) return std::nullopt;
    try {
      std::size_t used = 0;
      const int64_t v = std::stoll(item.substr(i), &used);
      if (used != item.size() - i || v < 0) return std::nullopt;
      k.shape.emplace_back(item.substr(0, i), v);
    } catch (...) {
      return std::nullopt;
    }
  }
  if (k.shape.empty()) return std::nullopt;
  return k;
}

TuningDb TuningDb::load(const std::string& path, const Arch& arch, std::vector<std::string>* warnings) {
  TuningDb db;
  auto warn = [&](const std::string& what) {
    if (warnings) warnings->push_back("tuning file '" + path + "': " + what);
  };
  std::ifstream f(path);
  if (!f) {
    warn("cannot be read; skipped");
    return db;
  }
  std::stringstream text;
  text << f.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    warn("not valid JSON (truncated?); skipped");
    return db;
  }
  if (!j.contains("schema") || !j["schema"].is_number_integer() || j["schema"].get<int>() != kTuningSchema) {
    warn(fmt::format("schema is not {}; skipped", kTuningSchema));
    return db;
  }
  if (!j.contains("meta") || !j["meta"].is_object() || !j["meta"].contains("arch") ||
      !j["meta"]["arch"].is_string()) {
    warn("no meta block with an arch; skipped");
    return db;
  }
  const auto& m = j["meta"];
  auto str = [&](const char* k) {
    return m.contains(k) && m[k].is_string() ? m[k].get<std::string>() : std::string();
  };
  db.meta = {str("device"),
             str("arch"),
             str("lowbit"),
             str("nvrtc"),
             str("templates"),
             str("date"),
             m.contains("sm_count") && m["sm_count"].is_number_integer() ? m["sm_count"].get<int>() : 0};
  if (db.meta.arch != arch.str()) return db;  // another GPU's file: ignored, silently (it is not wrong)
  for (const auto& [family, section] : j.items()) {
    if (family == "schema" || family == "meta") continue;
    if (!section.is_object()) {
      warn("section '" + family + "' is not an object; skipped");
      continue;
    }
    for (const auto& [key, entry] : section.items()) {
      if (!TuningKey::parse(key) || !entry.is_object() || !entry.contains("config") ||
          !entry["config"].is_object()) {
        warn("entry '" + family + "/" + key + "' is malformed; skipped");
        continue;
      }
      db.sections_[family][key] = {{"entry", entry}, {"file", path}};
    }
  }
  db.files.push_back(path);
  db.reindex();
  return db;
}

namespace {
std::string_view format_class(std::string_view format) {
  const auto first = format.find('.');
  const auto second = first == std::string_view::npos ? first : format.find('.', first + 1);
  return format.substr(0, second);
}
// How far apart two formats of one class are, for the similar-format step: the fields that one has and the
// other lacks (so another dtype or mode counts 2, a flag such as "det" or "a16" 1), then, as a fraction, the
// leading fields they do not share (a format's fields run from the most significant: bits, group, dtype,
// output, mode, flags). Before this the first entry in key order won, so fp16 problems of another mode or
// flag took the bf16 layer's entry wherever one existed ("w4.g128.bf16.zp" sorts before "w4.g128.f16.zp"):
// a deterministic fp16 4096² took the bf16 one-row entry's 16 warps along K. H200, `lowbit bench` with the
// shipped file, 4-bit g128 fp16 symmetric, float-zero, deterministic and fp16-accumulating problems on the
// standard layers, this change alone (docs/perf-notes.md, sixty-ninth session): 32 of 47 changed cases
// faster, geomean 0.964×, 0.74-1.27× (deterministic 4096² at 2-4 rows 0.74×, at 32-128 rows 0.77-0.80×;
// the 1.27×, fp16 accumulation on 28672×4096 at one row with the fp16 entry's 16 tiles, is fit_registers' 16
// → 8 cut's case).
double format_distance(std::string_view a, std::string_view b) {
  const auto fa = format_fields(a), fb = format_fields(b);
  auto missing = [](const auto& from, const auto& in) {
    return std::count_if(from.begin(), from.end(),
                         [&](std::string_view f) { return std::find(in.begin(), in.end(), f) == in.end(); });
  };
  std::size_t shared_lead = 0;
  while (shared_lead < fa.size() && shared_lead < fb.size() && fa[shared_lead] == fb[shared_lead])
    ++shared_lead;
  const std::size_t longest = std::max(fa.size(), fb.size());
  return static_cast<double>(missing(fa, fb) + missing(fb, fa)) +
         static_cast<double>(longest - shared_lead) / static_cast<double>(longest + 1);
}
// A layer: its fields other than m, by name (so `k4096.n8192` and `n8192.k4096` are one layer and
// `n4096.k8192` another), written "name=value;" in name order.
std::string layer_fields(const TuningKey& key) {
  std::vector<std::pair<std::string, int64_t>> rest;
  for (const auto& field : key.shape)
    if (field.first != "m") rest.push_back(field);
  std::sort(rest.begin(), rest.end());
  std::string out;
  for (const auto& [name, v] : rest) out += fmt::format("{}={};", name, v);
  return out;
}
// The by-layer index's key: the format's id, then the layer's fields.
std::string layer_of(int format, const std::string& fields) {
  std::string out(reinterpret_cast<const char*>(&format), sizeof format);
  return out + fields;
}
}  // namespace

void TuningDb::reindex() {
  index_.clear();
  for (const auto& [family, section] : sections_.items()) {
    FamilyIndex& fi = index_[family];
    auto id = [&](std::string_view s) {
      return fi.ids.emplace(std::string(s), static_cast<int>(fi.ids.size())).first->second;
    };
    for (const auto& [k, value] : section.items()) {
      auto key = TuningKey::parse(k);
      if (!key) continue;
      Indexed e;
      e.key_str = k;
      e.file = value["file"].get<std::string>();
      e.config = value["entry"]["config"];
      e.format = id(key->format);
      e.format_str = key->format;
      e.format_class = id(format_class(key->format));
      e.m = key->field("m").value_or(0);
      e.fields = layer_fields(*key);
      e.log_m = std::log2(static_cast<double>(e.m));
      const std::size_t i = fi.entries.size();
      fi.by_key[k] = i;
      if (e.m > 0) {
        fi.by_layer[layer_of(e.format, e.fields)].push_back(i);
        fi.by_m[e.m].push_back(i);
      }
      fi.entries.push_back(std::move(e));
    }
  }
}

void TuningDb::overlay(const TuningDb& other) {
  for (const auto& [family, section] : other.sections_.items())
    for (const auto& [key, value] : section.items()) sections_[family][key] = value;
  files.insert(files.end(), other.files.begin(), other.files.end());
  if (!other.files.empty()) meta = other.meta;
  reindex();
}

std::optional<TuningHit> TuningDb::lookup(const std::string& family, const TuningKey& key) const {
  const auto fam = index_.find(family);
  if (fam == index_.end()) return std::nullopt;
  const FamilyIndex& fi = fam->second;
  auto hit = [](const Indexed& e, std::string_view step) {
    return TuningHit{e.config, e.key_str, step, e.file, *e.parsed, e.m};
  };
  fmt::memory_buffer key_str;
  append_key(key_str, key);
  const auto exact = fi.by_key.find(std::string_view(key_str.data(), key_str.size()));
  if (exact != fi.by_key.end()) return hit(fi.entries[exact->second], "exact");
  const auto m = key.field("m");
  if (!m || *m <= 0) return std::nullopt;
  auto id = [&](std::string_view s) {
    const auto it = fi.ids.find(s);
    return it == fi.ids.end() ? -1 : it->second;
  };
  const int format = id(key.format), cls = id(format_class(key.format));
  if (cls < 0) return std::nullopt;  // no entry of a similar format, nor of this one
  const std::string fields = layer_fields(key);
  const double log_m = std::log2(static_cast<double>(*m));
  // Steps 1..2 below; the first step with any candidate wins, nearest first (the nearest M: ties → the
  // larger M; the nearest format: format_distance; then the first entry). Only the same layer can be a
  // candidate (tuning_db.hpp says why).
  const Indexed* best[2] = {nullptr, nullptr};
  double best_d[2] = {1e300, 1e300};
  auto consider = [&](int step, double d, const Indexed& e) {
    if (d < best_d[step]) best_d[step] = d, best[step] = &e;
  };
  double nearest_below = 1e300, nearest_above = 1e300;  // bucket distances on either side
  if (const auto same = fi.by_layer.find(layer_of(format, fields)); same != fi.by_layer.end())
    for (std::size_t i : same->second) {
      const Indexed& e = fi.entries[i];
      const double bucket_d = std::fabs(e.log_m - log_m);
      if (bucket_d > kMaxBucketDistance) continue;  // other rows, other decomposition: the heuristic
      if ((e.m > kDecodeMaxRows) != (*m > kDecodeMaxRows)) continue;  // decode and prefill apart
      // Nor to or from 17-128 rows (nearest_bucket_may_serve: the row blocks change); such a neighbour
      // still counts for between_two below.
      if (nearest_bucket_may_serve(e.m, *m)) consider(0, bucket_d - (e.m > *m ? 1e-9 : 0), e);
      double& side = e.m > *m ? nearest_above : nearest_below;
      side = std::min(side, bucket_d);
    }
  // A bucket halfway between two tuned ones takes a similar format's entry of its own bucket first, where
  // there is one. Measured at 32 rows between 16 and 64, which since the seventy-second session take no
  // neighbour at all (nearest_bucket_may_serve); the rule stands up to 16 rows and over 128, unmeasured
  // there. At 32 rows the neighbours' configs changed the row blocks (a 64-row entry gives 32 rows half its
  // blocks or half-empty wgmma blocks, a 16-row entry two row blocks that each stream the weights), the other
  // format's entry was fitted to these rows. H200, `lowbit bench`, 4-bit bf16 at 32 rows on the six standard
  // layers (the files hold bf16 at 1/16/64/128 rows there): the fp16 32-row entry ran 0.72-0.88× the bf16
  // 64-row entry (6 of 6), within 0.98-1.06× of the heuristic, where the 64-row entry ran 1.13-1.48× it
  // (docs/perf-notes.md, sixty-ninth session). At 2 and 8 rows (one tuned neighbour) the nearest bucket stays
  // first: there it ran 0.99× and 1.00× the heuristic (geomean over bf16, 2- and 8-bit), the fp16 entry of
  // the bucket 1.05× and 1.00×.
  const bool between_two =
      nearest_below <= kMaxBucketDistance && std::fabs(nearest_below - nearest_above) < 1e-9;
  if (const auto same = fi.by_m.find(*m); same != fi.by_m.end())
    for (std::size_t i : same->second) {
      const Indexed& e = fi.entries[i];
      // The same layer (the same fields, equal values) in another format of the class; the same
      // format at this M bucket is the exact key or step 1.
      if (e.format == format || e.format_class != cls || e.fields != fields) continue;
      consider(1, format_distance(key.format, e.format_str), e);
    }
  static const char* const kSteps[2] = {"nearest M bucket", "similar format"};
  if (between_two && best[1]) return hit(*best[1], kSteps[1]);
  for (int s = 0; s < 2; ++s)
    if (best[s]) return hit(*best[s], kSteps[s]);
  return std::nullopt;
}

void TuningDb::put(const std::string& family, const TuningKey& key, nlohmann::json entry) {
  sections_[family][key.str()] = {{"entry", std::move(entry)}, {"file", ""}};
  reindex();
}

std::size_t TuningDb::size() const {
  std::size_t n = 0;
  for (const auto& [family, section] : sections_.items()) n += section.size();
  return n;
}

nlohmann::json TuningDb::to_json() const {
  nlohmann::json j = {{"schema", kTuningSchema},
                      {"meta",
                       {{"device", meta.device},
                        {"arch", meta.arch},
                        {"sm_count", meta.sm_count},
                        {"lowbit", meta.lowbit},
                        {"nvrtc", meta.nvrtc},
                        {"templates", meta.templates},
                        {"date", meta.date}}}};
  for (const auto& [family, section] : sections_.items())
    for (const auto& [key, value] : section.items()) j[family][key] = value["entry"];
  return j;
}

void TuningDb::save(const std::string& path) const {
  TuningDb merged;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    std::vector<std::string> ignored;
    merged = TuningDb::load(path, Arch::parse(meta.arch), &ignored);  // other arch's file: replaced
  }
  merged.overlay(*this);
  merged.meta = meta;
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    LOWBIT_CHECK(out.good(), "tuning file '{}': cannot write '{}'", path, tmp);
    out << merged.to_json().dump(2) << "\n";
    out.flush();
    LOWBIT_CHECK(out.good(), "tuning file '{}': write to '{}' failed", path, tmp);
  }
  LOWBIT_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "tuning file '{}': rename from '{}' failed", path,
               tmp);
}

}  // namespace lowbit::tune
