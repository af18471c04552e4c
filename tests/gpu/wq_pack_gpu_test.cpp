// pack_on_device against pack(): byte-equal qweight, scales, zeros and (act-order) perm for every bit
// width and zero kind of unpacked weights, GPTQ v1 / v2 / symmetric, AWQ and HQQ checkpoints, and
// act-order through a shuffled g_idx, at shapes that pad N and K. The outputs are poisoned (0xff)
// first, so an unwritten byte — padding included — cannot pass.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_fixture.hpp"
#include "jit/driver.hpp"
#include "support/catch.hpp"
#include "tune/timer.hpp"

using namespace lowbit;
using namespace lowbit::test;

namespace {

struct Shape {
  int64_t n, k;
  int group;
};
// N = 20 pads to 24 and K = 200 to 256 (per channel); N = 264 has 33 tiles, K = 1024 16 groups of 64.
const Shape kShapes[] = {{20, 200, 0}, {264, 1024, 64}};

enum class Zeros { Int, Float, ScaleThenAdd, None };

const char* name_of(Zeros z) {
  switch (z) {
    case Zeros::Int:
      return "int zeros";
    case Zeros::Float:
      return "float zeros";
    case Zeros::ScaleThenAdd:
      return "scale then add zero";
    case Zeros::None:
      return "symmetric";
  }
  return "?";
}

// Device buffers of packed_sizes() bytes, poisoned.
struct DeviceOutputs {
  DeviceOutputs(const PackedSizes& s, std::size_t perm_count)
      : qweight(s.qweight_bytes), scales(s.scales_bytes) {
    if (s.zeros_bytes) zeros = jit::DeviceBuffer(s.zeros_bytes);
    if (perm_count) perm = jit::DeviceBuffer(perm_count * 4);
    for (const jit::DeviceBuffer* b : {&qweight, &scales, &zeros, &perm})
      if (b->bytes()) b->fill_bytes(0xff);
  }
  DevicePackedWeights view() const {
    return {qweight.get(), scales.get(), zeros.bytes() ? zeros.get() : nullptr,
            perm.bytes() ? static_cast<int32_t*>(perm.get()) : nullptr};
  }
  jit::DeviceBuffer qweight, scales, zeros, perm;
};

// "" when equal, else the first differing element (the vectors are too long to print whole).
template <class T>
std::string first_difference(const char* what, const std::vector<T>& device, const std::vector<T>& host) {
  if (device.size() != host.size())
    return std::string(what) + ": " + std::to_string(device.size()) + " elements, want " +
           std::to_string(host.size());
  for (std::size_t i = 0; i < device.size(); ++i)
    if (device[i] != host[i])
      return std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(device[i]) +
             ", pack() wrote " + std::to_string(host[i]);
  return "";
}

// Packs through `pack_device` on a stream of its own, then compares every output byte with P (and
// the permutation, where P has one).
template <class PackOnDevice>
void require_same_bytes(const PackedWeights& P, PackOnDevice&& pack_device) {
  WqGemmProblem p;
  P.apply_to(p);
  const PackedSizes sizes = packed_sizes(p);
  REQUIRE(sizes.qweight_bytes == P.qweight.size() * 4);
  REQUIRE(sizes.scales_bytes == P.scales.size() * 2);
  REQUIRE(sizes.zeros_bytes == P.zeros.size() + P.float_zeros.size() * 2);
  DeviceOutputs out(sizes, P.perm.size());
  tune::ScopedStream stream;
  pack_device(out.view(), stream.get());
  stream.synchronize();
  if (!P.perm.empty()) CHECK(first_difference("perm", out.perm.to_vector<int32_t>(), P.perm) == "");
  CHECK(first_difference("qweight", out.qweight.to_vector<uint32_t>(), P.qweight) == "");
  CHECK(first_difference("scales", out.scales.to_vector<uint16_t>(), P.scales) == "");
  if (!P.zeros.empty()) CHECK(first_difference("zeros", out.zeros.to_vector<uint8_t>(), P.zeros) == "");
  if (!P.float_zeros.empty())
    CHECK(first_difference("float zeros", out.zeros.to_vector<uint16_t>(), P.float_zeros) == "");
}

std::vector<uint16_t> random_halves(std::size_t count) {
  std::uniform_int_distribution<int> d(0, 0xffff);
  std::vector<uint16_t> v(count);
  for (auto& h : v) h = static_cast<uint16_t>(d(gpu_rng()));
  return v;
}

// An act-order g_idx: exactly group_size input features per group, in a random order.
std::vector<int32_t> shuffled_g_idx(int64_t k, int group) {
  std::vector<int32_t> g(static_cast<std::size_t>(k));
  for (int64_t i = 0; i < k; ++i) g[static_cast<std::size_t>(i)] = static_cast<int32_t>(i / group);
  std::shuffle(g.begin(), g.end(), gpu_rng());
  return g;
}

void check_unpacked(const Shape& s, int bits, Zeros kind, bool act_order = false) {
  INFO("unpacked bits=" << bits << " N=" << s.n << " K=" << s.k << " G=" << s.group << " " << name_of(kind)
                        << (act_order ? " act-order" : ""));
  gpu_runtime();  // the device's context is current before anything is allocated
  const RandomLayer L = random_layer(s.n, s.k, bits, s.group, DType::F16, gpu_rng());
  const std::vector<int32_t> g_idx = act_order ? shuffled_g_idx(s.k, s.group) : std::vector<int32_t>{};
  const std::vector<uint16_t> float_zeros = random_halves(L.scales.size());
  UnpackedWeightsView host;
  host.q = L.q.data(), host.scales = L.scales.data();
  host.n = s.n, host.k = s.k, host.bits = bits, host.group_size = s.group;
  if (kind == Zeros::Int) host.zeros = L.zeros.data();
  if (kind == Zeros::Float || kind == Zeros::ScaleThenAdd) host.float_zeros = float_zeros.data();
  if (kind == Zeros::ScaleThenAdd) host.mode = DequantMode::ScaleThenAddZero;
  if (act_order) host.g_idx = g_idx.data();
  const PackedWeights P = pack(host);
  REQUIRE(P.act_order() == act_order);

  const jit::DeviceBuffer q = jit::DeviceBuffer::from(L.q), scales = jit::DeviceBuffer::from(L.scales);
  const jit::DeviceBuffer zeros = jit::DeviceBuffer::from(L.zeros),
                          fzeros = jit::DeviceBuffer::from(float_zeros);
  jit::DeviceBuffer g_idx_dev;
  if (act_order) g_idx_dev = jit::DeviceBuffer::from(g_idx);
  UnpackedWeightsView device = host;
  device.g_idx = act_order ? static_cast<const int32_t*>(g_idx_dev.get()) : nullptr;
  device.q = static_cast<const uint8_t*>(q.get());
  device.scales = static_cast<const uint16_t*>(scales.get());
  if (host.zeros) device.zeros = static_cast<const uint8_t*>(zeros.get());
  if (host.float_zeros) device.float_zeros = static_cast<const uint16_t*>(fzeros.get());
  require_same_bytes(P, [&](const DevicePackedWeights& out, Stream stream) {
    pack_on_device(gpu_runtime(), device, out, stream);
  });
}

int64_t round_up(int64_t a, int64_t b) {
  return (a + b - 1) / b * b;
}

void check_gptq(const Shape& shape, int bits, GptqZeros format, bool with_zeros, bool act_order = false) {
  // GPTQ packs 32/bits values of K per int32 (3 bits: 32 per 3 int32), and with qzeros as many
  // columns: round those up.
  const int per = bits == 3 ? 32 : 32 / bits;
  const Shape s{with_zeros ? round_up(shape.n, per) : shape.n, round_up(shape.k, per), shape.group};
  INFO("gptq bits=" << bits << " N=" << s.n << " K=" << s.k << " G=" << s.group << " "
                    << (!with_zeros                  ? "symmetric"
                        : format == GptqZeros::Exact ? "v2"
                                                     : "v1")
                    << (act_order ? " act-order" : ""));
  gpu_runtime();
  RandomLayer L = random_layer(s.n, s.k, bits, s.group, DType::F16, gpu_rng());
  if (format == GptqZeros::StoredMinusOne)  // v1 stores z − 1 in `bits` bits: z = 0 has no encoding
    for (auto& z : L.zeros)
      if (z == 0) z = 1;
  const GptqCheckpoint c = gptq_checkpoint(L, format, with_zeros);
  GptqWeightsView host;
  host.qweight = c.qweight.data(), host.qzeros = with_zeros ? c.qzeros.data() : nullptr;
  host.scales = L.scales.data();
  host.n = s.n, host.k = s.k, host.bits = bits, host.group_size = s.group, host.zeros_format = format;
  const std::vector<int32_t> g_idx = act_order ? shuffled_g_idx(s.k, s.group) : std::vector<int32_t>{};
  if (act_order) host.g_idx = g_idx.data();
  const PackedWeights P = pack(host);
  REQUIRE(P.act_order() == act_order);

  const jit::DeviceBuffer qweight = jit::DeviceBuffer::from(c.qweight),
                          scales = jit::DeviceBuffer::from(L.scales);
  jit::DeviceBuffer qzeros;
  if (with_zeros) qzeros = jit::DeviceBuffer::from(c.qzeros);
  GptqWeightsView device = host;
  device.qweight = static_cast<const int32_t*>(qweight.get());
  device.qzeros = with_zeros ? static_cast<const int32_t*>(qzeros.get()) : nullptr;
  device.scales = static_cast<const uint16_t*>(scales.get());
  jit::DeviceBuffer g_idx_dev;
  if (act_order) g_idx_dev = jit::DeviceBuffer::from(g_idx);
  device.g_idx = act_order ? static_cast<const int32_t*>(g_idx_dev.get()) : nullptr;
  require_same_bytes(P, [&](const DevicePackedWeights& out, Stream stream) {
    pack_on_device(gpu_runtime(), device, out, stream);
  });
}

std::vector<int32_t> random_words(std::size_t count) {
  std::uniform_int_distribution<uint32_t> d;
  std::vector<int32_t> v(count);
  for (auto& w : v) w = static_cast<int32_t>(d(gpu_rng()));
  return v;
}

// AWQ: random words are a valid checkpoint (every nibble is a 4-bit value).
void check_awq(const Shape& s, bool with_zeros) {
  INFO("awq N=" << s.n << " K=" << s.k << " G=" << s.group << (with_zeros ? "" : " symmetric"));
  gpu_runtime();
  const int64_t groups = s.group ? s.k / s.group : 1;
  const std::vector<int32_t> qweight = random_words(static_cast<std::size_t>(s.k * s.n / 8)),
                             qzeros = random_words(static_cast<std::size_t>(groups * s.n / 8));
  const std::vector<uint16_t> scales = random_halves(static_cast<std::size_t>(groups * s.n));
  AwqWeightsView host;
  host.qweight = qweight.data(), host.qzeros = with_zeros ? qzeros.data() : nullptr;
  host.scales = scales.data();
  host.n = s.n, host.k = s.k, host.group_size = s.group;
  const PackedWeights P = pack(host);
  const jit::DeviceBuffer qw = jit::DeviceBuffer::from(qweight), qz = jit::DeviceBuffer::from(qzeros),
                          sc = jit::DeviceBuffer::from(scales);
  AwqWeightsView device = host;
  device.qweight = static_cast<const int32_t*>(qw.get());
  device.qzeros = with_zeros ? static_cast<const int32_t*>(qz.get()) : nullptr;
  device.scales = static_cast<const uint16_t*>(sc.get());
  require_same_bytes(P, [&](const DevicePackedWeights& out, Stream stream) {
    pack_on_device(gpu_runtime(), device, out, stream);
  });
}

// HQQ: W_q [N, K], scales and float zeros [N, groups].
void check_hqq(const Shape& s, int bits) {
  INFO("hqq bits=" << bits << " N=" << s.n << " K=" << s.k << " G=" << s.group);
  gpu_runtime();
  const RandomLayer L = random_layer(s.n, s.k, bits, s.group, DType::F16, gpu_rng());
  const int64_t groups = s.group ? s.k / s.group : 1;
  const std::vector<uint16_t> scales = random_halves(static_cast<std::size_t>(s.n * groups)),
                              zeros = random_halves(scales.size());
  HqqWeightsView host;
  host.w_q = L.q.data(), host.scales = scales.data(), host.zeros = zeros.data();
  host.n = s.n, host.k = s.k, host.bits = bits, host.group_size = s.group;
  const PackedWeights P = pack(host);
  const jit::DeviceBuffer wq = jit::DeviceBuffer::from(L.q), sc = jit::DeviceBuffer::from(scales),
                          zs = jit::DeviceBuffer::from(zeros);
  HqqWeightsView device = host;
  device.w_q = static_cast<const uint8_t*>(wq.get());
  device.scales = static_cast<const uint16_t*>(sc.get());
  device.zeros = static_cast<const uint16_t*>(zs.get());
  require_same_bytes(P, [&](const DevicePackedWeights& out, Stream stream) {
    pack_on_device(gpu_runtime(), device, out, stream);
  });
}

}  // namespace

TEST_CASE("pack_on_device(unpacked) = pack(): bits 1/2/3/4/8 x int, float, q*s+z and no zeros",
          "[gpu][pack]") {
  for (const Shape& s : kShapes)
    for (int bits : {1, 2, 3, 4, 8})
      for (Zeros kind : {Zeros::Int, Zeros::Float, Zeros::ScaleThenAdd, Zeros::None})
        check_unpacked(s, bits, kind);
}

TEST_CASE("pack_on_device(gptq) = pack(): bits 2/3/4/8 x v1, v2 and symmetric", "[gpu][pack]") {
  for (const Shape& s : kShapes)
    for (int bits : {2, 3, 4, 8}) {
      check_gptq(s, bits, GptqZeros::StoredMinusOne, true);
      check_gptq(s, bits, GptqZeros::Exact, true);
      check_gptq(s, bits, GptqZeros::StoredMinusOne, false);
    }
}

TEST_CASE("pack_on_device(awq) = pack(), pack_on_device(hqq) = pack(): bits 1/2/3/4/8", "[gpu][pack]") {
  // AWQ packs 8 columns per int32: N = 24 (pads nothing) and 264; K = 200 per channel, 1024 in 64s.
  for (const Shape& s : {Shape{24, 200, 0}, Shape{264, 1024, 64}}) {
    check_awq(s, true);
    check_awq(s, false);
  }
  for (const Shape& s : kShapes)
    for (int bits : {1, 2, 3, 4, 8}) check_hqq(s, bits);
}

TEST_CASE("pack_on_device with g_idx (act-order) = pack(): the same permutation and weights", "[gpu][pack]") {
  // Groups of 32, 64 and 128 (K = 1024 and 4096: up to 128 warps of the permutation kernel).
  for (const Shape& s : {Shape{264, 1024, 64}, Shape{40, 4096, 32}, Shape{24, 4096, 128}})
    for (int bits : {2, 3, 4, 8}) check_unpacked(s, bits, bits == 3 ? Zeros::Float : Zeros::Int, true);
  for (int bits : {2, 3, 4, 8}) {
    check_gptq({264, 1024, 64}, bits, GptqZeros::StoredMinusOne, true, true);
    check_gptq({32, 2048, 128}, bits, GptqZeros::Exact, false, true);
  }
}

TEST_CASE("pack_on_device with a g_idx pack() refuses: no fault, unfilled slots of -1", "[gpu][pack]") {
  // Group 0 claims 65 features and group 1 63 (K = 128, groups of 64): the first 64 of group 0 fill
  // its slots in increasing k, the 65th is dropped, and group 1's last slot is -1 (packs as 0).
  gpu_runtime();
  const int64_t n = 8, k = 128;
  std::vector<int32_t> g_idx(static_cast<std::size_t>(k));
  for (int64_t i = 0; i < k; ++i) g_idx[static_cast<std::size_t>(i)] = i < 65 ? 0 : 1;
  const RandomLayer L = random_layer(n, k, 4, 64, DType::F16, gpu_rng());
  const jit::DeviceBuffer q = jit::DeviceBuffer::from(L.q), zeros = jit::DeviceBuffer::from(L.zeros),
                          scales = jit::DeviceBuffer::from(L.scales), g = jit::DeviceBuffer::from(g_idx);
  UnpackedWeightsView device;
  device.q = static_cast<const uint8_t*>(q.get()), device.zeros = static_cast<const uint8_t*>(zeros.get());
  device.scales = static_cast<const uint16_t*>(scales.get()),
  device.g_idx = static_cast<const int32_t*>(g.get());
  device.n = n, device.k = k, device.bits = 4, device.group_size = 64;
  WqGemmProblem p;
  p.n = n, p.k = k, p.bits = 4, p.group_size = 64;
  DeviceOutputs out(packed_sizes(p), static_cast<std::size_t>(k));
  tune::ScopedStream stream;
  pack_on_device(gpu_runtime(), device, out.view(), stream.get());
  stream.synchronize();
  std::vector<int32_t> want(static_cast<std::size_t>(k));
  for (int64_t j = 0; j < 64; ++j) want[static_cast<std::size_t>(j)] = static_cast<int32_t>(j);
  for (int64_t j = 64; j < 127; ++j) want[static_cast<std::size_t>(j)] = static_cast<int32_t>(j + 1);
  want[127] = -1;
  CHECK(first_difference("perm", out.perm.to_vector<int32_t>(), want) == "");
  // Packed position 127 holds 0 in every column; the others hold the source values.
  PackedWeights P;
  P.n = n, P.k = k, P.bits = 4, P.group_size = 64, P.n_pad = 8, P.k_pad = 128, P.groups_pad = 2;
  P.qweight = out.qweight.to_vector<uint32_t>();
  for (int64_t c = 0; c < n; ++c)
    for (int64_t j = 0; j < k; ++j) {
      INFO("column " << c << ", packed k " << j);
      REQUIRE(P.q_at(c, j) ==
              (j == 127 ? 0 : L.q[static_cast<std::size_t>(c * k + want[static_cast<std::size_t>(j)])]));
    }
}

TEST_CASE("pack_on_device at a model shape (4096x4096, group 128)", "[gpu][pack]") {
  check_unpacked({4096, 4096, 128}, 4, Zeros::Int);
  check_unpacked({4096, 4096, 128}, 3, Zeros::Float);
  check_gptq({4096, 4096, 128}, 4, GptqZeros::StoredMinusOne, true);
  check_gptq({4096, 4096, 128}, 3, GptqZeros::Exact, true);
}
