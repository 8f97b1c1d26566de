/*
 * log_callbacks: the driver's log callbacks and async notification
 * registrations.
 *
 * A function registered with cuLogsRegisterCallback gets the message of a
 * failing call the driver logs (a module image in no known format), with
 * its user data and a non-empty message; it may arrive after the call
 * returns (through vgpu it comes from the worker's driver), so the program
 * waits up to a second. Once unregistered it gets nothing more; two
 * registered functions both get the message. cuDeviceRegisterAsyncNotification
 * registers and unregisters a function (no notification is provoked). A
 * NULL function, an unknown device, and (where invalid_handle_checks() allows
 * it) unregistering a handle twice or a NULL one get the driver's codes,
 * printed by name.
 *
 * It prints no log text and no counts of messages (they hold times and
 * thread ids, and a driver may log one failure in several lines); the first
 * message's level is printed.
 *
 * With --blocked (only where callbacks run on a thread of their own, as
 * through vgpu: a driver that calls them inside the failing call would
 * wait forever) a log function blocks until thousands of failing calls
 * have returned: the calls must not wait for it.
 *
 * Build:  cc -std=c11 -O2 -Wall -pthread -o log_callbacks log_callbacks.c -ldl
 * Usage:  log_callbacks [LIBRARY] [--blocked]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME`, `ok NAME: CODE` or `FAIL NAME: ...`,
 *         then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

typedef void *CUlogsCallbackHandle;
typedef void (*CUlogsCallback)(void *data, unsigned int level, char *message, size_t length);
typedef void *CUasyncCallbackHandle;
typedef void (*CUasyncCallback)(void *info, void *userData, CUasyncCallbackHandle callback);

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*LogsRegisterCallback)(CUlogsCallback, void *, CUlogsCallbackHandle *);
    CUresult (*LogsUnregisterCallback)(CUlogsCallbackHandle);
    CUresult (*DeviceRegisterAsyncNotification)(CUdevice, CUasyncCallback, void *,
                                                CUasyncCallbackHandle *);
    CUresult (*DeviceUnregisterAsyncNotification)(CUdevice, CUasyncCallbackHandle);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(ModuleLoadData, "cuModuleLoadData"),
    ENTRY(LogsRegisterCallback, "cuLogsRegisterCallback"),
    ENTRY(LogsUnregisterCallback, "cuLogsUnregisterCallback"),
    ENTRY(DeviceRegisterAsyncNotification, "cuDeviceRegisterAsyncNotification"),
    ENTRY(DeviceUnregisterAsyncNotification, "cuDeviceUnregisterAsyncNotification"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* What one registered log function saw. */
struct seen {
    atomic_int messages;
    atomic_int empty; /* messages with no text */
    atomic_int first_level;
};

static struct seen a = {.first_level = -1}, b = {.first_level = -1};
/* Calls with a user data this program never registered. */
static atomic_int wrong_data;

static void on_log(void *data, unsigned int level, char *message, size_t length)
{
    struct seen *s = data;
    if (s != &a && s != &b) {
        atomic_fetch_add(&wrong_data, 1);
        return;
    }
    if (message == NULL || length == 0 || message[0] == '\0')
        atomic_fetch_add(&s->empty, 1);
    int none = -1;
    atomic_compare_exchange_strong(&s->first_level, &none, (int)level);
    atomic_fetch_add(&s->messages, 1);
}

static void on_notification(void *info, void *userData, CUasyncCallbackHandle callback)
{
    (void)info;
    (void)userData;
    (void)callback;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Waits up to a second for `s` to have seen more than `than` messages. */
static int wait_for_message(struct seen *s, int than)
{
    for (int i = 0; i < 100; i++) {
        if (atomic_load(&s->messages) > than)
            return 1;
        sleep_ms(10);
    }
    return atomic_load(&s->messages) > than;
}

/* A call that fails and that the driver logs. */
static void failing_call(void)
{
    CUmodule mod;
    cu.ModuleLoadData(&mod, "not a module image");
}

/* The blocked log function: waits until `released`. */
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t opened = PTHREAD_COND_INITIALIZER;
static int released;
static atomic_int blocked_messages;

static void on_log_blocked(void *data, unsigned int level, char *message, size_t length)
{
    (void)data;
    (void)level;
    (void)message;
    (void)length;
    pthread_mutex_lock(&gate);
    while (!released)
        pthread_cond_wait(&opened, &gate);
    pthread_mutex_unlock(&gate);
    atomic_fetch_add(&blocked_messages, 1);
}

/* Thousands of logged failures while the log function blocks: more than the
 * socket and a bounded queue hold, so a worker that waited for the client
 * would stall them. */
static void blocked_callback(void)
{
    enum { CALLS = 5000 };
    CUlogsCallbackHandle h = NULL;
    if (!EXPECT("blocked_register", cu.LogsRegisterCallback(on_log_blocked, NULL, &h),
                CUDA_SUCCESS))
        return;
    for (int i = 0; i < CALLS; i++)
        failing_call();
    expect_true("blocked_calls_returned", 1, "");
    pthread_mutex_lock(&gate);
    released = 1;
    pthread_cond_broadcast(&opened);
    pthread_mutex_unlock(&gate);
    int settled = -1;
    for (int i = 0; i < 100 && settled != atomic_load(&blocked_messages); i++) {
        settled = atomic_load(&blocked_messages);
        sleep_ms(20);
    }
    expect_true("blocked_ran", atomic_load(&blocked_messages) > 0, "the function never ran");
    expect_true("blocked_at_most_once_each", atomic_load(&blocked_messages) <= CALLS * 4,
                "more messages than failures could log");
    EXPECT("blocked_unregister", cu.LogsUnregisterCallback(h), CUDA_SUCCESS);
}

/* Records a call whose exact code is printed for comparison. */
static void print_code(const char *name, CUresult r)
{
    checks++;
    printf("ok %s: %s\n", name, error_name(cu.GetErrorName, r));
}

int main(int argc, char **argv)
{
    int blocked = argc > 2 && strcmp(argv[2], "--blocked") == 0;
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS))
        return checks_summary();
    if (blocked) {
        blocked_callback();
        return checks_summary();
    }

    /* One function gets the failure's message. */
    CUlogsCallbackHandle ha = NULL, hb = NULL;
    if (!EXPECT("log_register", cu.LogsRegisterCallback(on_log, &a, &ha), CUDA_SUCCESS))
        return checks_summary();
    expect_true("log_handle", ha != NULL, "NULL handle");
    failing_call();
    expect_true("log_arrived", wait_for_message(&a, 0), "no message within a second");
    expect_true("log_not_empty", atomic_load(&a.empty) == 0, "an empty message");
    expect_true("log_user_data", atomic_load(&wrong_data) == 0, "another user data");
    printf("log callback got message(s) at level %d\n", atomic_load(&a.first_level));

    /* Unregistered, it gets nothing more. */
    sleep_ms(100); /* any further line of the same failure */
    EXPECT("log_unregister", cu.LogsUnregisterCallback(ha), CUDA_SUCCESS);
    int before = atomic_load(&a.messages);
    failing_call();
    sleep_ms(300);
    expect_true("log_none_after_unregister", atomic_load(&a.messages) == before,
                "a message after unregistering");

    /* Two functions both get it. */
    atomic_store(&a.messages, 0);
    EXPECT("log_register_a", cu.LogsRegisterCallback(on_log, &a, &ha), CUDA_SUCCESS);
    EXPECT("log_register_b", cu.LogsRegisterCallback(on_log, &b, &hb), CUDA_SUCCESS);
    expect_true("log_handles_differ", ha != hb, "the same handle twice");
    failing_call();
    expect_true("log_both_a", wait_for_message(&a, 0), "the first got no message");
    expect_true("log_both_b", wait_for_message(&b, 0), "the second got no message");
    expect_true("log_both_user_data", atomic_load(&wrong_data) == 0, "another user data");
    EXPECT("log_unregister_a", cu.LogsUnregisterCallback(ha), CUDA_SUCCESS);
    EXPECT("log_unregister_b", cu.LogsUnregisterCallback(hb), CUDA_SUCCESS);

    /* A handle pointer is optional. */
    EXPECT("log_register_no_out", cu.LogsRegisterCallback(on_log, &a, NULL), CUDA_SUCCESS);

    /* Bad input. */
    CUlogsCallbackHandle hn = NULL;
    print_code("log_register_null", cu.LogsRegisterCallback(NULL, &a, &hn));

    /* Async notifications: register and unregister (none is provoked). */
    CUasyncCallbackHandle hn1 = NULL;
    CUresult r = cu.DeviceRegisterAsyncNotification(dev, on_notification, &a, &hn1);
    print_code("notify_register", r);
    if (r == CUDA_SUCCESS) {
        expect_true("notify_handle", hn1 != NULL, "NULL handle");
        EXPECT("notify_unregister", cu.DeviceUnregisterAsyncNotification(dev, hn1),
               CUDA_SUCCESS);
    }
    CUasyncCallbackHandle hn2 = NULL;
    print_code("notify_register_null",
               cu.DeviceRegisterAsyncNotification(dev, NULL, &a, &hn2));
    print_code("notify_register_bad_device",
               cu.DeviceRegisterAsyncNotification(9999, on_notification, &a, &hn2));

    if (invalid_handle_checks()) {
        /* Taken-back and forged handles: the driver would read freed memory. */
        print_code("log_unregister_twice", cu.LogsUnregisterCallback(ha));
        print_code("log_unregister_null", cu.LogsUnregisterCallback(NULL));
        print_code("log_unregister_unknown",
                   cu.LogsUnregisterCallback((CUlogsCallbackHandle)(uintptr_t)0x7777000));
        if (r == CUDA_SUCCESS)
            print_code("notify_unregister_twice", cu.DeviceUnregisterAsyncNotification(dev, hn1));
        print_code("notify_unregister_unknown",
                   cu.DeviceUnregisterAsyncNotification(
                       dev, (CUasyncCallbackHandle)(uintptr_t)0x7777000));
        print_code("notify_register_no_out",
                   cu.DeviceRegisterAsyncNotification(dev, on_notification, &a, NULL));
    }
    return checks_summary();
}
