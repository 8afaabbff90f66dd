// See versions.h.
#include "versions.h"

#include <regex>

#include "util.h"

namespace vt::doctor {

std::string cuda_version_string(int v) {
  if (v <= 0) return {};
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

int parse_cuda_version(const std::string& s) {
  std::smatch m;
  static const std::regex re(R"(^\s*(\d+)(?:\.(\d+))?)");
  if (!std::regex_search(s, m, re)) return 0;
  int major = std::stoi(m[1]);
  int minor = m[2].matched ? std::stoi(m[2]) : 0;
  if (major <= 0 || major > 99 || minor > 99) return 0;
  return major * 1000 + minor * 10;
}

int cupti_api_to_cuda(uint32_t api) {
  // The table of cupti_version.h (CUDA 13): API version -> toolkit release.
  if (api >= 100000) return int(api / 10000) * 1000 + int((api / 100) % 100) * 10;
  static const int table[][2] = {
      {1, 4000},   {2, 4010},   {3, 5000},   {4, 5050},   {5, 6000},   {6, 6050},   {7, 6050},
      {8, 7000},   {9, 8000},   {10, 9000},  {11, 9010},  {12, 10000}, {13, 11000}, {14, 11010},
      {15, 11020}, {16, 11050}, {17, 11060}, {18, 11080}, {19, 12000}, {20, 12020}, {21, 12030},
      {22, 12040}, {23, 12050}, {24, 12060}, {26, 12080}, {27, 12090}, {28, 12090},
  };
  for (const auto& row : table)
    if (uint32_t(row[0]) == api) return row[1];
  // A counter missing from the table is some 12.x release (the counter ended with 12.9).
  if (api >= 19 && api < 100) return 12000;
  return 0;
}

int version_from_file_name(const std::string& file_name) {
  static const std::regex re(R"(\.so\.(\d+)(?:\.(\d+))?)");
  std::smatch m;
  if (!std::regex_search(file_name, m, re)) return 0;
  int major = std::stoi(m[1]);
  int minor = m[2].matched ? std::stoi(m[2]) : 0;
  if (major <= 0 || major > 99 || minor > 99) return 0;
  return major * 1000 + minor * 10;
}

std::string cu_init_advice(int result) {
  switch (result) {
    case 100:  // CUDA_ERROR_NO_DEVICE
      return "no GPU is visible: check `nvidia-smi`; if it lists GPUs, CUDA_VISIBLE_DEVICES (or a "
             "container started without --gpus) hides them";
    case 34:  // CUDA_ERROR_STUB_LIBRARY
      return "this libcuda is the toolkit's link-time stub (lib64/stubs): remove the stubs directory "
             "from LD_LIBRARY_PATH so the real driver library is found";
    case 35:  // CUDA_ERROR_INSUFFICIENT_DRIVER
      return "the kernel driver is older than this libcuda: install matching driver packages";
    case 803:  // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
      return "libcuda and the kernel module come from different driver versions (upgraded without "
             "reboot, or a cuda-compat libcuda on a driver it does not support): reboot or reinstall "
             "one driver version";
    case 804:  // CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
      return "a forward-compatibility libcuda (cuda-compat) is loaded but this GPU does not support "
             "it: remove the compat directory from LD_LIBRARY_PATH";
    case 999:  // CUDA_ERROR_UNKNOWN
      return "often a missing /dev/nvidia-uvm (run `nvidia-modprobe -u` or load nvidia_uvm) or a GPU "
             "in a bad state (see `dmesg` for Xid errors)";
    case 3:  // CUDA_ERROR_NOT_INITIALIZED
      return "the driver could not initialise: see `dmesg` and `nvidia-smi`";
    case 101:  // CUDA_ERROR_INVALID_DEVICE
      return "CUDA_VISIBLE_DEVICES names a device that does not exist";
    case 46:  // CUDA_ERROR_DEVICES_UNAVAILABLE
      return "every GPU is in exclusive-process mode and already taken, or prohibited";
    default: return "see `nvidia-smi` and `dmesg` for driver errors";
  }
}

std::string nvml_init_advice(int result) {
  switch (result) {
    case 18:  // NVML_ERROR_LIB_RM_VERSION_MISMATCH
      return "the driver libraries and the loaded kernel module differ (driver upgraded without "
             "reboot): reboot, or reload the nvidia kernel modules";
    case 9:  // NVML_ERROR_DRIVER_NOT_LOADED
      return "the NVIDIA kernel module is not loaded: `sudo modprobe nvidia`, or check the driver install";
    case 4:  // NVML_ERROR_NO_PERMISSION
      return "no permission to open /dev/nvidia*: add the user to the video group or fix device permissions";
    case 12:  // NVML_ERROR_LIBRARY_NOT_FOUND
      return "NVML could not find the driver's libraries: reinstall the driver";
    default: return "see `nvidia-smi` and `dmesg`";
  }
}

}  // namespace vt::doctor

namespace vt::doctor {

std::string driver_branch_for(int v) {
  // From the CUDA toolkit release notes (minimum driver per release, Linux x86_64).
  static const int table[][2] = {
      {11000, 450}, {11010, 455}, {11020, 460}, {11030, 465}, {11040, 470}, {11050, 495}, {11060, 510},
      {11070, 515}, {11080, 520}, {12000, 525}, {12010, 530}, {12020, 535}, {12030, 545}, {12040, 550},
      {12050, 555}, {12060, 560}, {12080, 570}, {12090, 575}, {13000, 580},
  };
  int branch = 0;
  for (const auto& row : table)
    if (row[0] <= v) branch = row[1];
  if (v > 13000 && cuda_major(v) > 13) return {};
  return branch ? "R" + std::to_string(branch) : std::string();
}

}  // namespace vt::doctor
