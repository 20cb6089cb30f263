#include "cli/parse_errors.hpp"

#include <algorithm>
#include <cstdint>

namespace nicemu::cli {

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions
// and swaps of neighbouring characters, each one edit.
size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<std::vector<size_t>> d(a.size() + 1,
                                     std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] =
          std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The subcommands the user named, outermost first ("bench", "niam").
std::vector<CLI::App *> parsed_chain(CLI::App &app) {
  std::vector<CLI::App *> chain{&app};
  while (!chain.back()->get_subcommands().empty())
    chain.push_back(chain.back()->get_subcommands().front());
  return chain;
}

// "run: ", "bench niam: ", or "" for nicemu itself.
std::string prefix_of(const std::vector<CLI::App *> &chain) {
  std::string path;
  for (size_t i = 1; i < chain.size(); ++i)
    path += (path.empty() ? "" : " ") + chain[i]->get_name();
  return path.empty() ? "" : path + ": ";
}

// "nicemu run --help".
std::string help_of(const std::vector<CLI::App *> &chain) {
  std::string command = "nicemu";
  for (size_t i = 1; i < chain.size(); ++i)
    command += " " + chain[i]->get_name();
  return command + " --help";
}

std::vector<std::string> command_names(CLI::App &cmd) {
  std::vector<std::string> names;
  for (const CLI::App *sub :
       cmd.get_subcommands([](CLI::App *) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

std::vector<std::string> option_names(CLI::App &cmd) {
  std::vector<std::string> names;
  for (const CLI::Option *opt : cmd.get_options()) {
    for (const std::string &l : opt->get_lnames())
      names.push_back("--" + l);
    for (const std::string &s : opt->get_snames())
      names.push_back("-" + s);
  }
  return names;
}

std::string joined(const std::vector<std::string> &words) {
  std::string out;
  for (const std::string &w : words)
    out += (out.empty() ? "" : ", ") + w;
  return out;
}

// An argument left over: an unknown option, or an unknown subcommand, or
// one argument too many.
std::string leftover_message(const std::vector<CLI::App *> &chain,
                             const std::string &word) {
  CLI::App &cmd = *chain.back();
  const std::string prefix = "nicemu: error: " + prefix_of(chain);
  std::string suggestion;
  std::string what;
  if (word.size() > 1 && word[0] == '-') {
    std::string name = word.substr(0, word.find('='));
    suggestion = nearest_word(name, option_names(cmd));
    what = "unknown option '" + name + "'";
  } else if (!command_names(cmd).empty()) {
    suggestion = nearest_word(word, command_names(cmd));
    what = "unknown command '" + word + "'";
  } else {
    return prefix + "unexpected argument '" + word + "' (" + help_of(chain) +
           ")";
  }
  if (!suggestion.empty())
    return prefix + what + "; did you mean '" + suggestion + "'?";
  return prefix + what + " (" + help_of(chain) + ")";
}

} // namespace

std::string nearest_word(const std::string &word,
                         const std::vector<std::string> &known) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const std::string &k : known) {
    size_t d = edit_distance(word, k);
    if (d < best_distance) {
      best_distance = d;
      best = k;
    }
  }
  // One edit in a short word, two in a longer one, never all of it.
  size_t allowed = word.size() <= 4 ? 1 : 2;
  if (best_distance == 0 || best_distance > allowed ||
      best_distance >= word.size())
    return "";
  return best;
}

std::string parse_error_message(CLI::App &app, const CLI::ParseError &error) {
  std::vector<CLI::App *> chain = parsed_chain(app);
  CLI::App &cmd = *chain.back();
  std::vector<std::string> left = cmd.remaining();
  if (!left.empty())
    return leftover_message(chain, left.front());
  if (cmd.get_require_subcommand_min() > 0 && !command_names(cmd).empty())
    return "nicemu: error: " + prefix_of(chain) +
           "give a command: " + joined(command_names(cmd)) + " (" +
           help_of(chain) + ")";
  return "nicemu: error: " + prefix_of(chain) + error.what();
}

} // namespace nicemu::cli
