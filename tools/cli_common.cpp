#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "cli.hpp"
#include "common/check.hpp"
#include "tune/wq_bench.hpp"

namespace lowbit::cli {

void add_common(CLI::App* app, CommonFlags& f, bool with_device) {
  app->add_option("--arch", f.arch, "target arch (sm_80, sm_86, sm_89, sm_90a, ...); default: the device's");
  app->add_option(
      "--cache-dir", f.cache_dir,
      "kernel cache dir (default $LOWBIT_CACHE_DIR, else $XDG_CACHE_HOME/lowbit, else ~/.cache/lowbit)");
  app->add_option("--sm-count", f.sm_count,
                  "offline: SM count of the target GPU (configs depend on it; default: a typical part)");
  app->add_option(
      "--device-name", f.device_name,
      "offline: the GPU to build for as the driver names it (\"NVIDIA H100 80GB HBM3\"); its tuning "
      "file wins");
  if (with_device) app->add_option("--device", f.device, "CUDA device ordinal");
  app->add_flag("--json", f.json, "machine-readable output");
}

void add_wq(CLI::App* app, WqFlags& f) {
  app->add_option("--n", f.n, "output features N");
  app->add_option("--k", f.k, "input features K");
  app->add_option("--bits", f.bits, "weight bits")->default_val(4);
  app->add_option("--group", f.group, "group size (0 = per-channel)")->default_val(128);
  app->add_option("--act", f.act, "activation dtype: f16 or bf16")->default_val("f16");
  app->add_option("--out", f.out, "output dtype (default: the activation dtype; or f32)");
  app->add_flag("--symmetric", f.symmetric, "symmetric weights (no zero points; same as --mode sym)");
  app->add_option("--mode", f.mode,
                  "dequantization: zp (q-z)*s integer zeros, sym, fz (q-z)*s float zeros (HQQ), sz q*s+z")
      ->default_val("zp");
  app->add_flag("--act-order", f.act_order, "weights packed from an act-order (g_idx) checkpoint");
  app->add_flag("--deterministic", f.deterministic, "fixed-order split-K, same K order for every M bucket");
  app->add_option("--accum", f.accum, "MMA accumulation: f32, or f16 (f16 activations; per 128-k chunk)")
      ->default_val("f32");
  app->add_option(
      "--config", f.config,
      "force a config: m_tiles,n_tiles,warps_n,warps_k,split_k[,stages[,x_shared 0|1[,wgmma 0|1[,stream_k "
      "0|1[,x_image 0|1[,x_sums 0|1]]]]]]");
  app->add_option("--model", f.model,
                  "model preset: llama-3-8b, mistral-7b, qwen2.5-7b, llama-3-70b[-tp2|-tp4|-tp8], standard");
  app->add_option("--shapes", f.shapes, "file of layers, one 'N K' per line");
  app->add_option("--cases", f.cases, "'standard': the cases of shared/BENCHMARKS.md");
}

std::vector<int64_t> parse_int_list(const std::string& s, const char* flag) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    try {
      std::size_t pos = 0;
      out.push_back(std::stoll(item, &pos));
      LOWBIT_CHECK(pos == item.size(), "");
    } catch (...) {
      LOWBIT_FAIL("{} = '{}': '{}' is not an integer (expected a comma-separated list like 1,16,64)", flag, s,
                  item);
    }
  }
  return out;
}

std::optional<WqGemmConfig> parse_config(const std::string& s) {
  if (s.empty()) return std::nullopt;
  auto v = parse_int_list(s, "--config");
  LOWBIT_CHECK(v.size() >= 5 && v.size() <= 11,
               "--config = '{}': expected m_tiles,n_tiles,warps_n,warps_k,split_k[,stages[,x_shared[,wgmma[,"
               "stream_k[,x_image[,x_sums]]]]]]",
               s);
  WqGemmConfig c;
  c.m_tiles = static_cast<int>(v[0]), c.n_tiles = static_cast<int>(v[1]), c.warps_n = static_cast<int>(v[2]);
  c.warps_k = static_cast<int>(v[3]), c.split_k = static_cast<int>(v[4]);
  if (v.size() >= 6) c.stages = static_cast<int>(v[5]);
  const std::pair<const char*, bool WqGemmConfig::*> flags[] = {
      {"x_shared (the 7th field)", &WqGemmConfig::x_shared},
      {"wgmma (the 8th field)", &WqGemmConfig::wgmma},
      {"stream_k (the 9th field)", &WqGemmConfig::stream_k},
      {"x_image (the 10th field)", &WqGemmConfig::x_image},
      {"x_sums (the 11th field)", &WqGemmConfig::x_sums}};
  for (std::size_t i = 6; i < v.size(); ++i) {
    const auto [name, field] = flags[i - 6];
    LOWBIT_CHECK(v[i] == 0 || v[i] == 1, "--config = '{}': {} = {}: must be 0 or 1", s, name, v[i]);
    c.*field = v[i] == 1;
  }
  return c;
}

namespace {
const std::map<std::string, std::vector<std::pair<int64_t, int64_t>>>& presets() {
  // Each model's linear layers as (N, K): fused qkv, o_proj, fused gate+up, down_proj. Tensor
  // parallel shards split N of the column-parallel layers (qkv, gate+up) and K of the row-parallel
  // ones (o, down).
  static const std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> p = {
      {"llama-3-8b", {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}}},
      {"mistral-7b", {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}}},
      {"qwen2.5-7b", {{4608, 3584}, {3584, 3584}, {37888, 3584}, {3584, 18944}}},
      {"llama-3-70b", {{10240, 8192}, {8192, 8192}, {57344, 8192}, {8192, 28672}}},
      {"llama-3-70b-tp2", {{5120, 8192}, {8192, 4096}, {28672, 8192}, {8192, 14336}}},
      {"llama-3-70b-tp4", {{2560, 8192}, {8192, 2048}, {14336, 8192}, {8192, 7168}}},
      {"llama-3-70b-tp8", {{1280, 8192}, {8192, 1024}, {7168, 8192}, {8192, 3584}}},
      {"standard", tune::standard_wq_shapes()},
  };
  return p;
}
}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& [name, shapes] : presets()) names.push_back(name);
  return names;
}

// "N K" per line (or "N,K"); '#' starts a comment.
std::vector<std::pair<int64_t, int64_t>> read_shapes_file(const std::string& path) {
  std::ifstream in(path);
  LOWBIT_CHECK(in.good(), "--shapes = '{}': cannot be read", path);
  std::vector<std::pair<int64_t, int64_t>> out;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    line = line.substr(0, line.find('#'));
    for (char& c : line) c = c == ',' ? ' ' : c;
    std::istringstream ss(line);
    int64_t n = 0, k = 0;
    std::string rest;
    if (!(ss >> n)) continue;  // blank or comment
    LOWBIT_CHECK(ss >> k && !(ss >> rest) && n > 0 && k > 0,
                 "--shapes = '{}', line {}: expected two positive integers 'N K', got '{}'", path, no, line);
    out.emplace_back(n, k);
  }
  LOWBIT_CHECK(!out.empty(), "--shapes = '{}': no 'N K' lines", path);
  return out;
}

std::vector<std::pair<int64_t, int64_t>> wq_shapes(const WqFlags& f) {
  if (!f.shapes.empty()) return read_shapes_file(f.shapes);
  std::string preset = !f.cases.empty() ? f.cases : f.model;
  if (!preset.empty()) {
    auto it = presets().find(preset);
    LOWBIT_CHECK(it != presets().end(), "--model/--cases = '{}': not a preset (known: {})", preset,
                 fmt::join(model_names(), ", "));
    return it->second;
  }
  LOWBIT_CHECK(f.n > 0 && f.k > 0, "--n = {}, --k = {}: give both (positive), or --model / --cases", f.n,
               f.k);
  return {{f.n, f.k}};
}

DequantMode parse_mode(const std::string& s) {
  if (s == "zp") return DequantMode::SubZeroThenScale;
  if (s == "sym") return DequantMode::Symmetric;
  if (s == "fz") return DequantMode::SubFloatZeroThenScale;
  if (s == "sz") return DequantMode::ScaleThenAddZero;
  LOWBIT_FAIL("--mode = '{}': must be zp, sym, fz or sz", s);
}

WqGemmProblem wq_problem(const WqFlags& f, int64_t n, int64_t k) {
  WqGemmProblem p;
  p.n = n, p.k = k, p.bits = f.bits, p.group_size = f.group;
  p.act = parse_dtype(f.act);
  p.out = f.out.empty() ? p.act : parse_dtype(f.out);
  p.mode = parse_mode(f.symmetric ? "sym" : f.mode);
  p.act_order = f.act_order;
  p.deterministic = f.deterministic;
  p.accum = parse_dtype(f.accum);
  std::string why;
  LOWBIT_CHECK(can_implement(p, &why), "{}", why);
  return p;
}

RuntimeOptions device_runtime_options(const CommonFlags& f, int device) {
  std::string why;
  LOWBIT_CHECK(cuda_device_available(&why), "this command needs a CUDA device: {}", why);
  RuntimeOptions o;
  o.cache_dir = f.cache_dir;
  o.arch = f.arch;
  o.device = device;
  return o;
}

Runtime make_runtime(const CommonFlags& f, bool need_device) {
  if (need_device) return Runtime(device_runtime_options(f, f.device));
  RuntimeOptions o;
  o.cache_dir = f.cache_dir;
  o.arch = f.arch;
  std::string why;
  const bool have_device = cuda_device_available(&why);
  // With a device whose arch is the one asked for (or none asked for, and no --sm-count), build for
  // that device; otherwise offline for --arch.
  if (have_device && f.sm_count == 0) {
    RuntimeOptions probe = o;
    probe.device = f.device;
    probe.arch.clear();
    Runtime rt(probe);
    if (f.arch.empty() || Arch::parse(f.arch).sm() == rt.arch().sm()) {
      o.device = f.device;
      return Runtime(o);
    }
  }
  LOWBIT_CHECK(!f.arch.empty(), "no CUDA device ({}): pass --arch (e.g. --arch sm_90a) to compile offline",
               have_device ? "--sm-count asks for an offline build" : why);
  o.device = -1;
  o.sm_count = f.sm_count;
  o.device_name = f.device_name;
  return Runtime(o);
}

void print_json(const nlohmann::json& j) {
  std::printf("%s\n", j.dump(2).c_str());
}

}  // namespace lowbit::cli
