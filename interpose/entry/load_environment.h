// What the process's environment and working directory were when libvramtrace.so was loaded (at
// exec, before the program ran): the trace is configured at the first memory call, and by then a
// program may have emptied its environment (clearenv) or changed directory. Variables the
// environment still has win (a program may set VRAMTRACE_ ones before its first allocation);
// a relative VRAMTRACE_OUTPUT is resolved against the directory the program started in.
#pragma once

namespace vt {

// The value VRAMTRACE_* variable `name` had at load, or null.
const char* loaded_env(const char* name);

}  // namespace vt
