// The tuning database: one JSON file per GPU, a `meta` block and one section per family, entries
// keyed by named fields (`w4.g128.f16.zp|m16.n8192.k8192`). Lookup order: exact key → nearest M
// bucket of the same layer (within kMaxBucketDistance, only up to kOneTileMaxRows or over kDecodeMaxRows:
// nearest_bucket_may_serve) → the same layer at the same M bucket in a similar format (same bits and group,
// other dtype or mode; the one with the fewest fields apart) → (the caller's) heuristic. A bucket halfway
// between two tuned buckets of its format (8 rows between 4 and 16) takes the similar format first, where
// there is one (lookup() says why).
// Other layers' entries never serve (the note above kMaxBucketDistance says why). Keys are indexed when files
// are loaded, so a lookup is a hash probe plus, on a miss, a pass over the pre-parsed entries of the same
// layer and of the same M bucket (no key or JSON parsing, nothing copied: the hit points into the index, and
// the caller's parse of an entry's config is kept there too; the similar-format step splits its candidates'
// format strings at the dots). Bad files and bad entries are reported and skipped, never
// fatal: a file for another arch is ignored; a file written by another lowbit version, NVRTC or template set
// keeps its entries, and every entry is re-validated by the caller.
//
// File format:
//   {"schema": 1,
//    "meta": {"device": "NVIDIA H200", "arch": "sm_90a", "sm_count": 132, "lowbit": "0.1.0",
//             "nvrtc": "13.0", "templates": "<digest>", "date": "2026-11-22"},
//    "wq_gemm": {"w4.g128.f16.zp|m16.n8192.k8192": {"config": {...}, "us": 17.9, "heuristic_us": 18.0,
//                 "tried": 21, "runners_up": [{"config": {...}, "us": 18.3}, ...]}}}
// Lookup reads only "config"; the times and runners-up are there for people and for fitting the
// heuristic (docs/perf-notes.md: picking over several neighbours with them did not beat the nearest).
#pragma once
#include <any>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lowbit/types.hpp"

namespace lowbit::tune {

// Why no step borrows another layer's entry (forty-third session): a config's grid is fitted to
// its layer's column count, and a neighbour's can fall on the wrong side of a wave. 9216×7168, not
// in either shipped file, took 8192×7168's entries (log distance 0.17, under the 0.25 the lookup
// then allowed): `lowbit bench`, shipped file against the heuristic, H200 M = 16 20.15 / 14.95 µs,
// M = 64 34.80 / 25.35, M = 128 49.80 / 35.66 (H100 1.11×, 1.37×, 1.40×); no borrowed entry of the
// eleven new layers beat the heuristic by more than 4 %. Leave-one-layer-out over the shipped files
// (scripts/tuning_loo.py, current heuristic): the nearest layer within 0.25, else the heuristic,
// was within 10 % of the hidden layer's best in 192 / 192 of 200 (H200) and 192 / 194 of 202 (H100)
// cases against the heuristic alone.

// How far the nearest-M-bucket step may reach: one doubling of M (log2 distance 1). Farther, the
// rows change the decomposition (a GEMV config at M = 1, a tensor-core GEMM at 64) and the
// heuristic chose better: a W2 4096×14336 file holding only M = 1 made M = 64 take 54.6 µs against
// the heuristic's 33.0, M = 128 107.8 against 49.7 (H200, `lowbit bench`, 2026-11-22).
inline constexpr double kMaxBucketDistance = 1.0;

// Nor across kDecodeMaxRows: buckets up to it (decode) and over it (prefill) never serve each other.
// The 128-row entries are fitted to one or two row blocks, and served 256 rows (one doubling) at up to
// 1.31× the heuristic's 128 × 128 image blocks there (H200 `lowbit bench`, 4096² 23.97 µs against 18.28,
// 4096×14336 60.85 against 51.20, 6144×4096 34.14 against 27.92; sixty-seventh session).
inline constexpr int64_t kDecodeMaxRows = 128;

// Nor to or from 17-128 rows (over kOneTileMaxRows, up to kDecodeMaxRows): there a bucket's config
// is fitted to its rows' blocks (m_tiles 16-row tiles a block), and a neighbour's runs twice the row
// blocks, each streaming the weights, or half-empty ones. H200 `lowbit bench`, W4 bf16 on the preset
// layers (docs/perf-notes.md, seventy-first and seventy-second sessions):
// - a 16-row entry at 32 rows: 1.15-1.35× the fp16 32-row entry (similar format) on 7 of 9 layers
//   (28672×8192 78.81 µs against 58.19);
// - a 32-row entry at 64 rows: 1.10-1.67× the layer's own 64-row entry on 10 of 10 (28672×8192 110.32
//   against 68.06), where the heuristic ran 0.99-1.05× and the fp16 64-row entry 1.00-1.04×;
// - a 64-row entry at 128 rows: 1.08-1.46× the layer's own 128-row entry on 7 of 7, the heuristic 0.99-1.06×
//   (in the tune of 18 layers 1.00-1.44× the best, 1.2× or more on 14; the heuristic 0.95-1.13×);
// - a 64-row entry at 32 rows: 1.13-1.48× the heuristic (sixty-ninth session, the six standard layers).
// Up to 16 rows every bucket's blocks hold one 16-row tile, and the nearest bucket served at 0.99-1.03× the
// alternatives as a geomean (sixty-ninth and seventy-first sessions; 0.89-1.27× case by case, the worst an
// x_sums 16-row entry at 8 rows).
inline constexpr int64_t kOneTileMaxRows = 16;

// Whether an entry tuned at entry_m rows may serve m rows through the nearest-bucket step (the caller checks
// the distance; its own kDecodeMaxRows check also keeps such entries out of the between-two count).
constexpr bool nearest_bucket_may_serve(int64_t entry_m, int64_t m) {
  return (entry_m <= kOneTileMaxRows && m <= kOneTileMaxRows) ||
         (entry_m > kDecodeMaxRows && m > kDecodeMaxRows);
}

inline constexpr int kTuningSchema = 1;

struct TuningMeta {
  std::string device, arch, lowbit, nvrtc, templates, date;
  int sm_count = 0;
};

// A key split into its format part and its named shape fields (m, n, k, ...).
struct TuningKey {
  std::string format;                                           // e.g. "w4.g128.f16.zp"
  std::vector<std::pair<std::string, int64_t>> shape;           // e.g. {{"m",16},{"n",8192},{"k",8192}}
  std::string str() const;                                      // "w4.g128.f16.zp|m16.n8192.k8192"
  static std::optional<TuningKey> parse(const std::string& s);  // nullopt when malformed
  std::optional<int64_t> field(const std::string& name) const;
};

// A key's format split at its dots, most significant first ("w4.g128.f16.zp" → w4, g128, f16, zp): views into
// `format`.
std::vector<std::string_view> format_fields(std::string_view format);

// What a caller parsed from one entry's config (TuningHit::parsed); shared by copies of the db.
struct TuningParsed {
  std::once_flag once;
  std::any value;
};

// Views into the db's index: valid while the db lives unchanged (no put, overlay or assignment).
struct TuningHit {
  const nlohmann::json& config;
  std::string_view key;   // the entry used
  std::string_view step;  // "exact", "nearest M bucket" or "similar format"
  std::string_view file;  // where it came from
  TuningParsed& parsed_slot;
  int64_t m = 0;  // the entry's M bucket (0 if its key has none)

  // parse(config) as a T, run once per entry (thread-safe) and kept in the index: plan builds
  // choose often, and the next hits of the entry skip the parse. A family's callers ask for one T.
  template <class T, class Parse>
  const T& parsed(Parse&& parse) const {
    std::call_once(parsed_slot.once, [&] { parsed_slot.value = T(parse(config)); });
    return std::any_cast<const T&>(parsed_slot.value);
  }
};

class TuningDb {
 public:
  // Reads `path`. Anything wrong is appended to `warnings` (with the path) and skipped; a file for
  // another arch than `arch` contributes nothing. Never throws for the file's content.
  static TuningDb load(const std::string& path, const Arch& arch, std::vector<std::string>* warnings);

  // Entries of `other` replace ours with the same key (a user file over the shipped one).
  void overlay(const TuningDb& other);

  // See the order at the top of this file. Distances are in log2 of each shape field.
  std::optional<TuningHit> lookup(const std::string& family, const TuningKey& key) const;

  void put(const std::string& family, const TuningKey& key, nlohmann::json entry);
  // Merges into the file on disk (if any, same arch) and writes it atomically (temp file + rename).
  void save(const std::string& path) const;

  TuningMeta meta;
  std::vector<std::string> files;  // loaded, in overlay order
  std::size_t size() const;
  nlohmann::json to_json() const;

 private:
  // family → key → {"entry": {...}, "file": path}
  nlohmann::json sections_ = nlohmann::json::object();

  struct Indexed {
    std::string key_str, file;
    // Ids from FamilyIndex::ids; format_class: the first two format fields ("w4.g128").
    int format = -1, format_class = -1;
    std::string format_str;  // "w4.g128.f16.zp": the similar-format step ranks by it
    nlohmann::json config;
    int64_t m = 0;
    double log_m = 0;
    std::string fields;  // the shape fields other than m, by name ("k=8192;n=8192;")
    std::shared_ptr<TuningParsed> parsed = std::make_shared<TuningParsed>();
  };
  // Hashes std::string and std::string_view alike, so a probe needs no std::string.
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct FamilyIndex {
    std::unordered_map<std::string, std::size_t, StringHash, std::equal_to<>> by_key;
    std::vector<Indexed> entries;
    // Format and format-class strings → small ints, which the fallback pass compares.
    std::unordered_map<std::string, int, StringHash, std::equal_to<>> ids;
    // The only candidates of the fallback steps, in entry order (ties go to the first), m > 0:
    // by layer (format + fields) for the nearest M bucket, by M for the similar format.
    std::unordered_map<std::string, std::vector<std::size_t>, StringHash, std::equal_to<>> by_layer;
    std::unordered_map<int64_t, std::vector<std::size_t>> by_m;
  };
  std::unordered_map<std::string, FamilyIndex> index_;
  void reindex();
};

}  // namespace lowbit::tune
