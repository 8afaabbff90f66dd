// `vramtrace`: the command line. Each command adds itself and its options (commands.h, one
// cmd_*.cpp per command); this file parses the arguments (CLI11) and dispatches.
// Exit status: the subcommand's, following usage.h (0 ok, 1 a check failed, 2 usage or
// unreadable input; `run` passes the traced command's through).
#include <CLI/CLI.hpp>
#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "output_file.h"
#include "doctor.h"
#include "cli_docs.h"
#include "usage.h"

int main(int argc, char** argv) {
  // The doctor's tracing self-test runs this binary again, under LD_PRELOAD, as its traced child.
  if (argc >= 2 && std::string(argv[1]) == vt::doctor::kSelfTestArg) return vt::doctor::selftest_child_main(argc, argv);
  // Named here, not from argv[0]: usage lines say `vramtrace`, not the build path.
  CLI::App app{"vramtrace: records every CUDA memory operation of a process and explains its GPU memory", "vramtrace"};
  app.formatter(std::make_shared<vt::cli::UsageFormatter>());
  app.set_version_flag("--version", vt::cli::version_line(), "print the version and exit");
  app.require_subcommand(1);

  vt::cli::Commands commands;
  for (auto add : vt::cli::kCommandList) add(app, commands);

  // Set after the commands, which would inherit it.
  app.footer("Exit status: 0 ok, 1 a check failed (check, doctor), 2 usage error or unreadable input; run returns "
             "the command's own.\nvramtrace COMMAND --help shows a command's options.");

  // For the build (tools/CMakeLists.txt): the man page and completions, from the definitions above.
  if (argc == 2 && std::string(argv[1]) == "--generate-man") {
    std::cout << vt::cli::man_page(app, VT_VERSION);
    return 0;
  }
  if (argc == 3 && std::string(argv[1]) == "--generate-completion") {
    std::string shell = argv[2];
    if (shell != "bash" && shell != "zsh") {
      vt::cli::error_line("--generate-completion: bash or zsh, not '" + shell + "'");
      return vt::cli::kExitUsage;
    }
    std::cout << (shell == "bash" ? vt::cli::bash_completion(app) : vt::cli::zsh_completion(app));
    return 0;
  }

  // Bare `vramtrace`: the usage, as a usage error.
  if (argc < 2) {
    std::cerr << app.help();
    return vt::cli::kExitUsage;
  }
  // A mistyped subcommand is named, with the nearest one, instead of CLI11's "not expected".
  if (argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const CLI::App* c : app.get_subcommands({})) names.push_back(c->get_name());
    std::string typed = argv[1];
    if (std::find(names.begin(), names.end(), typed) == names.end()) {
      std::string near = vt::cli::nearest_name(typed, names);
      vt::cli::error_line("'" + typed + "' is not a vramtrace command" + (near.empty() ? "" : "; did you mean '" + near + "'?") +
                          " (see vramtrace --help)");
      return vt::cli::kExitUsage;
    }
  }

  // For run, everything after the first "--" is the command to run, untouched by option parsing;
  // for the others "--" ends the options as usual (`report -- -odd-name.trace`).
  vt::cli::Invocation invocation;
  int parsed_argc = argc;
  for (int i = 1; i < argc && std::string(argv[1]) == "run"; ++i) {
    if (std::string(argv[i]) == "--") {
      invocation.after_dashes.assign(argv + i + 1, argv + argc);
      invocation.dashes = true;
      parsed_argc = i;
      break;
    }
  }
  try {
    app.parse(parsed_argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    vt::cli::error_line(e.what() + std::string(" (see vramtrace --help)"));
    return 2;
  }

  const vt::cli::Command* chosen = nullptr;
  for (const vt::cli::Command& c : commands)
    if (*c.app) chosen = &c;
  if (!chosen) return vt::cli::kExitUsage;
  if (chosen->analyzes) {
    // The analyzer's commands: past a file size limit a write fails (and says so) instead of the
    // signal killing us with a partial output (not for run: the traced program inherits it).
    signal(SIGXFSZ, SIG_IGN);
    // Traces are read through mappings: one truncated or replaced by another program while it is
    // read faults (SIGBUS) where its pages were. One line, the output in progress removed, status 2.
    struct sigaction bus = {};
    bus.sa_handler = [](int) {
      static const char kLine[] =
          "vramtrace: a trace shrank while it was read (truncated or replaced by another program); stopped\n";
      ssize_t ignored = write(STDERR_FILENO, kLine, sizeof kLine - 1);
      (void)ignored;
      if (const char* temp = vt::analyzer::output_in_progress(); temp[0]) unlink(temp);
      _exit(2);
    };
    sigaction(SIGBUS, &bus, nullptr);
  }
  return chosen->run(invocation);
}
