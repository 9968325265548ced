/* nvml_api.h — our own declarations of the part of NVIDIA's NVML ABI that fjord-push uses.
 * Debian main ships no nvml.h, so the types, constants and signatures are written here from NVML's
 * documented ABI (these layouts have been stable since the _v2/_v3 entry points appeared). Both the
 * loader (nvml.c) and the test stand-in (fake_nvml/fake_nvml.c) use this one file, so the two
 * cannot drift apart. */
#ifndef FJ_PUSH_NVML_API_H
#define FJ_PUSH_NVML_API_H

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999
};

typedef struct nvmlDevice_st *nvmlDevice_t;

enum { NVML_TEMPERATURE_GPU = 0 };
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum {
    NVML_COMPUTEMODE_DEFAULT = 0,
    NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
    NVML_COMPUTEMODE_PROHIBITED = 2,
    NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3
};
enum { NVML_PSTATE_UNKNOWN = 32 };

#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16

typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "00000000:3B:00.0" */
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
    unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;

typedef struct nvmlUtilization_st {
    unsigned int gpu, memory; /* percent */
} nvmlUtilization_t;

/* The _v2/_v3 process-list entry. */
typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes; (unsigned long long)-1 when not available */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/* Per-process utilisation, nvmlDeviceGetProcessUtilization's entry. Both utilisation calls share one
 * protocol: a NULL buffer (or one too small) gets NVML_ERROR_INSUFFICIENT_SIZE and the count to
 * allocate, which may be far more than the samples then written (72 against 1 on an H100, driver
 * 580); only samples newer than lastSeenTimeStamp are written, and NVML_ERROR_NOT_FOUND means none
 * is. timeStamp is CPU time (CLOCK_REALTIME) in microseconds; the percentages are of the whole card. */
typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp; /* microseconds */
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

/* nvmlDeviceGetProcessesUtilizationInfo's entry (drivers from 550 on): the same figures and the
 * JPEG and optical-flow engines, in a versioned container. */
typedef struct nvmlProcessUtilizationInfo_v1_st {
    unsigned long long timeStamp; /* microseconds */
    unsigned int pid;
    unsigned int smUtil, memUtil, encUtil, decUtil, jpgUtil, ofaUtil;
} nvmlProcessUtilizationInfo_v1_t;

typedef struct nvmlProcessesUtilizationInfo_v1_st {
    unsigned int version;             /* nvmlProcessesUtilizationInfo_v1 */
    unsigned int processSamplesCount; /* in: entries in procUtilArray; out: needed or written */
    unsigned long long lastSeenTimeStamp;
    nvmlProcessUtilizationInfo_v1_t *procUtilArray;
} nvmlProcessesUtilizationInfo_t;

/* NVML_STRUCT_VERSION(ProcessesUtilizationInfo, 1): the container's size, version 1 in the top byte. */
#define nvmlProcessesUtilizationInfo_v1 ((unsigned int)(sizeof(nvmlProcessesUtilizationInfo_t) | (1u << 24)))

/* Every entry point we call, as X(return, name, parameters). The loader resolves each by name. */
#define FJ_NVML_FUNCS(X)                                                                                       \
    X(nvmlReturn_t, nvmlInit_v2, (void))                                                                     \
    X(nvmlReturn_t, nvmlShutdown, (void))                                                                    \
    X(const char *, nvmlErrorString, (nvmlReturn_t r))                                                       \
    X(nvmlReturn_t, nvmlSystemGetDriverVersion, (char *version, unsigned int length))                        \
    X(nvmlReturn_t, nvmlSystemGetCudaDriverVersion_v2, (int *version))                                       \
    X(nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int *count))                                            \
    X(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *device))               \
    X(nvmlReturn_t, nvmlDeviceGetUUID, (nvmlDevice_t d, char *uuid, unsigned int length))                    \
    X(nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t d, char *name, unsigned int length))                    \
    X(nvmlReturn_t, nvmlDeviceGetPciInfo_v3, (nvmlDevice_t d, nvmlPciInfo_t *pci))                           \
    X(nvmlReturn_t, nvmlDeviceGetArchitecture, (nvmlDevice_t d, unsigned int *arch))                         \
    X(nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t d, nvmlMemory_t *mem))                            \
    X(nvmlReturn_t, nvmlDeviceGetPowerManagementLimit, (nvmlDevice_t d, unsigned int *mw))                   \
    X(nvmlReturn_t, nvmlDeviceGetPowerManagementLimitConstraints,                                             \
      (nvmlDevice_t d, unsigned int *min_mw, unsigned int *max_mw))                                          \
    X(nvmlReturn_t, nvmlDeviceGetMaxClockInfo, (nvmlDevice_t d, int type, unsigned int *mhz))               \
    X(nvmlReturn_t, nvmlDeviceGetClockInfo, (nvmlDevice_t d, int type, unsigned int *mhz))                  \
    X(nvmlReturn_t, nvmlDeviceGetFanSpeed, (nvmlDevice_t d, unsigned int *percent))                          \
    X(nvmlReturn_t, nvmlDeviceGetComputeMode, (nvmlDevice_t d, int *mode))                                  \
    X(nvmlReturn_t, nvmlDeviceGetPerformanceState, (nvmlDevice_t d, int *pstate))                           \
    X(nvmlReturn_t, nvmlDeviceGetUtilizationRates, (nvmlDevice_t d, nvmlUtilization_t *u))                   \
    X(nvmlReturn_t, nvmlDeviceGetTemperature, (nvmlDevice_t d, int sensor, unsigned int *celsius))           \
    X(nvmlReturn_t, nvmlDeviceGetPowerUsage, (nvmlDevice_t d, unsigned int *mw))                             \
    X(nvmlReturn_t, nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t d, unsigned long long *mj))           \
    X(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v3,                                                  \
      (nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *infos))                                       \
    X(nvmlReturn_t, nvmlDeviceGetGraphicsRunningProcesses_v3,                                                 \
      (nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *infos))                                       \
    X(nvmlReturn_t, nvmlDeviceGetProcessUtilization,                                                          \
      (nvmlDevice_t d, nvmlProcessUtilizationSample_t *s, unsigned int *count, unsigned long long since_us))  \
    X(nvmlReturn_t, nvmlDeviceGetProcessesUtilizationInfo, (nvmlDevice_t d, nvmlProcessesUtilizationInfo_t *info))

#endif
