// PodArray: a growable array of trivially copyable values that grows with realloc. Owns its
// buffer. Why not std::vector: a vector grows by allocating the new buffer and copying, so at the
// moment the analyzer's per-stack arrays double (the site rows, the allocation classes, the stack
// index: hundreds of MiB when every event has a new stack) the old and the new copy are resident
// together, and that moment set the report's peak RSS. glibc reallocates a large (mmapped) buffer
// with mremap: the pages move, nothing is copied, nothing is resident twice
// (docs/PERFORMANCE.md, "Many distinct stacks").
#pragma once

#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace vt::analyzer {

template <typename T>
class PodArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  PodArray() = default;
  PodArray(const PodArray& o) { *this = o; }
  PodArray(PodArray&& o) noexcept { swap(o); }
  PodArray& operator=(const PodArray& o) {
    if (this != &o) {
      size_ = 0;
      reserve(o.size_);
      if (o.size_) std::memcpy(p_, o.p_, o.size_ * sizeof(T));
      size_ = o.size_;
    }
    return *this;
  }
  PodArray& operator=(PodArray&& o) noexcept {
    swap(o);
    return *this;
  }
  ~PodArray() { std::free(p_); }
  void swap(PodArray& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(size_, o.size_);
    std::swap(cap_, o.cap_);
  }

  size_t size() const { return size_; }
  size_t capacity() const { return cap_; }
  bool empty() const { return size_ == 0; }
  T* data() { return p_; }
  const T* data() const { return p_; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }
  T* begin() { return p_; }
  T* end() { return p_ + size_; }
  const T* begin() const { return p_; }
  const T* end() const { return p_ + size_; }
  T& back() { return p_[size_ - 1]; }
  const T& back() const { return p_[size_ - 1]; }

  void push_back(const T& v) {
    if (size_ == cap_) grow(size_ + 1);
    p_[size_++] = v;
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  // Grows to n filled with v (or shrinks to n).
  void resize(size_t n, const T& v = T{}) {
    if (n > cap_) grow(n);
    for (size_t i = size_; i < n; ++i) p_[i] = v;
    size_ = n;
  }
  void reserve(size_t n) {
    if (n > cap_) set_capacity(n);
  }

 private:
  void grow(size_t need) { set_capacity(need > 2 * cap_ ? need : (cap_ ? 2 * cap_ : 16)); }
  void set_capacity(size_t n) {
    if (n > size_t(-1) / sizeof(T)) throw std::bad_alloc();
    void* q = std::realloc(p_, n * sizeof(T));
    if (!q) throw std::bad_alloc();
    p_ = static_cast<T*>(q);
    cap_ = n;
  }
  T* p_ = nullptr;
  size_t size_ = 0, cap_ = 0;
};

}  // namespace vt::analyzer
