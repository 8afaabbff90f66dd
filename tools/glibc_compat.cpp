// arc4random, for the static libstdc++ of the portable CLI (cmake/portable.cmake): its
// random_device (which vramtrace does not use, but which std::runtime_error's object file drags
// in) calls arc4random, new in glibc 2.36; defined here from getrandom(2) (glibc 2.25), the link
// takes this one and the CLI keeps running on glibc 2.34 (README). Linked only when portable.
#include <sys/random.h>

#include <cerrno>
#include <cstdint>

extern "C" uint32_t arc4random(void) {
  uint32_t v = 0;
  for (size_t got = 0; got < sizeof v;) {
    ssize_t n = getrandom(reinterpret_cast<char*>(&v) + got, sizeof v - got, 0);
    if (n > 0) got += size_t(n);
    else if (errno != EINTR) break;
  }
  return v;
}
