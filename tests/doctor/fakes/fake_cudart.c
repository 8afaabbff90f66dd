/* A stand-in libcudart: cudaRuntimeGetVersion answers FAKE_CUDART_VERSION (set per build in
 * CMakeLists.txt), which is all the doctor asks a runtime. */
int cudaRuntimeGetVersion(int *version) {
  *version = FAKE_CUDART_VERSION;
  return 0;
}
