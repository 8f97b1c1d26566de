/* A stand-in for the host's libnvidia-ml.so.1, for the tests of the values
 * the worker passes through from the host's NVML (CI has no GPU, so no NVML).
 * Every value is derived from the arguments, so a test sees that each
 * argument arrived: a clock of type T is 1000 + T MHz, a temperature of
 * sensor S is 40 + S degrees, the ECC count of (type X, counter Y) is
 * 10 * X + Y, an inforom object O's version is "inforom-O", field F's
 * value is 2 * F (an unsigned long long; field 0 fails). Its device
 * has 32 GiB, twice the simulated device's default.
 *
 *   cc -shared -fPIC -o libnvidia-ml.so.1 host_nvml.c
 */
#include <stdio.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;

#define OK 0
#define INVALID_ARGUMENT 2
#define NOT_FOUND 6
#define INSUFFICIENT_SIZE 7

static int device_marker;

static nvmlReturn_t put(char *buf, unsigned int len, const char *text) {
    if (strlen(text) + 1 > len) return INSUFFICIENT_SIZE;
    strcpy(buf, text);
    return OK;
}

nvmlReturn_t nvmlInit_v2(void) { return OK; }

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev) {
    if (strncmp(uuid, "GPU-", 4) != 0) return NOT_FOUND;
    *dev = &device_marker;
    return OK;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int len) {
    return put(buf, len, "580.0-host-stand-in");
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, unsigned int sensor, unsigned int *t) {
    if (dev != &device_marker) return INVALID_ARGUMENT;
    *t = 40 + sensor;
    return OK;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, unsigned int type, unsigned int *mhz) {
    if (dev != &device_marker) return INVALID_ARGUMENT;
    if (type > 3) return INVALID_ARGUMENT;
    *mhz = 1000 + type;
    return OK;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, unsigned int *rates) {
    (void)dev;
    rates[0] = 7;
    rates[1] = 3;
    return OK;
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t dev, unsigned int *current, unsigned int *pending) {
    (void)dev;
    *current = 1;
    *pending = 0;
    return OK;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, unsigned int type, unsigned int counter,
                                         unsigned long long *count) {
    (void)dev;
    *count = 10ull * type + counter;
    return OK;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *r) {
    (void)dev;
    *r = 0x100000000ull;
    return OK;
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t dev, char *buf, unsigned int len) {
    (void)dev;
    return put(buf, len, "1650000000001");
}

nvmlReturn_t nvmlDeviceGetInforomVersion(nvmlDevice_t dev, unsigned int object, char *buf,
                                         unsigned int len) {
    char text[32];
    (void)dev;
    snprintf(text, sizeof text, "inforom-%u", object);
    return put(buf, len, text);
}

/* nvmlFieldValue_t, 40 bytes. */
typedef struct {
    unsigned int fieldId, scopeId;
    long long timestamp, latencyUsec;
    unsigned int valueType;
    nvmlReturn_t nvmlReturn;
    unsigned long long value;
} field_value;

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t dev, int count, field_value *values) {
    (void)dev;
    for (int i = 0; i < count; i++) {
        values[i].timestamp = 1;
        values[i].valueType = 3; /* NVML_VALUE_TYPE_UNSIGNED_LONG_LONG */
        values[i].nvmlReturn = values[i].fieldId == 0 ? INVALID_ARGUMENT : OK;
        values[i].value = 2ull * values[i].fieldId;
    }
    return OK;
}

/* nvmlMarginTemperature_v1_t: the version must be NVML_STRUCT_VERSION(.., 1). */
nvmlReturn_t nvmlDeviceGetMarginTemperature(nvmlDevice_t dev, unsigned int *margin) {
    (void)dev;
    if (margin[0] != (8u | (1u << 24))) return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
    margin[1] = 17;
    return OK;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, unsigned long long *memory) {
    (void)dev;
    memory[0] = 1ull << 35;
    memory[1] = 1ull << 35;
    memory[2] = 0;
    return OK;
}

nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t dev, unsigned long long *bar1) {
    (void)dev;
    bar1[0] = 1ull << 34;
    bar1[1] = (1ull << 34) - 4096;
    bar1[2] = 4096;
    return OK;
}
