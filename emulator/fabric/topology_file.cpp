// Topology files (format in docs/fabric.md): a line per statement,
//   ports 8            (optional: the switches' port count, checked)
//   switches 2
//   nodes 10
//   node 0 s0:0        (node 0's cable goes to switch 0, port 0)
//   cable s0:7 s1:7    (either end may also be a node: n3)
// Every error names the file and line.
#include "fabric/fabric.hpp"
#include "fabric/topology_check.hpp"

#include "nicemu/error.hpp"
#include "sim/text_file.hpp"

#include <memory>
#include <sstream>

namespace nicemu {

using namespace fabric_detail;

namespace {

std::vector<std::string> words_of(const std::string &line) {
  std::istringstream in(line.substr(0, line.find('#')));
  std::vector<std::string> words;
  for (std::string w; in >> w;)
    words.push_back(w);
  return words;
}

// "s<switch>:<port>" or "n<node>".
std::optional<Topology::Endpoint> endpoint(const std::string &s) {
  if (s.size() < 2)
    return std::nullopt;
  if (s[0] == 'n') {
    auto n = parse_u32(s.substr(1));
    return n ? std::optional(Topology::Endpoint{false, *n, 0}) : std::nullopt;
  }
  size_t colon = s.find(':');
  if (s[0] != 's' || colon == std::string::npos)
    return std::nullopt;
  auto sw = parse_u32(s.substr(1, colon - 1));
  auto port = parse_u32(s.substr(colon + 1));
  if (!sw || !port)
    return std::nullopt;
  return Topology::Endpoint{true, *sw, *port};
}

class Parser {
public:
  Parser(const std::string &origin, uint32_t ports) : origin_(origin) {
    topology_.ports_per_switch = ports;
  }
  void statement(const std::vector<std::string> &words, size_t line);
  Topology finish(size_t last_line);

private:
  [[noreturn]] void fail(size_t line, const std::string &what) const {
    throw Error(origin_ + ":" + std::to_string(line) + ": " + what);
  }
  uint32_t count(const std::vector<std::string> &words, size_t line);
  void declare(const std::vector<std::string> &words, size_t line);
  void cable(const std::string &a, const std::string &b, size_t line);
  Topology::Endpoint end(const std::string &word, size_t line) const;
  CableChecker &checker() {
    if (!checker_)
      checker_ = std::make_unique<CableChecker>(
          topology_.nodes, topology_.switches, topology_.ports_per_switch,
          [](size_t tag) { return "line " + std::to_string(tag); });
    return *checker_;
  }

  std::string origin_;
  Topology topology_;
  size_t ports_line_ = 0, switches_line_ = 0, nodes_line_ = 0;
  std::unique_ptr<CableChecker> checker_; // once switches and nodes are known
};

uint32_t Parser::count(const std::vector<std::string> &words, size_t line) {
  if (words.size() != 2)
    fail(line, "expected '" + words[0] + " <count>'");
  auto n = parse_u32(words[1]);
  if (!n)
    fail(line, "'" + words[1] + "' is not a number");
  return *n;
}

void Parser::declare(const std::vector<std::string> &words, size_t line) {
  const std::string &what = words[0];
  size_t *seen = what == "ports"      ? &ports_line_
                 : what == "switches" ? &switches_line_
                                      : &nodes_line_;
  if (*seen)
    fail(line,
         "'" + what + "' given twice (line " + std::to_string(*seen) + ")");
  if (checker_)
    fail(line, "'" + what + "' must come before the cables");
  *seen = line;
  uint32_t n = count(words, line);
  uint32_t ports = topology_.ports_per_switch;
  if (what == "ports" && n != ports)
    fail(line, "the file is for " + std::to_string(n) +
                   "-port switches, the model's have " + std::to_string(ports));
  std::string problem = what == "nodes"      ? check_sizes(n, 0, ports)
                        : what == "switches" ? check_sizes(1, n, ports)
                                             : "";
  if (!problem.empty())
    fail(line, problem);
  if (what == "nodes")
    topology_.nodes = n;
  else if (what == "switches")
    topology_.switches = n;
}

Topology::Endpoint Parser::end(const std::string &word, size_t line) const {
  auto e = endpoint(word);
  if (!e)
    fail(line, "'" + word +
                   "' is not an endpoint (expected s<switch>:<port> or "
                   "n<node>)");
  return *e;
}

void Parser::cable(const std::string &a, const std::string &b, size_t line) {
  if (!switches_line_ || !nodes_line_)
    fail(line, "cables must come after 'switches' and 'nodes'");
  Topology::Endpoint ea = end(a, line), eb = end(b, line);
  if (std::string problem = checker().add(ea, eb, line); !problem.empty())
    fail(line, problem);
  topology_.cables.push_back({ea, eb});
}

void Parser::statement(const std::vector<std::string> &words, size_t line) {
  const std::string &what = words[0];
  if (what == "ports" || what == "switches" || what == "nodes")
    return declare(words, line);
  if (what == "node") {
    if (words.size() != 3 || !parse_u32(words[1]))
      fail(line, "expected 'node <number> s<switch>:<port>'");
    return cable("n" + words[1], words[2], line);
  }
  if (what == "cable") {
    if (words.size() != 3)
      fail(line, "expected 'cable <endpoint> <endpoint>'");
    return cable(words[1], words[2], line);
  }
  fail(line, "unknown statement '" + what +
                 "' (expected ports, switches, nodes, node or cable)");
}

Topology Parser::finish(size_t last_line) {
  for (auto [seen, what] :
       {std::pair{nodes_line_, "nodes"}, std::pair{switches_line_, "switches"}})
    if (!seen)
      fail(last_line, std::string("the file has no '") + what + "' line");
  auto problem = checker().finish(nodes_line_, switches_line_);
  if (problem)
    fail(problem->tag, problem->text);
  return std::move(topology_);
}

} // namespace

Topology parse_topology(const std::string &text, const std::string &origin,
                        uint32_t ports_per_switch) {
  if (std::string problem = check_sizes(1, 0, ports_per_switch);
      !problem.empty())
    throw Error(origin + ": " + problem);
  Parser parser(origin, ports_per_switch);
  std::istringstream in(text);
  size_t line = 0;
  for (std::string s; std::getline(in, s);) {
    ++line;
    if (auto words = words_of(s); !words.empty())
      parser.statement(words, line);
  }
  return parser.finish(line == 0 ? 1 : line);
}

// A topology file is at most 64 MiB: two million cable lines of 32 bytes
// (65536 nodes on a tree of 8-port switches take about 80000 lines).
constexpr size_t kMaxTopologyBytes = size_t(64) << 20;

Topology read_topology(const std::string &path, uint32_t ports_per_switch) {
  return parse_topology(read_topology_text(path), path, ports_per_switch);
}

std::string read_topology_text(const std::string &path) {
  return read_text_file(path, "topology file", kMaxTopologyBytes);
}

} // namespace nicemu
