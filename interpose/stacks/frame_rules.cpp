// See frame_rules.h. The formats: the System V x86-64 ABI's .eh_frame (DWARF 4 section 6.4 with
// the LSB's augmentations) and .eh_frame_hdr (LSB: version 1, a table of (initial location, FDE)
// pairs sorted by location).
#include "frame_rules.h"

#include <link.h>

#include <cstring>

namespace vt {

namespace {

// DWARF register numbers on x86-64.
constexpr uint64_t kRegRbp = 6, kRegRsp = 7, kRegRip = 16;

// Pointer encodings (DW_EH_PE_*).
constexpr uint8_t kEncOmit = 0xff, kEncPcrel = 0x10, kEncDatarel = 0x30, kEncIndirect = 0x80;

// A bounded reader over call frame data: a read past `hi` marks it failed and returns 0.
struct Reader {
  const uint8_t* p;
  const uint8_t* hi;
  bool ok = true;

  bool has(size_t n) {
    if (ok && p <= hi && size_t(hi - p) >= n) return true;
    ok = false;
    return false;
  }
  template <typename T>
  T fixed() {
    T v{};
    if (!has(sizeof v)) return v;
    memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
  uint8_t u8() { return fixed<uint8_t>(); }
  uint64_t uleb() {
    uint64_t v = 0;
    for (int shift = 0; has(1); shift += 7) {
      uint8_t b = *p++;
      if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return 0;
  }
  int64_t sleb() {
    uint64_t v = 0;
    int shift = 0;
    while (has(1)) {
      uint8_t b = *p++;
      if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) {
        if (shift < 64 && (b & 0x40)) v |= ~0ull << shift;
        return int64_t(v);
      }
    }
    return 0;
  }
  void skip(uint64_t n) {
    if (has(n)) p += n;
  }
  // A pointer in encoding `enc`; `datarel` is the base of DW_EH_PE_datarel (.eh_frame_hdr's
  // start). An indirect pointer is returned as the address it is read from (only skipped here).
  uint64_t encoded(uint8_t enc, uint64_t datarel = 0) {
    if (enc == kEncOmit) return 0;
    const uint64_t at = uint64_t(uintptr_t(p));
    uint64_t v;
    switch (enc & 0x0f) {
      case 0x00: v = fixed<uint64_t>(); break;
      case 0x01: v = uleb(); break;
      case 0x02: v = fixed<uint16_t>(); break;
      case 0x03: v = fixed<uint32_t>(); break;
      case 0x04: v = fixed<uint64_t>(); break;
      case 0x09: v = uint64_t(sleb()); break;
      case 0x0a: v = uint64_t(int64_t(fixed<int16_t>())); break;
      case 0x0b: v = uint64_t(int64_t(fixed<int32_t>())); break;
      case 0x0c: v = fixed<uint64_t>(); break;
      default: ok = false; return 0;
    }
    switch (enc & 0x70) {
      case 0x00: break;
      case kEncPcrel: v += at; break;
      case kEncDatarel: v += datarel; break;
      default: ok = false; return 0;  // textrel, funcrel, aligned: not used on x86-64
    }
    return v;
  }
};

// A register's rule, for the registers the common form needs.
struct RegRule {
  enum Kind : uint8_t { Same, Undefined, Offset, Complex } kind = Same;
  int64_t offset = 0;  // Offset: saved at CFA + offset
};

struct Row {
  uint64_t cfa_reg = kRegRsp;
  int64_t cfa_offset = 8;
  bool cfa_expression = false;
  RegRule rbp, rsp, rip;
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_reg = kRegRip;
  uint8_t fde_encoding = 0;
  bool has_augmentation_data = false;
  bool signal_frame = false;
  const uint8_t* program = nullptr;
  const uint8_t* program_end = nullptr;
};

// The record at `p`: its contents in [*body, *end). False when it does not fit in [p, hi).
bool record_bounds(const uint8_t* p, const uint8_t* hi, const uint8_t** body, const uint8_t** end) {
  Reader r{p, hi};
  uint64_t len = r.fixed<uint32_t>();
  if (len == 0xffffffffu) len = r.fixed<uint64_t>();
  if (!r.ok || len == 0 || len > uint64_t(hi - r.p)) return false;
  *body = r.p;
  *end = r.p + len;
  return true;
}

bool parse_cie(const uint8_t* p, const uint8_t* hi, Cie* cie) {
  const uint8_t *body, *end;
  if (!record_bounds(p, hi, &body, &end)) return false;
  Reader r{body, end};
  if (r.fixed<uint32_t>() != 0) return false;  // a CIE's id in .eh_frame
  uint8_t version = r.u8();
  if (version != 1 && version != 3) return false;
  const char* aug = reinterpret_cast<const char*>(r.p);
  size_t aug_len = strnlen(aug, size_t(end - r.p));
  if (aug_len == size_t(end - r.p)) return false;
  r.skip(aug_len + 1);
  if (aug[0] != '\0' && aug[0] != 'z') return false;  // ("eh" and the like: pre-standard)
  cie->code_align = r.uleb();
  cie->data_align = r.sleb();
  cie->ra_reg = version == 1 ? r.u8() : r.uleb();
  if (aug[0] == 'z') {
    cie->has_augmentation_data = true;
    uint64_t data_len = r.uleb();
    if (!r.has(data_len)) return false;
    const uint8_t* data_end = r.p + data_len;
    Reader d{r.p, data_end};
    for (size_t i = 1; i < aug_len && d.ok; ++i) {
      switch (aug[i]) {
        case 'L': d.u8(); break;                      // the LSDA's encoding (in the FDE's data)
        case 'P': d.encoded(d.u8() & ~kEncIndirect); break;  // the personality routine
        case 'R': cie->fde_encoding = d.u8(); break;
        case 'S': cie->signal_frame = true; break;
        case 'B': break;  // (AArch64's pointer authentication key)
        default: i = aug_len; break;  // unknown: the data length still says where it ends
      }
    }
    if (!d.ok) return false;
    r.p = data_end;
  }
  cie->program = r.p;
  cie->program_end = end;
  return r.ok;
}

bool set_rule(Row& row, uint64_t reg, RegRule rule) {
  if (reg == kRegRbp) row.rbp = rule;
  else if (reg == kRegRsp) row.rsp = rule;
  else if (reg == kRegRip) row.rip = rule;
  return true;
}
RegRule initial_rule(const Row& initial, uint64_t reg) {
  if (reg == kRegRbp) return initial.rbp;
  if (reg == kRegRsp) return initial.rsp;
  if (reg == kRegRip) return initial.rip;
  return {};
}

// Runs call frame instructions [p, end) from location `loc` until the row for `pc`. `initial` is
// the row after the CIE's instructions (for DW_CFA_restore); null while running those. False on
// an instruction not understood.
bool run_program(const uint8_t* p, const uint8_t* end, const Cie& cie, uint64_t loc, uint64_t pc, Row& row,
                 const Row* initial) {
  constexpr int kMaxRemembered = 16;
  Row remembered[kMaxRemembered];
  int depth = 0;
  Reader r{p, end};
  auto advance = [&](uint64_t delta) {  // false once the row for pc is complete
    loc += delta * cie.code_align;
    return loc <= pc;
  };
  while (r.ok && r.p < end) {
    uint8_t op = r.u8();
    uint8_t arg = op & 0x3f;
    switch (op & 0xc0) {
      case 0x40:  // DW_CFA_advance_loc
        if (!advance(arg)) return true;
        continue;
      case 0x80:  // DW_CFA_offset
        set_rule(row, arg, {RegRule::Offset, int64_t(r.uleb()) * cie.data_align});
        continue;
      case 0xc0:  // DW_CFA_restore
        if (!initial) return false;
        set_rule(row, arg, initial_rule(*initial, arg));
        continue;
    }
    switch (op) {
      case 0x00: break;  // nop
      case 0x01: {       // set_loc
        uint64_t to = r.encoded(cie.fde_encoding);
        if (to > pc) return r.ok;
        loc = to;
        break;
      }
      case 0x02: if (!advance(r.u8())) return r.ok; break;
      case 0x03: if (!advance(r.fixed<uint16_t>())) return r.ok; break;
      case 0x04: if (!advance(r.fixed<uint32_t>())) return r.ok; break;
      case 0x05: {  // offset_extended
        uint64_t reg = r.uleb();
        set_rule(row, reg, {RegRule::Offset, int64_t(r.uleb()) * cie.data_align});
        break;
      }
      case 0x06: {  // restore_extended
        uint64_t reg = r.uleb();
        if (!initial) return false;
        set_rule(row, reg, initial_rule(*initial, reg));
        break;
      }
      case 0x07: set_rule(row, r.uleb(), {RegRule::Undefined, 0}); break;
      case 0x08: set_rule(row, r.uleb(), {RegRule::Same, 0}); break;
      case 0x09: {  // register: saved in another register
        uint64_t reg = r.uleb();
        r.uleb();
        set_rule(row, reg, {RegRule::Complex, 0});
        break;
      }
      case 0x0a:
        if (depth == kMaxRemembered) return false;
        remembered[depth++] = row;
        break;
      case 0x0b: {  // restore_state: the CFA's rule is restored too (as GCC and libunwind read it)
        if (depth == 0) return false;
        row = remembered[--depth];
        break;
      }
      case 0x0c:
        row.cfa_reg = r.uleb();
        row.cfa_offset = int64_t(r.uleb());
        row.cfa_expression = false;
        break;
      case 0x0d:
        row.cfa_reg = r.uleb();
        row.cfa_expression = false;
        break;
      case 0x0e: row.cfa_offset = int64_t(r.uleb()); break;
      case 0x0f:  // def_cfa_expression
        r.skip(r.uleb());
        row.cfa_expression = true;
        break;
      case 0x10:    // expression
      case 0x16: {  // val_expression
        uint64_t reg = r.uleb();
        r.skip(r.uleb());
        set_rule(row, reg, {RegRule::Complex, 0});
        break;
      }
      case 0x11: {  // offset_extended_sf
        uint64_t reg = r.uleb();
        set_rule(row, reg, {RegRule::Offset, r.sleb() * cie.data_align});
        break;
      }
      case 0x12:
        row.cfa_reg = r.uleb();
        row.cfa_offset = r.sleb() * cie.data_align;
        row.cfa_expression = false;
        break;
      case 0x13: row.cfa_offset = r.sleb() * cie.data_align; break;
      case 0x14:    // val_offset
      case 0x15: {  // val_offset_sf
        uint64_t reg = r.uleb();
        if (op == 0x14) r.uleb();
        else r.sleb();
        set_rule(row, reg, {RegRule::Complex, 0});
        break;
      }
      case 0x2e: r.uleb(); break;  // GNU_args_size
      case 0x2f: {                 // GNU_negative_offset_extended
        uint64_t reg = r.uleb();
        set_rule(row, reg, {RegRule::Offset, -int64_t(r.uleb()) * cie.data_align});
        break;
      }
      default: return false;
    }
  }
  return r.ok;
}

FrameRule rule_of(const Row& row) {
  FrameRule rule;  // Other
  // An undefined return address ends the stack (DWARF), and so does an undefined rbp (the x86-64
  // ABI's other end-of-chain mark, which libunwind honours too).
  if (row.rip.kind == RegRule::Undefined || row.rbp.kind == RegRule::Undefined) {
    rule.kind = FrameKind::Outermost;
    return rule;
  }
  if (row.cfa_expression || (row.cfa_reg != kRegRsp && row.cfa_reg != kRegRbp)) return rule;
  if (row.rip.kind != RegRule::Offset || row.rip.offset != -8) return rule;
  if (row.rsp.kind != RegRule::Same) return rule;  // rsp is the CFA unless said otherwise
  if (row.cfa_offset < INT32_MIN || row.cfa_offset > INT32_MAX) return rule;
  if (row.rbp.kind == RegRule::Offset) {
    if (row.rbp.offset <= INT16_MIN || row.rbp.offset > INT16_MAX) return rule;
    rule.rbp_offset = int16_t(row.rbp.offset);
  } else if (row.rbp.kind != RegRule::Same) {
    return rule;
  }
  rule.cfa_offset = int32_t(row.cfa_offset);
  rule.kind = row.cfa_reg == kRegRsp ? FrameKind::CfaRsp : FrameKind::CfaRbp;
  return rule;
}

}  // namespace

FrameRule frame_rule_from_fde(const uint8_t* fde, const uint8_t* lo, const uint8_t* hi, uint64_t pc) {
  const uint8_t *body, *end;
  if (fde < lo || fde >= hi || !record_bounds(fde, hi, &body, &end)) return {};
  Reader r{body, end};
  uint32_t cie_offset = r.fixed<uint32_t>();
  if (!r.ok || cie_offset == 0 || uint64_t(body - lo) < cie_offset) return {};  // (0: it is a CIE)
  Cie cie;
  if (!parse_cie(body - cie_offset, hi, &cie) || cie.ra_reg != kRegRip || cie.signal_frame) return {};
  uint64_t begin = r.encoded(cie.fde_encoding);
  uint64_t range = r.encoded(cie.fde_encoding & 0x0f);
  if (!r.ok || pc < begin || pc - begin >= range) return {};
  if (cie.has_augmentation_data) r.skip(r.uleb());
  if (!r.ok) return {};
  Row row;  // (the CIE's instructions set the CFA and the return address's rule)
  if (!run_program(cie.program, cie.program_end, cie, begin, ~0ull, row, nullptr)) return {};
  const Row initial = row;
  if (!run_program(r.p, end, cie, begin, pc, row, &initial)) return {};
  return rule_of(row);
}

namespace {

struct Search {
  uint64_t pc;
  FrameRule rule;
  uint64_t unloads = 0;
};

// The FDE for pc through the object's .eh_frame_hdr table.
FrameRule rule_in_object(const dl_phdr_info* info, uint64_t pc) {
  const ElfW(Phdr)* hdr_ph = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) hdr_ph = &info->dlpi_phdr[i];
  if (!hdr_ph) return {};
  const uint64_t hdr_at = info->dlpi_addr + hdr_ph->p_vaddr;
  // The loadable segment that holds the header bounds the reads (.eh_frame follows it there).
  const uint8_t *lo = nullptr, *hi = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uint64_t a = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && hdr_at >= a && hdr_at - a < ph.p_memsz) {
      lo = reinterpret_cast<const uint8_t*>(a);
      hi = lo + ph.p_memsz;
    }
  }
  if (!lo) return {};
  const uint8_t* hdr = reinterpret_cast<const uint8_t*>(hdr_at);
  Reader r{hdr, hi};
  if (r.u8() != 1) return {};
  uint8_t frame_ptr_enc = r.u8(), count_enc = r.u8(), table_enc = r.u8();
  r.encoded(frame_ptr_enc, hdr_at);
  uint64_t count = r.encoded(count_enc, hdr_at);
  // The table libunwind, GCC and LLVM binary-search: signed 4-byte offsets from the header.
  if (!r.ok || count_enc == kEncOmit || table_enc != (kEncDatarel | 0x0b) || count == 0) return {};
  if (uint64_t(hi - r.p) / 8 < count) return {};
  const uint8_t* table = r.p;
  auto entry = [&](uint64_t i, int k) {
    int32_t v;
    memcpy(&v, table + i * 8 + k * 4, 4);
    return hdr_at + uint64_t(int64_t(v));
  };
  if (pc < entry(0, 0)) return {};
  uint64_t a = 0, b = count;  // the last entry whose location is <= pc
  while (b - a > 1) {
    uint64_t mid = a + (b - a) / 2;
    if (entry(mid, 0) <= pc) a = mid;
    else b = mid;
  }
  return frame_rule_from_fde(reinterpret_cast<const uint8_t*>(entry(a, 1)), lo, hi, pc);
}

int find_in_object(dl_phdr_info* info, size_t, void* data) {
  Search* s = static_cast<Search*>(data);
  s->unloads = info->dlpi_subs;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uint64_t a = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && s->pc >= a && s->pc - a < ph.p_memsz) {
      s->rule = rule_in_object(info, s->pc);
      return 1;
    }
  }
  return 0;
}

}  // namespace

FrameRule frame_rule_at(uint64_t pc, uint64_t* unloads) {
  Search s{pc, {}};
  dl_iterate_phdr(find_in_object, &s);
  *unloads = s.unloads;
  return s.rule;  // (Other when no object holds pc)
}

}  // namespace vt
