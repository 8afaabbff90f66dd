// A main() for fuzz targets built without libFuzzer (any compiler): runs LLVMFuzzerTestOneInput
// once on each file named, and on every regular file inside each directory named, so the kept
// corpus is replayed by ctest on every test run. Arguments starting with '-' are ignored (they
// are libFuzzer flags). Exits 0 after the last input; a crash or abort() ends it non-zero.
// Usage: reader_fuzz_replay FILE_OR_DIR...
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void collect(const std::string& path, std::vector<std::string>* out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    fprintf(stderr, "replay: cannot stat %s\n", path.c_str());
    return;
  }
  if (S_ISREG(st.st_mode)) {
    out->push_back(path);
    return;
  }
  if (!S_ISDIR(st.st_mode)) return;
  DIR* d = opendir(path.c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    struct stat fst;
    std::string p = path + "/" + n;
    if (stat(p.c_str(), &fst) == 0 && S_ISREG(fst.st_mode)) out->push_back(p);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-') collect(argv[i], &files);
  if (files.empty()) {
    fprintf(stderr, "replay: no inputs (usage: %s FILE_OR_DIR...)\n", argv[0]);
    return 2;
  }
  size_t bytes = 0;
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes += data.size();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  }
  printf("replay: %zu inputs, %zu bytes, no failure\n", files.size(), bytes);
  return 0;
}
