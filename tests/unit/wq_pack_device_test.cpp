// pack_on_device without a GPU: its kernels compile with NVRTC for sm_90a for every format and bit width, bad
// views are refused on the host before anything touches a device, and packed_sizes() agrees with
// what pack() builds. (tests/gpu/wq_pack_gpu_test.cpp compares the packed bytes.)
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "jit/disk_cache.hpp"
#include "lowbit/lowbit.hpp"
#include "lowbit/pack.hpp"
#include "support/catch.hpp"
#include "support/test_support.hpp"
#include "unit/unit_helpers.hpp"

using lowbit::AwqWeightsView;
using lowbit::DequantMode;
using lowbit::DevicePackedWeights;
using lowbit::GptqWeightsView;
using lowbit::HqqWeightsView;
using lowbit::UnpackedWeightsView;
using lowbit::test::contains;
using lowbit::test::error_of;

namespace {

// A stand-in for a device pointer: non-null and 256-byte aligned, never dereferenced on the host.
template <class T>
T* fake_device(std::uintptr_t slot) {
  return reinterpret_cast<T*>(std::uintptr_t{1} << 32 | slot << 8);
}

UnpackedWeightsView unpacked_view(int bits) {
  UnpackedWeightsView v;
  v.q = fake_device<const uint8_t>(1), v.zeros = fake_device<const uint8_t>(2);
  v.scales = fake_device<const uint16_t>(3);
  v.n = 264, v.k = 1024, v.bits = bits, v.group_size = 64;
  return v;
}

GptqWeightsView gptq_view(int bits) {
  GptqWeightsView v;
  v.qweight = fake_device<const int32_t>(1), v.qzeros = fake_device<const int32_t>(2);
  v.scales = fake_device<const uint16_t>(3);
  v.n = 256, v.k = 1024, v.bits = bits, v.group_size = 64;
  return v;
}

AwqWeightsView awq_view() {
  AwqWeightsView v;
  v.qweight = fake_device<const int32_t>(1), v.qzeros = fake_device<const int32_t>(2);
  v.scales = fake_device<const uint16_t>(3);
  v.n = 256, v.k = 1024, v.group_size = 128;
  return v;
}

HqqWeightsView hqq_view(int bits) {
  HqqWeightsView v;
  v.w_q = fake_device<const uint8_t>(1), v.scales = fake_device<const uint16_t>(2);
  v.zeros = fake_device<const uint16_t>(3);
  v.n = 264, v.k = 1024, v.bits = bits, v.group_size = 64;
  return v;
}

DevicePackedWeights outputs() {
  DevicePackedWeights o;
  o.qweight = fake_device<void>(4), o.scales = fake_device<void>(5), o.zeros = fake_device<void>(6);
  return o;
}

// The message of the Error pack_on_device throws for `view` on an offline runtime (no device).
template <class View>
std::string pack_error(lowbit::Runtime& rt, const View& view, const DevicePackedWeights& out = outputs()) {
  return error_of([&] { lowbit::pack_on_device(rt, view, out, nullptr); });
}

}  // namespace

TEST_CASE("pack_on_device kernels compile with NVRTC for sm_90a, every bit width", "[nvrtc][pack]") {
  lowbit::test::TempDir dir;
  lowbit::Runtime rt(lowbit::test::offline_options("sm_90a", dir.path));
  std::size_t kernels = 0;
  for (int bits : {1, 2, 3, 4, 8}) {
    INFO("bits " << bits);
    const std::vector<lowbit::KernelRecord> recs = lowbit::compile_pack_on_device(rt, bits);
    // unpacked, GPTQ (2, 3, 4, 8 bits), AWQ (4), HQQ, then act-order's permutation (one for all).
    const std::string w = "_w" + std::to_string(bits);
    std::vector<std::string> want = {"wq_pack_unpacked" + w};
    if (bits != 1) want.push_back("wq_pack_gptq" + w);
    if (bits == 4) want.push_back("wq_pack_awq" + w);
    want.push_back("wq_pack_hqq" + w);
    want.push_back("wq_pack_perm");
    REQUIRE(recs.size() == want.size());
    for (std::size_t i = 0; i < recs.size(); ++i) {
      const auto& r = recs[i];
      INFO(r.name);
      CHECK(r.name == want[i]);
      const bool first_perm = r.name != "wq_pack_perm" || bits == 1;
      CHECK(std::string(lowbit::to_string(r.source)) == (first_perm ? "compiled" : "memory-cache"));
      CHECK(r.arch == "sm_90a");
      CHECK(lowbit::test::is_hex32(r.digest));
      if (first_perm) ++kernels;
    }
  }
  const auto entries = lowbit::jit::DiskCache(dir.path).list();
  CHECK(entries.size() == kernels);
  for (const auto& e : entries) {
    INFO(e.path);
    CHECK(e.valid);
    CHECK(e.family == "wq_pack");
  }
  // Asked again, the same runtime serves them from memory.
  for (const auto& r : lowbit::compile_pack_on_device(rt, 4))
    CHECK(std::string(lowbit::to_string(r.source)) == "memory-cache");
  const std::string msg = error_of([&] { (void)lowbit::compile_pack_on_device(rt, 5); });
  INFO(msg);
  CHECK(contains(msg, "bits = 5"));
}

TEST_CASE("pack_on_device refuses bad views on the host, before any device use", "[pack]") {
  // An offline runtime: anything that got as far as loading a kernel would fail with "offline".
  lowbit::test::TempDir dir;
  lowbit::Runtime rt(lowbit::test::offline_options("sm_90a", dir.path));
  auto expect = [&](const std::string& msg, std::initializer_list<const char*> needles) {
    INFO(msg);
    CHECK(!contains(msg, "offline"));
    CHECK(msg.rfind("<", 0) != 0);  // a lowbit::Error, thrown
    for (const char* n : needles) CHECK(contains(msg, n));
  };
  // A view that passes every check fails only at loading its kernel.
  auto expect_loaded = [&](const std::string& msg, const std::string& kernel) {
    INFO(msg);
    CHECK(contains(msg, "kernel " + kernel + " cannot be loaded"));
    CHECK(contains(msg, "offline"));
  };

  SECTION("act-order (g_idx): groups, and out.perm present and aligned") {
    DevicePackedWeights o = outputs();
    o.perm = fake_device<int32_t>(64);  // K int32 past g_idx (slots are 256 bytes apart)
    UnpackedWeightsView u = unpacked_view(4);
    u.g_idx = fake_device<const int32_t>(7);
    expect(pack_error(rt, u), {"pack_on_device(unpacked)", "g_idx is set but out.perm is null"});
    expect_loaded(pack_error(rt, u, o), "wq_pack_unpacked_w4");
    GptqWeightsView g = gptq_view(4);
    g.g_idx = fake_device<const int32_t>(7);
    expect(pack_error(rt, g), {"pack_on_device(gptq)", "out.perm is null"});
    expect_loaded(pack_error(rt, g, o), "wq_pack_gptq_w4");
    g.g_idx = reinterpret_cast<const int32_t*>(reinterpret_cast<const char*>(g.g_idx) + 2);
    expect(pack_error(rt, g, o), {"g_idx", "4-byte aligned"});
    g = gptq_view(4);
    g.g_idx = fake_device<const int32_t>(7), g.group_size = 0;
    expect(pack_error(rt, g, o), {"g_idx is set but group_size = 0"});
    DevicePackedWeights in_place = o;
    in_place.perm = const_cast<int32_t*>(u.g_idx) + 4;  // overlaps g_idx's K = 1024 entries
    expect(pack_error(rt, u, in_place), {"out.perm", "overlaps g_idx", "in place"});
    o.perm += 2;
    expect(pack_error(rt, u, o), {"out.perm", "16-byte aligned"});
    u.g_idx_count = 1000;
    expect(pack_error(rt, u, o), {"g_idx has 1000 elements", "K = 1024"});
  }
  SECTION("AWQ: 4 bits, N a multiple of 8, sizes") {
    AwqWeightsView a = awq_view();
    a.bits = 2;
    expect(pack_error(rt, a), {"pack_on_device(awq)", "bits = 2", "4-bit only"});
    a = awq_view();
    a.n = 260;
    expect(pack_error(rt, a), {"n = 260", "multiple of 8"});
    a = awq_view();
    a.qweight_count = 5;
    expect(pack_error(rt, a), {"qweight has 5 elements"});
    a = awq_view();
    a.qweight = nullptr;
    expect(pack_error(rt, a), {"qweight is null"});
    expect_loaded(pack_error(rt, awq_view()), "wq_pack_awq_w4");
    a = awq_view();
    a.qzeros = nullptr;  // symmetric
    DevicePackedWeights o = outputs();
    o.zeros = nullptr;
    expect_loaded(pack_error(rt, a, o), "wq_pack_awq_w4");
  }
  SECTION("HQQ: float zeros, [N, groups] sizes") {
    HqqWeightsView h = hqq_view(3);
    h.zeros = nullptr;
    expect(pack_error(rt, h), {"pack_on_device(hqq)", "zeros is null"});
    h = hqq_view(3);
    h.scales_count = 7;
    expect(pack_error(rt, h), {"scales has 7 elements", "N·groups"});
    DevicePackedWeights o = outputs();
    o.zeros = nullptr;
    expect(pack_error(rt, hqq_view(3), o), {"out.zeros is null", "sub_float_zero_then_scale"});
    expect_loaded(pack_error(rt, hqq_view(3)), "wq_pack_hqq_w3");
  }
  SECTION("GPTQ bits, and shapes GPTQ's packing cannot hold") {
    expect(pack_error(rt, gptq_view(1)), {"pack_on_device(gptq)", "bits = 1", "2, 3, 4 and 8"});
    expect_loaded(pack_error(rt, gptq_view(3)), "wq_pack_gptq_w3");
    GptqWeightsView g3 = gptq_view(3);  // 32 values per 3 int32, down K and along N
    g3.k = 1024 + 16, g3.group_size = 0;
    expect(pack_error(rt, g3), {"k = 1040", "multiple of 32"});
    g3 = gptq_view(3);
    g3.n = 272;
    expect(pack_error(rt, g3), {"n = 272", "multiple of 32"});
    GptqWeightsView g = gptq_view(2);
    g.k = 1024 + 8, g.group_size = 0;
    expect(pack_error(rt, g), {"k = 1032", "multiple of 16"});
    g = gptq_view(2);
    g.n = 264;
    expect(pack_error(rt, g), {"n = 264", "multiple of 16"});
    g.qzeros = nullptr;  // symmetric: no qzeros, so any N
    expect_loaded(pack_error(rt, g), "wq_pack_gptq_w2");
  }
  SECTION("shapes and bits follow can_implement") {
    UnpackedWeightsView u = unpacked_view(5);
    expect(pack_error(rt, u), {"bits = 5"});
    u = unpacked_view(4);
    u.k = 200;
    expect(pack_error(rt, u), {"k = 200", "group_size = 64"});
    u = unpacked_view(4);
    u.n = 0;
    expect(pack_error(rt, u), {"n = 0"});
  }
  SECTION("zeros must match the mode") {
    UnpackedWeightsView u = unpacked_view(4);
    u.float_zeros = fake_device<const uint16_t>(8);
    expect(pack_error(rt, u), {"both zeros and float_zeros"});
    u = unpacked_view(4);
    u.mode = DequantMode::Symmetric;
    expect(pack_error(rt, u), {"zeros is set", "symmetric"});
    u.zeros = nullptr;
    u.mode = DequantMode::ScaleThenAddZero;
    expect(pack_error(rt, u), {"scale_then_add_zero", "needs float zeros"});
    u = unpacked_view(4);
    u.scales = nullptr;
    expect(pack_error(rt, u), {"scales is null"});
    u = unpacked_view(4);
    u.q = nullptr;
    expect(pack_error(rt, u), {"q is null"});
  }
  SECTION("outputs: present and aligned for wq_gemm") {
    DevicePackedWeights o = outputs();
    o.zeros = nullptr;
    expect(pack_error(rt, unpacked_view(4), o), {"out.zeros is null", "sub_zero_then_scale"});
    o = outputs();
    o.qweight = static_cast<char*>(o.qweight) + 4;
    expect(pack_error(rt, unpacked_view(4), o), {"out.qweight", "16-byte aligned"});
    o = outputs();
    o.scales = nullptr;
    expect(pack_error(rt, gptq_view(8), o), {"out.scales is null"});
    GptqWeightsView g = gptq_view(8);
    g.qzeros = nullptr;
    o = outputs();
    o.zeros = nullptr;  // Symmetric writes no zeros
    expect_loaded(pack_error(rt, g, o), "wq_pack_gptq_w8");
  }
  SECTION("a good view gets as far as loading the kernel") {
    expect_loaded(pack_error(rt, unpacked_view(3)), "wq_pack_unpacked_w3");
    expect_loaded(pack_error(rt, gptq_view(8)), "wq_pack_gptq_w8");
    UnpackedWeightsView u = unpacked_view(1);
    u.zeros = nullptr, u.float_zeros = fake_device<const uint16_t>(8);
    expect_loaded(pack_error(rt, u), "wq_pack_unpacked_w1");
  }
  CHECK(lowbit::jit::DiskCache(dir.path).list().empty());  // nothing was compiled for a refused view
}

TEST_CASE("packed_sizes: the byte sizes of what pack() builds", "[pack]") {
  std::mt19937_64 rng(lowbit::test::fresh_seed());
  struct Shape {
    int64_t n, k;
    int group;
  };
  for (const Shape s : {Shape{20, 200, 0}, Shape{264, 1024, 64}, Shape{8, 128, 128}, Shape{100, 768, 256}})
    for (int bits : {1, 2, 3, 4, 8})
      for (DequantMode mode : {DequantMode::SubZeroThenScale, DequantMode::Symmetric,
                               DequantMode::SubFloatZeroThenScale, DequantMode::ScaleThenAddZero}) {
        INFO("n=" << s.n << " k=" << s.k << " group=" << s.group << " bits=" << bits
                  << " mode=" << lowbit::to_string(mode));
        const auto L = lowbit::test::random_layer(s.n, s.k, bits, s.group, lowbit::DType::F16, rng);
        std::vector<uint16_t> float_zeros(L.scales.size(), 0x3c00);
        UnpackedWeightsView v;
        v.q = L.q.data(), v.scales = L.scales.data(), v.n = s.n, v.k = s.k, v.bits = bits,
        v.group_size = s.group;
        v.mode = mode;
        if (lowbit::has_int_zeros(mode)) v.zeros = L.zeros.data();
        if (lowbit::has_float_zeros(mode)) v.float_zeros = float_zeros.data();
        const lowbit::PackedWeights P = lowbit::pack(v);
        lowbit::WqGemmProblem p;
        P.apply_to(p);
        p.m = 77, p.act = lowbit::DType::BF16;  // not part of the layout
        const lowbit::PackedSizes sizes = lowbit::packed_sizes(p);
        CHECK(sizes.qweight_bytes == P.qweight.size() * 4);
        CHECK(sizes.scales_bytes == P.scales.size() * 2);
        CHECK(sizes.zeros_bytes == P.zeros.size() + P.float_zeros.size() * 2);
      }
  lowbit::WqGemmProblem bad;
  bad.n = 64, bad.k = 200, bad.group_size = 64;
  const std::string msg = error_of([&] { (void)lowbit::packed_sizes(bad); });
  INFO(msg);
  CHECK(contains(msg, "packed_sizes"));
  CHECK(contains(msg, "k = 200"));
}
