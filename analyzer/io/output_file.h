// Writing an output the user named (`report -o`, `summary -o`, `diff -o`, `export --folded`,
// `export --perfetto`, the HTML page), one way for all of them:
//   - "-" is stdout, and a failed write there (a full disk, a closed pipe) is an error too;
//   - a device, FIFO, socket or terminal (also through a symlink: /dev/null, /dev/stdout) is
//     written in place and never replaced;
//   - a regular file or a new name is written to a temporary file beside it (the symlink's target
//     for a symlink) and renamed over it only once everything was written: a failed write (full
//     disk, file size limit) leaves the old file as it was and no partial one;
//   - an input of the command, or any vramtrace trace, is never overwritten.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace vt::analyzer {

class OutputFile {
 public:
  OutputFile();
  ~OutputFile();  // an output not committed leaves nothing behind (its temporary file goes)
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // `inputs`: the command's input files and directories (an output that is one of them, or a
  // trace inside one, is refused). `follow_symlink` false: a symlink at `path` is refused (a name
  // the user did not choose, such as the default HTML file). False with one line in *error.
  bool open(const std::string& path, const std::vector<std::string>& inputs, std::string* error,
            bool follow_symlink = true);
  std::ostream& stream();
  // Everything written: flushed, and renamed into place. False with one line in *error (the
  // temporary file is removed, an existing file keeps its old contents).
  bool commit(std::string* error);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The temporary file of the output being written now, or "" (for a fatal signal's handler, which
// may only unlink it: async-signal-safe, no allocation).
const char* output_in_progress();

// open + the text + commit. The text may come in pieces, written one after another (a job's JSON:
// its reports written apart, never joined in memory).
bool write_output(const std::vector<std::string_view>& pieces, const std::string& path,
                  const std::vector<std::string>& inputs, std::string* error, bool follow_symlink = true);

}  // namespace vt::analyzer
