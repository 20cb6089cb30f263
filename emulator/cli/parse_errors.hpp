// What `nicemu` says when its command line cannot be parsed: one line in
// the style of every other user error ("nicemu: error: ..."), naming the
// subcommand, with the nearest known command or option for a misspelled
// one ("unknown command 'runn'; did you mean 'run'?").
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace nicemu::cli {

// The message for `error`, thrown by `app.parse()`: "nicemu: error: ..."
// without the newline. Not for --help and --version (CLI::Success,
// CLI::CallForHelp...), which are not errors.
std::string parse_error_message(CLI::App &app, const CLI::ParseError &error);

// Of `known`, the one nearest to `word` by edit distance (a swap of two
// neighbouring letters counts as one edit), if it is near enough to be a
// typing error; else "".
std::string nearest_word(const std::string &word,
                         const std::vector<std::string> &known);

} // namespace nicemu::cli
