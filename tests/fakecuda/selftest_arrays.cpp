// selftest_arrays.cpp — mipmapped arrays (the sum of their levels, in 2 MiB pages; levels that
// belong to the array) and external memory (imported memory of another API counts nowhere
// here; mapped buffers are freed with cuMemFree, not by destroying the object).
#include "selftest.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace selftest {

void test_arrays_external() {
  const size_t base_free = free_mem();
  CUDA_ARRAY3D_DESCRIPTOR d;
  memset(&d, 0, sizeof d);
  d.Width = 1024;
  d.Height = 1024;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 4;
  CUmipmappedArray m = nullptr;
  CHECK_RC(cuMipmappedArrayCreate(&m, &d, 12), CUDA_ERROR_INVALID_VALUE);  // 1024 has 11 levels
  CHECK_RC(cuMipmappedArrayCreate(&m, &d, 0), CUDA_ERROR_INVALID_VALUE);
  OK(cuMipmappedArrayCreate(&m, &d, 11));
  size_t bytes = 0;
  for (int l = 0; l < 11; ++l) {
    size_t w = 1024 >> l, h = 1024 >> l;
    bytes += (w * h * 16 + 511) / 512 * 512;
  }
  const size_t pages = (bytes + 2 * MiB - 1) / (2 * MiB) * 2 * MiB;  // 16 + 4 + 1 + ... MiB -> 22 MiB
  CHECK(pages == 22 * MiB);
  CHECK(free_mem() == base_free - pages);
  CUarray level0 = nullptr, level10 = nullptr;
  OK(cuMipmappedArrayGetLevel(&level0, m, 0));
  OK(cuMipmappedArrayGetLevel(&level10, m, 10));
  CHECK(level0 && level10 && level0 != level10);
  CHECK_RC(cuMipmappedArrayGetLevel(&level0, m, 11), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(cuArrayDestroy(level0), CUDA_ERROR_INVALID_VALUE);  // owned by the mipmapped array
  OK(cuMipmappedArrayDestroy(m));
  CHECK(free_mem() == base_free);
  CHECK_RC(cuMipmappedArrayDestroy(m), CUDA_ERROR_INVALID_HANDLE);
  CHECK_RC(cuArrayDestroy(level0), CUDA_ERROR_INVALID_HANDLE);  // gone with it

  // External memory: a descriptor of another API's allocation (here a memfd).
  int fd = memfd_create("fakecuda-selftest-external", MFD_CLOEXEC);
  CHECK(fd >= 0 && ftruncate(fd, 64 * MiB) == 0);
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC hd;
  memset(&hd, 0, sizeof hd);
  hd.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  hd.handle.fd = fd;
  hd.size = 64 * MiB;
  CUexternalMemory ext = nullptr;
  OK(cuImportExternalMemory(&ext, &hd));  // the driver owns the fd now
  CHECK(free_mem() == base_free);
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC bd;
  memset(&bd, 0, sizeof bd);
  bd.offset = MiB;
  bd.size = 16 * MiB;
  CUdeviceptr buf = 0;
  OK(cuExternalMemoryGetMappedBuffer(&buf, ext, &bd));
  CHECK(buf != 0);
  CUdeviceptr base = 0;
  size_t size = 0;
  OK(cuMemGetAddressRange_v2(&base, &size, buf + 5));
  CHECK(base == buf && size == 16 * MiB);
  CHECK(free_mem() == base_free);
  bd.offset = 60 * MiB;
  CHECK_RC(cuExternalMemoryGetMappedBuffer(&buf, ext, &bd), CUDA_ERROR_INVALID_VALUE);  // past its end
  CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC md;
  memset(&md, 0, sizeof md);
  md.arrayDesc = d;
  md.numLevels = 2;
  OK(cuExternalMemoryGetMappedMipmappedArray(&m, ext, &md));
  CHECK(free_mem() == base_free);  // the other API's memory
  OK(cuMipmappedArrayDestroy(m));
  OK(cuDestroyExternalMemory(ext));
  CHECK(fcntl(fd, F_GETFD) == -1);  // closed by the driver with the object
  OK(cuMemGetAddressRange_v2(&base, &size, buf));  // mappings outlive the object...
  OK(cuMemFree_v2(buf));                           // ...until freed
  CHECK_RC(cuMemGetAddressRange_v2(&base, &size, buf), CUDA_ERROR_NOT_FOUND);
  CHECK_RC(cuDestroyExternalMemory(ext), CUDA_ERROR_INVALID_VALUE);
  hd.handle.fd = -1;
  CHECK_RC(cuImportExternalMemory(&ext, &hd), CUDA_ERROR_INVALID_VALUE);
  hd.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32;
  CHECK_RC(cuImportExternalMemory(&ext, &hd), CUDA_ERROR_INVALID_VALUE);
}

}  // namespace selftest
