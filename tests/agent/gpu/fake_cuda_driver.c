/* A stand-in libcuda for CudaDeviceQuery and Hello.gpus tests: the driver
 * calls the query makes, answering for two devices as an H100 host would.
 * Nothing else of CUDA is here. */
#include <stddef.h>
#include <string.h>

int cuInit(unsigned int flags) { return flags == 0 ? 0 : 1; }

int cuDeviceGetCount(int* count) {
  *count = 2;
  return 0;
}

int cuDeviceGet(int* device, int ordinal) {
  *device = 100 + ordinal;
  return 0;
}

int cuDeviceGetName(char* name, int length, int device) {
  const char* text = device == 100 ? "NVIDIA H100 80GB HBM3" : "NVIDIA L4";
  strncpy(name, text, (size_t)length);
  name[length - 1] = '\0';
  return 0;
}

int cuDeviceTotalMem_v2(size_t* bytes, int device) {
  *bytes = device == 100 ? (size_t)85520809984ull : (size_t)23580639232ull;
  return 0;
}

int cuDeviceGetAttribute(int* value, int attribute, int device) {
  switch (attribute) {
    case 16: /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
      *value = device == 100 ? 132 : 58;
      return 0;
    case 75: /* COMPUTE_CAPABILITY_MAJOR */
      *value = device == 100 ? 9 : 8;
      return 0;
    case 76: /* COMPUTE_CAPABILITY_MINOR */
      *value = device == 100 ? 0 : 9;
      return 0;
    default:
      return 1; /* CUDA_ERROR_INVALID_VALUE */
  }
}
