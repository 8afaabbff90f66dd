// How a record's fields are written down once: every metadata and activity record has one schema,
// an X-macro list of its fields in wire order, and everything else is derived from it:
//   encode()        the writer (interpose/, cupti/): the record's payload, through PayloadWriter
//   decode()        the reader (analyzer/): the payload back into the same typed record
//   doc_words()     the "payload after dt" cell of docs/trace-format.md's tables (a unit test,
//                   tests/unit/doc_tables_test.cpp, fails when the page says something else)
//   visit()         anything else that walks the fields by name (the JSON of `vramtrace dump`)
// The records and their schemas: meta_records.h, pytorch_records.h, activity_records.h; every
// metadata record is a row of record_registry.h.
//
// A schema is declared with VT_RECORD_SCHEMA(Name, tag, "name", FIELDS), FIELDS(F) calling
// F(wire, member, "json key", "words") once per field, in wire order. `wire` says how the field
// is written (below); `member` is the record struct's member it is read into and written from
// (the compiler checks that the member exists and has a type the wire kind can hold); the json
// key names it in JSON output; the words are what docs/trace-format.md says of it.
//
// No heap, no exceptions, no formatting in encode(): the writer runs inside traced programs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "payload.h"

namespace vt::format {

// A string field as the writer hands it over and the reader sees it in the mapped file.
using Text = std::string_view;

enum class Wire : uint8_t {
  Varint,    // unsigned LEB128, into any integer member
  Zigzag,    // a signed value, zigzag then LEB128
  Time,      // an absolute CLOCK_MONOTONIC ns, written as zigzag(t - FileHeader::start_monotonic_ns)
  Duration,  // a member holding an absolute end time, written as a varint: end - the last Time
  Triple,    // three varints into a uint32_t[3] (x, y, z)
  Count,     // a varint: how many rows follow (stack frames, GPU processes)
  Text,      // a varint length, then the bytes (text)
  Bytes,     // a varint length, then raw bytes (a build id, a UUID, a line table)
  TextList,  // a varint length, then NUL-separated strings (argv)
  Rest,      // the rest of the payload, no length (a note's text)
};

// The word for each wire kind in docs/trace-format.md.
constexpr const char* wire_word(Wire w) {
  switch (w) {
    case Wire::Varint: return "varint";
    case Wire::Zigzag: return "zigzag";
    case Wire::Time: return "time";
    case Wire::Duration: return "dur";
    case Wire::Triple: return "3 × varint";
    case Wire::Count: return "varint";
    case Wire::Text: case Wire::Bytes: case Wire::TextList: return "string";
    case Wire::Rest: return "text (the rest of the payload, no length):";
  }
  return "";
}

template <class T>
inline constexpr bool kIsText = std::is_same_v<T, Text> || std::is_same_v<T, std::string>;

// One schema: FIELDS(F) with F(wire, member, json, words).
#define VT_SCHEMA_VISIT_FIELD(wire, member, json, words) \
  v.template field<::vt::format::Wire::wire>(r.member, json, words);
#define VT_RECORD_SCHEMA(Name, tag, name, FIELDS)                               \
  struct Name {                                                                \
    static constexpr uint8_t kTag = tag;                                       \
    static constexpr const char* kName = name;                                 \
    template <class R, class V>                                                \
    static void visit(R& r, V& v) {                                            \
      FIELDS(VT_SCHEMA_VISIT_FIELD)                                            \
    }                                                                          \
  }

// ---- the writer ----

class SchemaEncoder {
 public:
  SchemaEncoder(PayloadWriter& w, uint64_t base_ns) : w_(w), base_(base_ns) {}
  template <Wire K, class T>
  void field(const T& m, const char*, const char*) {
    if constexpr (K == Wire::Varint || K == Wire::Count) {
      static_assert(std::is_integral_v<T> || std::is_enum_v<T>, "a varint field needs an integer member");
      w_.varint(uint64_t(m));
    } else if constexpr (K == Wire::Zigzag) {
      static_assert(std::is_integral_v<T> && std::is_signed_v<T>, "a zigzag field needs a signed member");
      w_.zigzag(int64_t(m));
    } else if constexpr (K == Wire::Time) {
      static_assert(std::is_same_v<T, uint64_t>, "a time field needs a uint64_t member");
      w_.zigzag(int64_t(uint64_t(m) - base_));  // (the same bits; never a signed overflow)
      last_ = m;
    } else if constexpr (K == Wire::Duration) {
      static_assert(std::is_same_v<T, uint64_t>, "a duration field needs a uint64_t member");
      w_.varint(m - last_);
    } else if constexpr (K == Wire::Triple) {
      static_assert(std::is_same_v<T, uint32_t[3]>, "a triple needs a uint32_t[3] member");
      for (uint32_t x : m) w_.varint(x);
    } else if constexpr (K == Wire::Rest) {
      static_assert(kIsText<T>, "a text field needs a Text member");
      w_.raw(m.data(), m.size());
    } else {
      static_assert(kIsText<T>, "a string field needs a Text member");
      w_.bytes(m.data(), m.size());
    }
  }

 private:
  PayloadWriter& w_;
  uint64_t base_;
  uint64_t last_ = 0;
};

// Appends record `r` to `w` (times relative to `base_ns`, the trace's start). The writer cuts
// strings to fit and drops what does not (PayloadWriter); check w.ok() for a record that must be
// whole.
template <class Schema, class R>
void encode(PayloadWriter& w, const R& r, uint64_t base_ns = 0) {
  SchemaEncoder e(w, base_ns);
  Schema::visit(r, e);
}

// ---- the reader ----

class SchemaDecoder {
 public:
  SchemaDecoder(PayloadReader& in, uint64_t base_ns) : in_(in), base_(base_ns) {}
  template <Wire K, class T>
  void field(T& m, const char*, const char*) {
    if constexpr (K == Wire::Varint || K == Wire::Count) {
      m = T(in_.varint());
    } else if constexpr (K == Wire::Zigzag) {
      m = T(in_.zigzag());
    } else if constexpr (K == Wire::Time) {
      m = last_ = base_ + uint64_t(in_.zigzag());  // (unsigned: a damaged delta wraps, never overflows)
    } else if constexpr (K == Wire::Duration) {
      m = last_ + in_.varint();
    } else if constexpr (K == Wire::Triple) {
      for (uint32_t& x : m) x = uint32_t(in_.varint());
    } else if constexpr (K == Wire::Rest) {
      m = T(reinterpret_cast<const char*>(in_.pos()), size_t(in_.end() - in_.pos()));
      in_.skip_rest();
    } else {
      const uint8_t* p;
      size_t n;
      in_.bytes(&p, &n);
      m = T(reinterpret_cast<const char*>(p), n);
    }
  }

 private:
  PayloadReader& in_;
  uint64_t base_;
  uint64_t last_ = 0;
};

// Reads record `*out` from `in` (times relative to `base_ns`). False when the payload ends
// before the schema's last field (or a field is damaged); fields a newer writer appended are
// left unread in `in` (rows may follow). Text members point into the payload.
template <class Schema, class R>
bool decode(PayloadReader& in, R* out, uint64_t base_ns = 0) {
  SchemaDecoder d(in, base_ns);
  Schema::visit(*out, d);
  return in.ok();
}
template <class Schema, class R>
bool decode(const uint8_t* payload, size_t len, R* out, uint64_t base_ns = 0) {
  PayloadReader in(payload, len);
  return decode<Schema>(in, out, base_ns);
}

// ---- the documentation ----

class SchemaDocWords {
 public:
  template <Wire K, class T>
  void field(const T&, const char*, const char* words) {
    if (!text.empty()) text += "; ";
    text += wire_word(K);
    text += " ";
    text += words;
  }
  std::string text;
};

// The fields as docs/trace-format.md lists them: "varint ordinal; varint total bytes; string name".
template <class Schema, class R>
std::string doc_words() {
  R r{};
  SchemaDocWords d;
  Schema::visit(r, d);
  return d.text;
}

}  // namespace vt::format
