#include <doctest/doctest.h>

#include <stdexcept>

#include "core/units.hpp"

using namespace osim;

TEST_CASE("sizes parse in decimal and binary units") {
  CHECK(parse_bytes("1 GiB") == 1073741824);
  CHECK(parse_bytes("1.5 KiB") == 1536);
  CHECK(parse_bytes("256MB") == 256000000);
  CHECK(parse_bytes("4096") == 4096);
  CHECK(parse_bytes("0 B") == 0);
  CHECK_THROWS_AS(parse_bytes("1 GBB"), std::invalid_argument);
  CHECK_THROWS_AS(parse_bytes("-1 MB"), std::invalid_argument);
  CHECK_THROWS_AS(parse_bytes("0.3 B"), std::invalid_argument);
  CHECK_THROWS_AS(parse_bytes("lots"), std::invalid_argument);
}

TEST_CASE("bandwidths parse, bits included, and must be positive") {
  CHECK(parse_bandwidth("64 GB/s").bytes_per_s == doctest::Approx(64e9));
  CHECK(parse_bandwidth("400 Gb/s").bytes_per_s == doctest::Approx(50e9));
  CHECK(parse_bandwidth("1 GiB/s").bytes_per_s == doctest::Approx(1073741824.0));
  CHECK_THROWS_AS(parse_bandwidth("0 GB/s"), std::invalid_argument);
  CHECK_THROWS_AS(parse_bandwidth("-5 GB/s"), std::invalid_argument);
  CHECK_THROWS_AS(parse_bandwidth("5 GB"), std::invalid_argument);
}

TEST_CASE("durations parse to integer picoseconds") {
  CHECK(parse_duration("1.5 us").ps() == 1500000);
  CHECK(parse_duration("2 ms").ps() == 2000000000);
  CHECK(parse_duration("7 ns").ps() == 7000);
  CHECK(parse_duration("3 ps").ps() == 3);
  CHECK_THROWS_AS(parse_duration("1 min"), std::invalid_argument);
  CHECK_THROWS_AS(parse_duration("-1 us"), std::invalid_argument);
}

TEST_CASE("transfer time rounds up to the next picosecond") {
  // 1000 bytes at 3 bytes/ps = 333.33 ps -> 334 ps
  CHECK(transfer_time(1000, Bandwidth{3e12}).ps() == 334);
  CHECK(transfer_time(1e9, Bandwidth::from_GBps(1)).ps() == 1000000000000);
  CHECK(transfer_time(0, Bandwidth::from_GBps(1)) == Time::zero());
}

TEST_CASE("formatting is fixed and deterministic") {
  CHECK(format_bytes(1073741824) == "1.00 GiB");
  CHECK(format_bandwidth(Bandwidth::from_GBps(54.8234)) == "54.82 GB/s");
  CHECK(format_time(Time::from_us(19586.5)) == "19.587 ms");
  CHECK(format_time(Time::from_ns(700)) == "700.000 ns");
}
