// pack_on_device against pack(): byte-equal qweight, scales and zeros for every bit width and zero
// kind of unpacked weights and for GPTQ v1 / v2 / symmetric checkpoints, at shapes that pad N and K.
// The outputs are poisoned (0xff) first, so an unwritten byte — padding included — cannot pass.
#include <cstdint>
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
  explicit DeviceOutputs(const PackedSizes& s) : qweight(s.qweight_bytes), scales(s.scales_bytes) {
    if (s.zeros_bytes) zeros = jit::DeviceBuffer(s.zeros_bytes);
    for (const jit::DeviceBuffer* b : {&qweight, &scales, &zeros})
      if (b->bytes()) b->fill_bytes(0xff);
  }
  DevicePackedWeights view() const {
    return {qweight.get(), scales.get(), zeros.bytes() ? zeros.get() : nullptr};
  }
  jit::DeviceBuffer qweight, scales, zeros;
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

// Packs through `pack_device` on a stream of its own, then compares every output byte with P.
template <class PackOnDevice>
void require_same_bytes(const PackedWeights& P, PackOnDevice&& pack_device) {
  WqGemmProblem p;
  P.apply_to(p);
  const PackedSizes sizes = packed_sizes(p);
  REQUIRE(sizes.qweight_bytes == P.qweight.size() * 4);
  REQUIRE(sizes.scales_bytes == P.scales.size() * 2);
  REQUIRE(sizes.zeros_bytes == P.zeros.size() + P.float_zeros.size() * 2);
  DeviceOutputs out(sizes);
  tune::ScopedStream stream;
  pack_device(out.view(), stream.get());
  stream.synchronize();
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

void check_unpacked(const Shape& s, int bits, Zeros kind) {
  INFO("unpacked bits=" << bits << " N=" << s.n << " K=" << s.k << " G=" << s.group << " " << name_of(kind));
  gpu_runtime();  // the device's context is current before anything is allocated
  const RandomLayer L = random_layer(s.n, s.k, bits, s.group, DType::F16, gpu_rng());
  const std::vector<uint16_t> float_zeros = random_halves(L.scales.size());
  UnpackedWeightsView host;
  host.q = L.q.data(), host.scales = L.scales.data();
  host.n = s.n, host.k = s.k, host.bits = bits, host.group_size = s.group;
  if (kind == Zeros::Int) host.zeros = L.zeros.data();
  if (kind == Zeros::Float || kind == Zeros::ScaleThenAdd) host.float_zeros = float_zeros.data();
  if (kind == Zeros::ScaleThenAdd) host.mode = DequantMode::ScaleThenAddZero;
  const PackedWeights P = pack(host);

  const jit::DeviceBuffer q = jit::DeviceBuffer::from(L.q), scales = jit::DeviceBuffer::from(L.scales);
  const jit::DeviceBuffer zeros = jit::DeviceBuffer::from(L.zeros),
                          fzeros = jit::DeviceBuffer::from(float_zeros);
  UnpackedWeightsView device = host;
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

void check_gptq(const Shape& shape, int bits, GptqZeros format, bool with_zeros) {
  // GPTQ packs 32/bits values of K per int32, and with qzeros 32/bits columns: round those up.
  const int per = 32 / bits;
  const Shape s{with_zeros ? round_up(shape.n, per) : shape.n, round_up(shape.k, per), shape.group};
  INFO("gptq bits=" << bits << " N=" << s.n << " K=" << s.k << " G=" << s.group << " "
                    << (!with_zeros                  ? "symmetric"
                        : format == GptqZeros::Exact ? "v2"
                                                     : "v1"));
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
  const PackedWeights P = pack(host);

  const jit::DeviceBuffer qweight = jit::DeviceBuffer::from(c.qweight),
                          scales = jit::DeviceBuffer::from(L.scales);
  jit::DeviceBuffer qzeros;
  if (with_zeros) qzeros = jit::DeviceBuffer::from(c.qzeros);
  GptqWeightsView device = host;
  device.qweight = static_cast<const int32_t*>(qweight.get());
  device.qzeros = with_zeros ? static_cast<const int32_t*>(qzeros.get()) : nullptr;
  device.scales = static_cast<const uint16_t*>(scales.get());
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

TEST_CASE("pack_on_device(gptq) = pack(): bits 2/4/8 x v1, v2 and symmetric", "[gpu][pack]") {
  for (const Shape& s : kShapes)
    for (int bits : {2, 4, 8}) {
      check_gptq(s, bits, GptqZeros::StoredMinusOne, true);
      check_gptq(s, bits, GptqZeros::Exact, true);
      check_gptq(s, bits, GptqZeros::StoredMinusOne, false);
    }
}

TEST_CASE("pack_on_device at a model shape (4096x4096, group 128)", "[gpu][pack]") {
  check_unpacked({4096, 4096, 128}, 4, Zeros::Int);
  check_unpacked({4096, 4096, 128}, 3, Zeros::Float);
  check_gptq({4096, 4096, 128}, 4, GptqZeros::StoredMinusOne, true);
}
