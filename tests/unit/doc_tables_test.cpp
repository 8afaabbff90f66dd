// docs/trace-format.md's tables say what the code says: the event flags (trace_format.h), the op
// table (op_table.h, op_fields.h) and the payload of every metadata, PyTorch and activity record
// (the record registry, format/record_registry.h, with each record's schema). Each table is generated here and compared
// cell by cell with the page; on a difference the test prints the table the page should hold.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "activity_records.h"
#include "meta_records.h"
#include "op_table.h"
#include "pytorch_records.h"
#include "record_registry.h"

namespace fmt = vt::format;

namespace {

using Row = std::vector<std::string>;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(' ');
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(' ') - b + 1);
}

Row cells(const std::string& line) {
  Row r;
  size_t i = 1;  // after the leading '|'
  while (i < line.size()) {
    size_t j = line.find('|', i);
    if (j == std::string::npos) break;
    r.push_back(trim(line.substr(i, j - i)));
    i = j + 1;
  }
  return r;
}

// The rows of every table of the page whose header row is `header` (in page order).
std::vector<Row> page_rows(const Row& header) {
  std::ifstream in(VT_SOURCE_DIR "/docs/trace-format.md");
  REQUIRE(in.good());
  std::vector<Row> out;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    bool row = line.size() > 1 && line[0] == '|';
    if (!row) {
      inside = false;
      continue;
    }
    Row c = cells(line);
    if (c == header) {
      inside = true;
      std::getline(in, line);  // the |---| line
      continue;
    }
    if (inside) out.push_back(c);
  }
  return out;
}

std::string markdown(const Row& header, const std::vector<Row>& rows) {
  std::string s;
  auto line = [&](const Row& r) {
    s += "|";
    for (const std::string& c : r) s += " " + c + " |";
    s += "\n";
  };
  line(header);
  s += "|";
  for (size_t i = 0; i < header.size(); ++i) s += "---|";
  s += "\n";
  for (const Row& r : rows) line(r);
  return s;
}

void check_table(const Row& header, const std::vector<Row>& want) {
  std::vector<Row> got = page_rows(header);
  if (got != want)
    FAIL("docs/trace-format.md: the table under '" << markdown(header, {}).substr(0, markdown(header, {}).find('\n'))
                                                   << "' differs from the code. It should read:\n"
                                                   << markdown(header, want));
  SUCCEED();
}

std::string tag_hex(uint8_t tag) {
  char b[8];
  snprintf(b, sizeof b, "0x%02X", tag);
  return b;
}

template <class Schema, class R>
Row record_row() {
  std::string fields = fmt::doc_words<Schema, R>();
  return {tag_hex(Schema::kTag), Schema::kName, fields.empty() ? "nothing" : fields};
}
// A record of a header and `n` rows.
template <class Schema, class R, class RowSchema, class RowR>
Row record_with_rows() {
  Row r = record_row<Schema, R>();
  r[2] += "; n × (" + fmt::doc_words<RowSchema, RowR>() + ")";
  return r;
}

}  // namespace

TEST_CASE("docs: the event flags table is trace_format.h's") {
  std::vector<Row> want;
#define VT_FLAG_ROW(e, bit, name, fields) want.push_back({name, std::to_string(bit), fields});
  VT_FOR_EACH_EVENT_FLAG(VT_FLAG_ROW)
#undef VT_FLAG_ROW
  check_table({"flag", "bit", "fields"}, want);
}

TEST_CASE("docs: the op table is op_table.h's") {
  std::vector<Row> want;
  for (const vt::OpInfo& op : vt::kOps) {
    bool lookup = op.action == vt::Action::Lookup;
    auto field = [&](vt::Field f) { return std::string(vt::field_info(f).doc); };
    bool query = op.action == vt::Action::Query;
    const vt::HookId as = vt::recorded_as(op.id);
    std::string kind = lookup ? "(lookup, never recorded)"
                       : query ? "(query, never recorded)"
                       : as != op.id ? std::string("(recorded as ") + vt::kOps[int(as)].name + ")"
                                     : vt::kind_name(op.kind);
    want.push_back({std::to_string(op.code), op.name, kind,
                    field(op.fields.addr), field(op.fields.size), field(op.fields.aux), field(op.fields.aux2)});
  }
  check_table({"code", "op", "kind", "addr", "size", "aux", "aux2"}, want);
}

TEST_CASE("docs: every record's payload is its schema") {
  // The registry's rows, in its order (the page's: metadata, PyTorch, kernel activity).
  std::vector<Row> want;
#define VT_DOC_RECORD(S, R, clock, by, damaged) want.push_back(record_row<fmt::S, fmt::R>());
#define VT_DOC_ROWS(S, R, RS, Row, count, max, by) want.push_back(record_with_rows<fmt::S, fmt::R, fmt::RS, fmt::Row>());
  VT_FOR_EACH_RECORD(VT_DOC_RECORD, VT_DOC_ROWS)
#undef VT_DOC_RECORD
#undef VT_DOC_ROWS

  // Every tag of the format is in the registry once, from 0x80 with no gap (a record left out of
  // the registry leaves one; the last tag is trace_format.h's kTagPoolSync or a later one).
  std::vector<std::string> tags;
  for (const Row& r : want) tags.push_back(r[0]);
  std::sort(tags.begin(), tags.end());
  REQUIRE(tags.size() >= size_t(fmt::kTagPoolSync - 0x80 + 1));
  for (size_t i = 0; i < tags.size(); ++i) CHECK(tags[i] == tag_hex(uint8_t(0x80 + i)));
  check_table({"tag", "name", "payload after dt"}, want);
}
