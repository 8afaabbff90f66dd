// The call frame information reader of the hook's own unwinder (interpose/stacks/frame_rules.h):
// hand-made CIEs and FDEs, row by row, the forms it must hand to libunwind, damaged records, and
// the rule of a real function of this binary through its .eh_frame_hdr.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "frame_rules.h"

namespace {

using vt::FrameKind;
using vt::FrameRule;
using Bytes = std::vector<uint8_t>;

constexpr uint64_t kBegin = 0x400000, kRange = 0x100;

void put32(Bytes& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i)));
}
void put64(Bytes& b, uint64_t v) {
  for (int i = 0; i < 8; ++i) b.push_back(uint8_t(v >> (8 * i)));
}
void patch32(Bytes& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = uint8_t(v >> (8 * i));
}

// A CIE (augmentation `aug`, absolute pointers, code alignment 1, data alignment -8, return
// address column 16, the usual x86-64 initial instructions) followed by one FDE for
// [kBegin, kBegin + kRange) running `program`. Returns the bytes; *fde_at is the FDE's offset.
Bytes cfi(const Bytes& program, size_t* fde_at, const char* aug = "zR") {
  Bytes b;
  put32(b, 0);  // length, patched
  put32(b, 0);  // CIE id
  b.push_back(1);
  for (const char* c = aug; *c; ++c) b.push_back(uint8_t(*c));
  b.push_back(0);
  b.push_back(1);     // code alignment
  b.push_back(0x78);  // data alignment -8
  b.push_back(16);    // return address column
  b.push_back(1);     // augmentation data length
  b.push_back(0x00);  // R: absolute 8-byte pointers
  for (uint8_t op : {0x0c, 0x07, 0x08, 0x90, 0x01}) b.push_back(op);  // def_cfa rsp+8; rip at cfa-8
  while (b.size() % 4) b.push_back(0);
  patch32(b, 0, uint32_t(b.size() - 4));
  *fde_at = b.size();
  put32(b, 0);                      // length, patched
  put32(b, uint32_t(b.size()));     // the CIE pointer: back to offset 0
  put64(b, kBegin);
  put64(b, kRange);
  b.push_back(0);  // augmentation data length
  b.insert(b.end(), program.begin(), program.end());
  while ((b.size() - *fde_at) % 4) b.push_back(0);
  patch32(b, *fde_at, uint32_t(b.size() - *fde_at - 4));
  return b;
}

FrameRule rule(const Bytes& b, size_t fde_at, uint64_t offset) {
  return vt::frame_rule_from_fde(b.data() + fde_at, b.data(), b.data() + b.size(), kBegin + offset);
}

// A frame-pointer function: push rbp at +0, mov rsp,rbp at +1, an epilogue at +20 that moves the
// CFA back to rsp, restored after it.
const Bytes kFramePointer = {
    0x41,              // advance 1
    0x0e, 0x10,        // def_cfa_offset 16
    0x86, 0x02,        // rbp at cfa-16
    0x43,              // advance 3
    0x0d, 0x06,        // def_cfa_register rbp
    0x02, 16,          // advance_loc1 16: +20
    0x0a,              // remember_state
    0x0c, 0x07, 0x08,  // def_cfa rsp+8
    0xc6,              // restore rbp (to the CIE's rule: kept)
    0x41,              // advance 1: +21
    0x0b,              // restore_state
};

}  // namespace

TEST_CASE("frame rules: a frame-pointer function, row by row") {
  size_t at;
  Bytes b = cfi(kFramePointer, &at);
  FrameRule r = rule(b, at, 0);
  CHECK(r.kind == FrameKind::CfaRsp);
  CHECK(r.cfa_offset == 8);
  CHECK(r.rbp_offset == vt::kRbpKept);
  r = rule(b, at, 1);
  CHECK(r.kind == FrameKind::CfaRsp);
  CHECK(r.cfa_offset == 16);
  CHECK(r.rbp_offset == -16);
  for (uint64_t off : {4, 10, 19}) {
    r = rule(b, at, off);
    CHECK(r.kind == FrameKind::CfaRbp);
    CHECK(r.cfa_offset == 16);
    CHECK(r.rbp_offset == -16);
  }
  r = rule(b, at, 20);  // the epilogue's row
  CHECK(r.kind == FrameKind::CfaRsp);
  CHECK(r.cfa_offset == 8);
  CHECK(r.rbp_offset == vt::kRbpKept);
  r = rule(b, at, 21);  // restored
  CHECK(r.kind == FrameKind::CfaRbp);
  CHECK(r.rbp_offset == -16);
  CHECK(rule(b, at, kRange - 1).kind == FrameKind::CfaRbp);
  CHECK(rule(b, at, kRange).kind == FrameKind::Other);  // past the FDE
  CHECK(vt::frame_rule_from_fde(b.data() + at, b.data(), b.data() + b.size(), kBegin - 1).kind == FrameKind::Other);
}

TEST_CASE("frame rules: the forms libunwind keeps, and the ends of a stack") {
  size_t at;
  SECTION("a DWARF expression for the CFA, then a plain rule again") {
    Bytes b = cfi({0x0f, 0x02, 0x77, 0x08, 0x44, 0x0c, 0x07, 0x10}, &at);  // def_cfa_expression; +4: def_cfa rsp+16
    CHECK(rule(b, at, 0).kind == FrameKind::Other);
    CHECK(rule(b, at, 4).kind == FrameKind::CfaRsp);
    CHECK(rule(b, at, 4).cfa_offset == 16);
  }
  SECTION("the CFA from another register") {
    Bytes b = cfi({0x0c, 0x03, 0x08}, &at);  // def_cfa rbx+8
    CHECK(rule(b, at, 0).kind == FrameKind::Other);
  }
  SECTION("rbp saved as a value, in a register, by expression") {
    for (Bytes p : {Bytes{0x14, 0x06, 0x02}, Bytes{0x09, 0x06, 0x03}, Bytes{0x10, 0x06, 0x01, 0x77}}) {
      Bytes b = cfi(p, &at);
      CHECK(rule(b, at, 0).kind == FrameKind::Other);
    }
  }
  SECTION("the return address elsewhere than CFA-8") {
    Bytes b = cfi({0x90, 0x02}, &at);  // rip at cfa-16
    CHECK(rule(b, at, 0).kind == FrameKind::Other);
  }
  SECTION("an undefined return address or rbp ends the stack") {
    Bytes b = cfi({0x07, 0x10}, &at);
    CHECK(rule(b, at, 0).kind == FrameKind::Outermost);
    b = cfi({0x07, 0x06}, &at);
    CHECK(rule(b, at, 0).kind == FrameKind::Outermost);
  }
  SECTION("a signal frame (augmentation S)") {
    Bytes b = cfi({}, &at, "zRS");
    CHECK(rule(b, at, 0).kind == FrameKind::Other);
  }
  SECTION("an instruction it does not know") {
    Bytes b = cfi({0x3f}, &at);
    CHECK(rule(b, at, 0).kind == FrameKind::Other);
  }
  SECTION("restore_state without remember_state") {
    Bytes b = cfi({0x0b}, &at);
    CHECK(rule(b, at, 0).kind == FrameKind::Other);
  }
  SECTION("advance_loc2 and advance_loc4, and a rule past pc is not applied") {
    Bytes b = cfi({0x03, 0x00, 0x01, 0x0e, 0x20, 0x04, 0x01, 0x00, 0x00, 0x00, 0x0e, 0x30}, &at);
    CHECK(rule(b, at, 0xff).cfa_offset == 8);
    // (the FDE covers 0x100 bytes: the +0x100 row is past it)
  }
}

TEST_CASE("frame rules: damaged records are Other, never read past their bounds") {
  size_t at;
  Bytes b = cfi(kFramePointer, &at);
  // Cut anywhere: the FDE or the CIE no longer fits in [lo, hi).
  for (size_t cut = 0; cut < b.size(); ++cut) {
    Bytes c(b.begin(), b.begin() + long(cut));
    c.shrink_to_fit();
    if (at >= c.size()) continue;
    FrameRule r = vt::frame_rule_from_fde(c.data() + at, c.data(), c.data() + c.size(), kBegin + 4);
    CHECK(r.kind == FrameKind::Other);
  }
  // An FDE outside [lo, hi).
  CHECK(vt::frame_rule_from_fde(b.data() + at, b.data(), b.data() + at, kBegin + 4).kind == FrameKind::Other);
  CHECK(vt::frame_rule_from_fde(b.data() + at, b.data() + at + 1, b.data() + b.size(), kBegin + 4).kind == FrameKind::Other);
  // A CIE pointer before the data, a zero one (a CIE where an FDE should be), a huge length.
  Bytes d = b;
  patch32(d, at + 4, uint32_t(at + 100));
  CHECK(rule(d, at, 4).kind == FrameKind::Other);
  d = b;
  patch32(d, at + 4, 0);
  CHECK(rule(d, at, 4).kind == FrameKind::Other);
  d = b;
  patch32(d, at, 0xfffffff0u);
  CHECK(rule(d, at, 4).kind == FrameKind::Other);
  // Every byte of the FDE's program flipped in turn: no crash, and the answer is one of the kinds.
  for (size_t i = at + 25; i < b.size(); ++i) {
    for (uint8_t v : {0x00, 0x3f, 0x80, 0xff}) {
      Bytes e = b;
      e[i] = v;
      FrameRule r = rule(e, at, 30);
      CHECK(int(r.kind) >= int(FrameKind::CfaRsp));
    }
  }
}

namespace {
__attribute__((noinline)) int plain_function(int x) {
  asm volatile("" ::: "memory");
  return x + 1;
}
}  // namespace

#if defined(__x86_64__)  // (the rules are x86-64's: rsp and rbp are its DWARF registers 7 and 6)
TEST_CASE("frame rules: a function of this binary, found through its .eh_frame_hdr") {
  uint64_t unloads = ~0ull;
  // At its first instruction the return address was just pushed: CFA = rsp + 8, rbp untouched.
  FrameRule r = vt::frame_rule_at(reinterpret_cast<uint64_t>(&plain_function), &unloads);
  CHECK(plain_function(1) == 2);
  CHECK(r.kind == FrameKind::CfaRsp);
  CHECK(r.cfa_offset == 8);
  CHECK(r.rbp_offset == vt::kRbpKept);
  CHECK(unloads != ~0ull);
  // An address no object holds.
  CHECK(vt::frame_rule_at(0x1000, &unloads).kind == FrameKind::Other);
}
#endif
