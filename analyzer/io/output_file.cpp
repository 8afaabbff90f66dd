// See output_file.h.
#include "output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <streambuf>

#include "trace_format.h"

namespace vt::analyzer {

namespace {

// A stream buffer over a descriptor that remembers the first write error (errno), so the
// message can say why (the standard file streams do not).
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(size_t size) : buf_(new char[size]), size_(size) { setp(buf_.get(), buf_.get() + size_); }
  void attach(int fd) { fd_ = fd; }
  int error() const { return error_; }
  bool drain() {
    bool ok = write_all(pbase(), size_t(pptr() - pbase()));
    setp(buf_.get(), buf_.get() + size_);
    return ok;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }
  // A large piece (a job's report: megabytes) goes to the descriptor as it is, not copied through
  // the buffer first.
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (size_t(n) < size_ / 2) return std::streambuf::xsputn(s, n);
    return drain() && write_all(s, size_t(n)) ? n : 0;
  }

 private:
  bool write_all(const char* p, size_t n) {
    while (n && !error_) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error_ = w < 0 ? errno : EIO;
        break;
      }
      p += w;
      n -= size_t(w);
    }
    return !error_;
  }

  std::unique_ptr<char[]> buf_;
  size_t size_;
  int fd_ = -1;
  int error_ = 0;
};

std::string dir_of(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : p.substr(0, slash);
}
std::string base_of(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

bool is_trace(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  char magic[sizeof format::kFileMagic] = {};
  bool yes = ::read(fd, magic, sizeof magic) == ssize_t(sizeof magic) &&
             memcmp(magic, format::kFileMagic, sizeof magic) == 0;
  ::close(fd);
  return yes;
}

char g_in_progress[4096];  // output_in_progress(): set while a temporary file exists

void note_in_progress(const std::string& temp) {
  size_t n = std::min(temp.size(), sizeof g_in_progress - 1);
  memcpy(g_in_progress, temp.data(), n);
  g_in_progress[n] = '\0';
}

}  // namespace

const char* output_in_progress() { return g_in_progress; }

struct OutputFile::State {
  std::string path;    // as named (messages)
  std::string target;  // the file the output ends up in
  std::string temp;    // written first, renamed to target; empty when written in place
  int fd = -1;
  bool own_fd = false;  // not stdout
  bool committed = false;
  FdBuf buf{1 << 20};
  std::ostream os{&buf};
};

OutputFile::OutputFile() : s_(new State) {}

OutputFile::~OutputFile() {
  if (s_->own_fd && s_->fd >= 0) ::close(s_->fd);
  if (!s_->committed && !s_->temp.empty()) ::unlink(s_->temp.c_str());
  if (!s_->temp.empty()) g_in_progress[0] = '\0';
}

std::ostream& OutputFile::stream() { return s_->os; }

bool OutputFile::open(const std::string& path, const std::vector<std::string>& inputs, std::string* error,
                      bool follow_symlink) {
  State& s = *s_;
  s.path = path;
  auto fail = [&](const std::string& why) {
    *error = "cannot write " + path + ": " + why;
    return false;
  };
  if (path.empty()) return fail("no file name");
  if (path == "-") {
    std::cout.flush();  // (anything printed before stays first)
    s.fd = STDOUT_FILENO;
    s.buf.attach(s.fd);
    return true;
  }
  struct stat link, st;
  bool exists = ::lstat(path.c_str(), &link) == 0;
  if (!exists && errno != ENOENT) return fail(strerror(errno));
  bool regular = !exists;
  s.target = path;
  if (exists && S_ISLNK(link.st_mode)) {
    if (!follow_symlink) return fail("it is a symlink (name the file itself)");
    if (::stat(path.c_str(), &st) != 0) {
      regular = true;  // a dangling symlink: the file it names is created
    } else if (S_ISREG(st.st_mode)) {
      char real[PATH_MAX];
      if (!::realpath(path.c_str(), real)) return fail(strerror(errno));
      s.target = real;  // replaced there: the symlink stays
      regular = true;
    } else {
      link = st;  // a device, FIFO... through the symlink: written in place below
    }
  } else if (exists) {
    st = link;
    regular = S_ISREG(link.st_mode);
  }
  if (exists && S_ISDIR(link.st_mode)) return fail("it is a directory");
  if (exists && regular && ::stat(s.target.c_str(), &st) == 0) {
    for (const std::string& in : inputs) {
      struct stat is;
      if (::stat(in.c_str(), &is) == 0 && S_ISREG(is.st_mode) && is.st_dev == st.st_dev && is.st_ino == st.st_ino)
        return fail("it is this command's input (name another output)");
    }
    if (is_trace(s.target)) return fail("it is a vramtrace trace (name another output)");
  }
  if (!regular) {  // a device, FIFO, socket or terminal: written as it is, never replaced
    s.fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (s.fd < 0) return fail(strerror(errno));
    s.own_fd = true;
    s.buf.attach(s.fd);
    return true;
  }
  std::string temp = dir_of(s.target) + "/." + base_of(s.target) + ".XXXXXX";
  s.fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (s.fd < 0 && exists && (errno == EACCES || errno == EROFS || errno == EPERM)) {
    // No room for a file beside it (a directory we may not write) but the file itself may be
    // writable: then it is written in place, as before (a failed write can leave it partial).
    const int why = errno;
    s.fd = ::open(s.target.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
    if (s.fd < 0) return fail(strerror(why));
    s.own_fd = true;
    s.buf.attach(s.fd);
    return true;
  }
  if (s.fd < 0) return fail(strerror(errno));
  s.own_fd = true;
  s.temp = temp;
  note_in_progress(temp);
  mode_t mode;
  if (exists && ::stat(s.target.c_str(), &st) == 0) {
    mode = st.st_mode & 07777;  // the file keeps its mode
  } else {
    mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;  // as a new file would get
  }
  if (::fchmod(s.fd, mode) != 0) return fail(strerror(errno));
  s.buf.attach(s.fd);
  return true;
}

bool OutputFile::commit(std::string* error) {
  State& s = *s_;
  s.os.flush();
  int err = s.buf.error();
  if (!err && s.own_fd) {
    if (::close(s.fd) != 0) err = errno;
    s.fd = -1;
  }
  if (!err && !s.temp.empty() && ::rename(s.temp.c_str(), s.target.c_str()) != 0) err = errno;
  if (err) {
    *error = "cannot write " + (s.path == "-" ? std::string("the output (stdout)") : s.path) + ": " + strerror(err);
    return false;  // the destructor removes the temporary file
  }
  s.committed = true;
  g_in_progress[0] = '\0';
  return true;
}

bool write_output(const std::vector<std::string_view>& pieces, const std::string& path,
                  const std::vector<std::string>& inputs, std::string* error, bool follow_symlink) {
  OutputFile f;
  if (!f.open(path, inputs, error, follow_symlink)) return false;
  for (std::string_view p : pieces) f.stream().write(p.data(), std::streamsize(p.size()));
  return f.commit(error);
}

}  // namespace vt::analyzer
