// Whether vramtrace can trace here: the library, LD_PRELOAD reaching the interpreter, and the
// self-test that traces a real child against the simulated driver.
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "elf_info.h"
#include "sandbox.h"
#include "util.h"

using namespace doctor_test;
using vt::doctor::Verdict;

TEST_CASE("the self-test traces a child under LD_PRELOAD against the simulated driver") {
  Sandbox s;
  s.use_fake_driver(13000);
  vt::doctor::Report r = s.run();
  CHECK(one(r, "tracing.library").verdict == Verdict::ok);
  const auto& t = one(r, "tracing.selftest");
  INFO(t.data.dump());
  CHECK(t.verdict == Verdict::ok);
  CHECK(t.data["child"]["hooked"] == true);
  CHECK(t.data["child"]["alloc"] == 0);
  CHECK(t.data["alloc_recorded"] == true);
  CHECK(t.data["free_recorded"] == true);
  CHECK(t.data["trace_files"] == 1);
  // The temporary trace directory is gone afterwards.
  CHECK(vt::doctor::list_dir(s.root() + "/tmp").empty());
}

TEST_CASE("the self-test records a failed allocation too: tracing works, the GPU is full") {
  Sandbox s;
  s.use_fake_driver(13000);
  // Room for the self-test's context (512 MiB in the simulated driver) and nothing more: on a
  // completely full GPU the context itself could not be created.
  s.set_env("FAKECUDA_TOTAL_BYTES", "1G");
  s.set_env("FAKECUDA_FOREIGN_BYTES", "512M");
  vt::doctor::Report r = s.run();
  const auto& t = one(r, "tracing.selftest");
  CHECK(t.verdict == Verdict::ok);
  CHECK(t.data["alloc_result"] == 2);  // CUDA_ERROR_OUT_OF_MEMORY
  REQUIRE_FALSE(t.details.empty());
  CHECK(contains(t.details[0], "the allocation itself failed"));
}

TEST_CASE("no libvramtrace.so: a problem, and the self-test is skipped") {
  Sandbox s;
  s.use_fake_driver(13000);
  s.set_env("VRAMTRACE_LIBRARY", s.root() + "/lib/libvramtrace.so");
  vt::doctor::Report r = s.run();
  const auto& lib = one(r, "tracing.library");
  CHECK(lib.verdict == Verdict::problem);
  CHECK(contains(lib.advice, "VRAMTRACE_LIBRARY"));
  CHECK(one(r, "tracing.selftest").verdict == Verdict::skipped);
  CHECK(r.exit_code() == 1);
}

TEST_CASE("a preloaded library that is not vramtrace: the self-test sees no hook") {
  Sandbox s;
  s.use_fake_driver(13000);
  s.set_env("VRAMTRACE_LIBRARY", Sandbox::fake("cupti13/libcupti.so.13"));  // loads, hooks nothing
  vt::doctor::Report r = s.run();
  CHECK(one(r, "tracing.library").verdict == Verdict::ok);
  const auto& t = one(r, "tracing.selftest");
  CHECK(t.verdict == Verdict::problem);
  CHECK(t.data["child"]["hooked"] == false);
  CHECK(contains(t.message, "did not return vramtrace's hook"));
}

TEST_CASE("a libvramtrace.so that does not load: a problem, and the self-test is skipped") {
  Sandbox s;
  s.use_fake_driver(13000);
  std::string bogus = s.write("lib/libvramtrace.so", "not an ELF file\n");
  s.set_env("VRAMTRACE_LIBRARY", bogus);
  vt::doctor::Report r = s.run();
  CHECK(one(r, "tracing.library").verdict == Verdict::problem);
  CHECK(one(r, "tracing.selftest").verdict == Verdict::skipped);
}

TEST_CASE("LD_PRELOAD cannot reach a statically linked or set-user-ID interpreter") {
  Sandbox s;
  s.options.python = VT_PLAIN_STATIC;
  vt::doctor::Report r = s.run();
  const auto& st = one(r, "tracing.preload");
  CHECK(st.verdict == Verdict::warning);
  CHECK(st.data["static"] == true);
  CHECK(contains(st.message, "statically linked"));

  std::string suid = s.copy("bin/suid-python", VT_PLAIN_DYNAMIC);
  REQUIRE(chmod(suid.c_str(), 04755) == 0);
  s.options.python = suid;
  r = s.run();
  const auto& su = one(r, "tracing.preload");
  CHECK(su.verdict == Verdict::warning);
  CHECK(su.data["setuid"] == true);
  CHECK(contains(su.message, "set-user-ID"));

  s.options.python = VT_PLAIN_DYNAMIC;
  r = s.run();
  const auto& ok = one(r, "tracing.preload");
  CHECK(ok.verdict == Verdict::ok);
  CHECK(ok.data["static"] == false);
}

TEST_CASE("ELF headers: interpreter and needed libraries, without running anything") {
  vt::doctor::ElfInfo dyn = vt::doctor::read_elf(VT_PLAIN_DYNAMIC);
  CHECK(dyn.is_elf);
  CHECK(dyn.error.empty());
  CHECK(dyn.has_interp);
  CHECK(contains(dyn.interp, "ld-linux"));
  CHECK(std::find(dyn.needed.begin(), dyn.needed.end(), "libc.so.6") != dyn.needed.end());

  vt::doctor::ElfInfo st = vt::doctor::read_elf(VT_PLAIN_STATIC);
  CHECK(st.is_elf);
  CHECK_FALSE(st.has_interp);
  CHECK(st.needed.empty());

  Sandbox s;
  vt::doctor::ElfInfo text = vt::doctor::read_elf(s.options.python);  // a shell script
  CHECK_FALSE(text.is_elf);
  CHECK(text.error == "not an ELF file");
}
