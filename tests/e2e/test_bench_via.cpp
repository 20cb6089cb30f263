// `nicemu bench via --quick --json`: VIPL and Comet-FM figures on the comet
// model have the documented shape, and no bandwidth beats the best goodput
// Ethernet framing allows at the link's line rate. The bound is recomputed
// here from the framing figures (checked against IEEE 802.3, comet.toml and
// via_protocol.h), not taken from the bench.
#include "bench_checks.hpp"

#include "nicemu/via_protocol.h"

#include <nlohmann/json.hpp>

#include <algorithm>

using namespace e2e;

namespace {

// Wire bytes of a message of `bytes` bytes sent in fragments of at most
// `fragment` bytes behind `headers` bytes of headers: per frame the
// preamble, the 14-byte header, the payload, the FCS (the frame padded to
// the minimum) and the interframe gap.
double wire_bytes(const nlohmann::json &fr, double bytes, double headers,
                  double fragment) {
  double preamble = fr.at("preamble_bytes"),
         gap = fr.at("interframe_gap_bytes"),
         min_frame = fr.at("min_frame_bytes"),
         eth = fr.at("ethernet_header_bytes"), fcs = fr.at("fcs_bytes");
  double wire = 0;
  double left = bytes;
  do {
    double n = std::min(left, fragment);
    wire += preamble + std::max(min_frame, eth + headers + n + fcs) + gap;
    left -= n;
  } while (left > 0);
  return wire;
}

void check_series(const nlohmann::json &series, const nlohmann::json &j,
                  double headers, double fragment, double largest) {
  const nlohmann::json &fr = j.at("framing");
  double rate = j.at("line_rate_mb_per_s");
  CHECK(series.at("rounds").get<int>() > 0);
  CHECK(series.at("stream").get<int>() > 0);
  const nlohmann::json &sizes = series.at("sizes");
  REQUIRE(sizes.size() >= 3);
  CHECK(sizes.front().at("bytes") == 4);
  CHECK(sizes.back().at("bytes").get<double>() == largest);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const nlohmann::json &s = sizes[i];
    CAPTURE(s);
    double bytes = s.at("bytes"), bw = s.at("mb_per_s"),
           lat = s.at("latency_us");
    double wire = wire_bytes(fr, bytes, headers, fragment);
    double bound = rate * bytes / wire;
    CHECK(s.at("wire_bytes").get<double>() == wire);
    CHECK(s.at("bound_mb_per_s").get<double>() == doctest::Approx(bound));
    CHECK(bw > 0);
    CHECK(bw <= bound);
    // One way, the message's frames cross at least one link in full.
    CHECK(lat > 0);
    CHECK(lat >= (wire - fr.at("interframe_gap_bytes").get<double>()) / rate);
    if (i > 0) {
      CHECK(bytes > sizes[i - 1].at("bytes").get<double>());
      CHECK(bw > sizes[i - 1].at("mb_per_s").get<double>());
    }
  }
  CHECK(sizes.back().at("latency_us").get<double>() >
        sizes.front().at("latency_us").get<double>());
}

} // namespace

TEST_CASE("bench via --quick --json: VIPL and FM within the framing bound") {
  CommandResult r = nicemu({"bench", "via", "--quick", "--json"});
  INFO(r);
  REQUIRE(r.status == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  CHECK(j.at("bench") == "via");
  TempDir dir;
  check_bench_schema(dir, r.out, "via");
  CHECK(j.at("model") == "comet");
  // comet.toml: FastEthernet, 100 Mb/s, IEEE 802.3 framing.
  CHECK(j.at("line_rate_mb_per_s").get<double>() == 12.5);
  const nlohmann::json &fr = j.at("framing");
  CHECK(fr.at("ethernet_header_bytes") == 14);
  CHECK(fr.at("fcs_bytes") == 4);
  CHECK(fr.at("preamble_bytes") == 8);
  CHECK(fr.at("interframe_gap_bytes") == 12);
  CHECK(fr.at("min_frame_bytes") == 64);
  CHECK(fr.at("max_payload_bytes") == 1500);
  CHECK(fr.at("vi_header_bytes") == VIAFW_HEADER_BYTES);
  CHECK(fr.at("vi_fragment_bytes") == VIAFW_FRAG_BYTES);
  CHECK(fr.at("fm_headers_bytes") == 20 + 8 + VIAFW_FM_HEADER_BYTES);
  CHECK(fr.at("fm_max_message") == VIAFW_FM_MAX_MESSAGE);
  { // (not SUBCASEs: each would run the bench again)
    INFO("VIPL");
    check_series(j.at("vipl"), j, VIAFW_HEADER_BYTES, VIAFW_FRAG_BYTES,
                 VIAFW_MAX_TRANSFER);
  }
  {
    INFO("FM");
    check_series(j.at("fm"), j, 20 + 8 + VIAFW_FM_HEADER_BYTES,
                 VIAFW_FM_MAX_MESSAGE, VIAFW_FM_MAX_MESSAGE);
  }
}
