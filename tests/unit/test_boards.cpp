// Boards: every shipped model names its board and fits it; a model key no
// device reads, a required key that is missing, a missing memory and an
// unknown board are refused with messages naming the key, the line, the
// board and the device.
#include "boards/board.hpp"
#include "nicemu/error.hpp"
#include "nicemu/martini.h"
#include "nicemu/model.hpp"
#include "nicemu/regs.h"
#include "nicemu/uzura_card.h"
#include "node/node.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

using namespace nicemu;

namespace {

std::string shipped_text(const std::string &name) {
  std::ifstream in(load_model(name).source);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The shipped model `name` with the first `from` replaced by `to`.
Model edited(const std::string &name, const std::string &from,
             const std::string &to) {
  std::string text = shipped_text(name);
  size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  text.replace(at, from.size(), to);
  return parse_model(text, "edited.toml");
}

// The message checked_board throws for `model`, or "(no error)".
std::string refusal(const Model &model) {
  try {
    checked_board(model);
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

// Checks that `model` is refused with a message holding `part`.
void check_refused(const Model &model, const std::string &part) {
  std::string message = refusal(model);
  INFO(message);
  CHECK(message.find(part) != std::string::npos);
}

// The line of `text` that holds `needle`, counted from 1.
int line_of(const std::string &text, const std::string &needle) {
  size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  int line = 1;
  for (size_t i = 0; i < at; ++i)
    line += text[i] == '\n';
  return line;
}

} // namespace

TEST_CASE("boards: each shipped model names its own board and fits it") {
  for (const char *name : {"lanai4", "comet", "martini", "uzura"}) {
    CAPTURE(name);
    Model m = load_model(name);
    CHECK(m.board == name);
    CHECK(&checked_board(m) == find_board(name));
  }
  CHECK(all_boards().size() == 4);
  CHECK(find_board("nosuch") == nullptr);
}

TEST_CASE("boards: a misspelled key is refused at its line, with the key it "
          "meant and who reads that") {
  std::string text = shipped_text("lanai4");
  Model m =
      edited("lanai4", "per_word = \"30.1 ns\"", "per_wrod = \"30.1 ns\"");
  CHECK(
      refusal(m) ==
      "edited.toml:" + std::to_string(line_of(text, "per_word = \"30.1 ns\"")) +
          ": model \"lanai4\": [timing.tx_dma] per_wrod: no device of the "
          "lanai4 board reads this key (did you mean per_word? the Tx "
          "engine reads it)");
  // A misspelled table is found across tables.
  Model table = edited("lanai4", "[timing.tx_dma]", "[timing.tx_dam]");
  check_refused(table, "(did you mean [timing.tx_dma] gap? the Tx engine "
                       "reads it)");
}

TEST_CASE("boards: a required key that is missing is refused, naming the "
          "device that needs it") {
  Model m = edited("lanai4", "per_word = \"30.1 ns\"", "");
  CHECK(refusal(m) == "edited.toml: model \"lanai4\": [timing.tx_dma] "
                      "per_word is missing; the lanai4 board's Tx engine "
                      "needs it");
  Model bells = edited("comet", "depth =", "# depth =");
  check_refused(bells, "[params.doorbell] depth is missing; the comet "
                       "board's doorbell bank needs it");
  // An Optional key may be left out: the host's doorbell cost falls back
  // to a PIO write.
  Model optional = edited("comet", "doorbell_write =", "# doorbell_write =");
  CHECK(refusal(optional) == "(no error)");
}

TEST_CASE("boards: keys of a block the board does not have are refused") {
  // lanai4 has no doorbells: a [params.doorbell] would once have added them
  // silently.
  std::string text =
      shipped_text("lanai4") + "\n[params.doorbell]\nfifos = 4\n";
  Model m = parse_model(text, "bells.toml");
  check_refused(m, "[params.doorbell] fifos: no device of the lanai4 "
                   "board reads this key (its tables: ");
  // Reference figures are accepted and read by nobody.
  Model martini = load_model("martini");
  CHECK(martini.params.count("htlb.ways"));
  CHECK(refusal(martini) == "(no error)");
}

TEST_CASE("boards: unknown or missing boards and missing memories") {
  Model none = edited("lanai4", "board = \"lanai4\"", "");
  check_refused(none, "names no board: add board = \"NAME\" at the top "
                      "(boards: lanai4, comet, martini, uzura)");
  Model unknown = edited("lanai4", "board = \"lanai4\"", "board = \"lanai5\"");
  check_refused(unknown, "unknown board \"lanai5\"");
  Model no_llcm = edited("martini", "name = \"llcm\"", "name = \"lcm\"");
  check_refused(no_llcm, "the martini board needs a [[memory]] named "
                         "\"llcm\"");
}

TEST_CASE("boards: a node has the devices of its board, and SYS_CAPS says "
          "so") {
  auto caps_of = [](const std::string &name) {
    Model m = load_model(name);
    Scheduler scheduler;
    Node node(m, scheduler, NodeConfig{});
    uint32_t caps = 0;
    std::string why;
    REQUIRE(
        node.debug_mmio(NICEMU_SYS_BASE + NICEMU_SYS_CAPS, false, caps, why));
    CHECK(&node.board() == find_board(name));
    return caps;
  };
  const uint32_t core = NICEMU_CAP_TIMER | NICEMU_CAP_IRQ | NICEMU_CAP_WATCHDOG;
  CHECK(caps_of("lanai4") == (core | NICEMU_CAP_HDMA | NICEMU_CAP_NETWORK));
  CHECK(caps_of("comet") == (core | NICEMU_CAP_HDMA | NICEMU_CAP_NETWORK |
                             NICEMU_CAP_ETHERNET | NICEMU_CAP_DOORBELL));
  CHECK(caps_of("martini") == (core | NICEMU_CAP_OTF));
  CHECK(caps_of("uzura") == (core | NICEMU_CAP_ENGINE));
}

TEST_CASE("boards: every variant of a shipped model fits its board") {
  for (const char *name : {"lanai4", "comet", "martini", "uzura"}) {
    Model m = load_model(name);
    for (const ModelVariant &v : m.variants) {
      CAPTURE(v.name);
      CHECK(refusal(with_variant(m, v.name)) == "(no error)");
    }
  }
  // A variant's misspelled key is refused at its own line.
  std::string text = shipped_text("martini");
  size_t at = text.find("[variant.D.timing.link]\noutside_swif");
  REQUIRE(at != std::string::npos);
  text.replace(text.find("outside_swif", at), 12, "outside_swf");
  Model m = with_variant(parse_model(text, "edited.toml"), "D");
  check_refused(m, "[timing.link] outside_swf: no device of the martini "
                   "board reads this key (did you mean outside_swif?");
}

TEST_CASE("regression: a misspelled model key does not silently remove the "
          "Tx, Rx and ROUTE devices (issue 23.6)") {
  // Once, a card had its network devices only if their keys were present:
  // per_wrod built a lanai4 card without Tx, Rx and ROUTE, and the firmware
  // met bus errors. Now the card is not built, and the message says why.
  Model typo =
      edited("lanai4", "per_word = \"30.1 ns\"", "per_wrod = \"30.1 ns\"");
  Scheduler scheduler;
  std::string message;
  try {
    Node node(typo, scheduler, NodeConfig{});
  } catch (const Error &e) {
    message = e.what();
  }
  CHECK(message.find("[timing.tx_dma] per_wrod: no device of the lanai4 "
                     "board reads this key (did you mean per_word?") !=
        std::string::npos);
  // Spelled right, the card has all three.
  Model right = load_model("lanai4");
  Node node(right, scheduler, NodeConfig{});
  for (uint32_t base : {NICEMU_TX_BASE, NICEMU_RX_BASE, NICEMU_ROUTE_BASE}) {
    CAPTURE(base);
    CHECK(node.device_at(base) != nullptr);
  }
}

TEST_CASE("regression: every model number has a range, checked at load, "
          "named with its key, file and line (issue 23.10)") {
  // The error for lanai4 with the first `from` replaced by `to`, whether
  // the file's reader or the board refuses it.
  std::string text = shipped_text("lanai4");
  auto error_for = [&](const std::string &from, const std::string &to) {
    try {
      return refusal(edited("lanai4", from, to));
    } catch (const Error &e) {
      return std::string(e.what());
    }
  };
  auto contains = [](const std::string &text, const std::string &part) {
    return text.find(part) != std::string::npos;
  };
  auto at_line = [&](const std::string &needle) {
    return "edited.toml:" + std::to_string(line_of(text, needle)) + ": ";
  };
  // A huge clock made cycles take 0 ps.
  CHECK(error_for("clock_hz = 33_000_000", "clock_hz = 2_000_000_000_000") ==
        at_line("clock_hz = 33_000_000") +
            "[core] clock_hz: must be an integer from 1000 to 1000000000000 "
            "(got integer 2000000000000)");
  // A tiny bandwidth overflowed llround (1e6 / MBps picoseconds a byte).
  CHECK(error_for("bandwidth_MBps = 160", "bandwidth_MBps = 1e-300") ==
        at_line("bandwidth_MBps = 160") +
            "model \"lanai4\": [params.link] bandwidth_MBps = 1e-300: must "
            "be a number from 0.001 to 1000000 (the network reads it)");
  // Huge durations wrapped when added to the present.
  CHECK(error_for("latency = \"15 ns\"",
                  "latency = \"18446744073709551615 ps\"") ==
        at_line("latency = \"15 ns\"") +
            "model \"lanai4\": [timing.link] latency = 18446744.0737096 s: "
            "must be a duration from 0 ps to 1 s (the network reads it)");
  // ports = 8.5 truncated; ports = -8 became 4294967288.
  CHECK(error_for("ports = 8 ", "ports = 8.5 ") ==
        at_line("ports = 8 ") +
            "model \"lanai4\": [params.switch] ports = 8.5: must be a whole "
            "number from 1 to 256 (the network reads it)");
  CHECK(contains(error_for("ports = 8 ", "ports = -8 "),
                 "[params.switch] ports = -8: must be a whole number from 1 "
                 "to 256"));
  // The core's own numbers: cycle costs, the watchdog's 32-bit period.
  CHECK(contains(error_for("mul = 11", "mul = 4294967295"),
                 "[cycles] mul: must be an integer from 0 to 10000"));
  CHECK(contains(error_for("watchdog_cycles = 330_000_000",
                           "watchdog_cycles = 5_000_000_000"),
                 "[core] watchdog_cycles: must be an integer from 0 to "
                 "4294967295"));
  // Reference figures are checked too, and keys without a range of their
  // own take the default: a whole number from 0 to 2^32 - 1.
  CHECK(contains(error_for("pci_bus_bits = 32", "pci_bus_bits = 32.5"),
                 "[params.host] pci_bus_bits = 32.5: must be a whole number "
                 "from 0 to 4294967295 (a reference figure of the PCI host "
                 "side)"));
  // The bounds themselves are allowed.
  CHECK(error_for("bandwidth_MBps = 160", "bandwidth_MBps = 1000000") ==
        "(no error)");
  CHECK(error_for("latency = \"15 ns\"", "latency = \"1 s\"") == "(no error)");
}
