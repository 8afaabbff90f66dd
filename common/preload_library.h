// Where libvramtrace.so is, for the tools that preload it (`vramtrace run`) or check it
// (`vramtrace doctor`): $VRAMTRACE_LIBRARY when set, else beside the running binary: ../lib in a
// build tree (build/bin -> build/lib), or the install tree's library directory (bin/ ->
// lib/ or lib/<multiarch>/, whatever GNUInstallDirs chose).
#pragma once

#include <string>

namespace vt {

// The path to use (resolved when it exists); empty when the binary's own path is unknown.
std::string preload_library_path();

}  // namespace vt
