// Small file-system and string helpers shared by the checks (sizes: common/byte_size.h). Nothing here loads a
// library or starts a process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vt::doctor {

bool is_dir(const std::string& p);
bool is_file(const std::string& p);           // exists and is not a directory
std::string real_path(const std::string& p);  // p itself when it cannot be resolved
std::string dir_of(const std::string& p);
std::string base_name(const std::string& p);
std::vector<std::string> list_dir(const std::string& dir);  // names, sorted; empty when unreadable
std::optional<std::string> read_text(const std::string& p, size_t limit = 1 << 20);
// The first executable `name` on PATH (or `name` itself when it contains a slash); empty if none.
std::string find_on_path(const std::string& name);
std::string getenv_str(const char* name);  // "" when unset
bool env_set(const char* name);

std::string trim(const std::string& s);
std::vector<std::string> split(const std::string& s, char sep);
std::string lower(std::string s);
std::string join(const std::vector<std::string>& v, const std::string& sep);
std::optional<long long> parse_int(const std::string& s);  // whole string, base 10
std::optional<double> parse_double(const std::string& s);  // whole string

}  // namespace vt::doctor
