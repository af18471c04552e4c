// lowbit::Digest128: FNV-1a 128 against published / independently computed values.
#include "common/digest.hpp"

#include <set>
#include <string>

#include "support/catch.hpp"
#include "unit/unit_helpers.hpp"

TEST_CASE("Digest128 matches the FNV-1a 128 test vectors", "[digest]") {
  CHECK(lowbit::Digest128().hex() == "6c62272e07bb014262b821756295c58d");  // offset basis
  CHECK(lowbit::digest_hex("") == "6c62272e07bb014262b821756295c58d");
  CHECK(lowbit::digest_hex("a") == "d228cb696f1a8caf78912b704e4a8964");
  CHECK(lowbit::digest_hex("foobar") == "343e1662793c64bf6f0d3597ba446f18");
  // Computed with an independent (Python big-integer) FNV-1a 128.
  CHECK(lowbit::digest_hex("lowbit") == "e6bf503fa33c64bf6ee9bf448f30cd7c");
  CHECK(lowbit::digest_hex(std::string("a\0b", 3)) == "a68d6315038b5822836dbc79783ec15a");
  std::string all_bytes;
  for (int rep = 0; rep < 4; ++rep)
    for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  CHECK(lowbit::digest_hex(all_bytes) == "a14176b4fa8be677563f36da8584718d");
}

TEST_CASE("Digest128: incremental updates equal one update", "[digest]") {
  lowbit::Digest128 d;
  d.update("foo").update("").update(std::string_view("bar"));
  CHECK(d.hex() == lowbit::digest_hex("foobar"));
  const char raw[] = {'f', 'o', 'o', 'b', 'a', 'r'};
  CHECK(lowbit::Digest128().update(raw, sizeof raw).hex() == lowbit::digest_hex("foobar"));
  // hex() does not change the state.
  lowbit::Digest128 e;
  e.update("foo");
  (void)e.hex();
  e.update("bar");
  CHECK(e.hex() == lowbit::digest_hex("foobar"));
}

TEST_CASE("Digest128: different inputs give different digests", "[digest]") {
  const char* inputs[] = {"", "a", "b", "ab", "ba", "abc", "a\n", "A", " a", "aa"};
  std::set<std::string> seen;
  for (const char* s : inputs) {
    const std::string h = lowbit::digest_hex(s);
    INFO(s << " -> " << h);
    CHECK(lowbit::test::is_hex32(h));
    seen.insert(h);
  }
  CHECK(seen.size() == sizeof inputs / sizeof inputs[0]);
  // Embedded NULs count; so does the byte order.
  CHECK(lowbit::digest_hex(std::string("a\0", 2)) != lowbit::digest_hex("a"));
  CHECK(lowbit::digest_hex(std::string("a\0b", 3)) != lowbit::digest_hex("ab"));
}
