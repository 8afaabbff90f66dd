// The man page and the shell completions, generated from the command line's own definition (the
// CLI11 App main.cpp builds: every command, its description, usage, options and footer), so
// they cannot drift from `vramtrace --help`. The build runs `vramtrace --generate-man` and
// `--generate-completion bash|zsh` (hidden) and installs the results (tools/CMakeLists.txt).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace vt::cli {

std::string man_page(const CLI::App& app, const std::string& version);  // roff, section 1
std::string bash_completion(const CLI::App& app);
std::string zsh_completion(const CLI::App& app);

}  // namespace vt::cli
