/*
 * log_callbacks: the driver's log callbacks and async notification
 * registrations.
 *
 * A function registered with cuLogsRegisterCallback gets the message of a
 * failing call the driver logs (a module image in no known format), with
 * its user data and a non-empty message. Driver 580 runs it inside the
 * failing call, on the calling thread, so the message has arrived when the
 * call returns: the program checks at once, without waiting. Once
 * unregistered it gets nothing more; two registered functions both get the
 * message. cuDeviceRegisterAsyncNotification registers and unregisters a
 * function (no notification is provoked). A NULL function, an unknown
 * device, and (where invalid_handle_checks() allows it) unregistering a
 * handle twice or a NULL one get the driver's codes, printed by name.
 *
 * It prints no log text and no counts of messages (they hold times and
 * thread ids, and a driver may log one failure in several lines); the first
 * message's level is printed.
 *
 * With --blocked a log function blocks on one thread's failing call: that
 * call must not return until the function does (as the driver runs it
 * inside the call), while thousands of failing calls on another thread
 * return meanwhile, each with its message.
 *
 * With --host-func a message arrives while a host function (cuLaunchHostFunc
 * from another thread) runs and waits for the failing call to return; it
 * gives up after five seconds. Only where host functions run on a thread of
 * the driver's (a GPU): the simulated device runs them inside
 * cuLaunchHostFunc, and through vgpu every later call then waits for it.
 *
 * With --reenter a log function calls cuCtxGetDevice inside the failing
 * call and the code it got is printed.
 *
 * Build:  cc -std=c11 -O2 -Wall -pthread -o log_callbacks log_callbacks.c -ldl
 * Usage:  log_callbacks [LIBRARY] [--blocked | --host-func | --reenter]
 *         (default library: libcuda.so.1)
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
    CUresult (*CtxSynchronize)(void);
    CUresult (*CtxGetDevice)(CUdevice *);
    CUresult (*LaunchHostFunc)(CUstream, void (*)(void *), void *);
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
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(CtxGetDevice, "cuCtxGetDevice"),
    ENTRY(LaunchHostFunc, "cuLaunchHostFunc"),
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

/* Waits up to five seconds for `flag` to be set; whether it is. */
static int wait_for(atomic_int *flag)
{
    for (int i = 0; i < 500 && !atomic_load(flag); i++)
        sleep_ms(10);
    return atomic_load(flag);
}

/* A call that fails and that the driver logs. */
static void failing_call(void)
{
    CUmodule mod;
    cu.ModuleLoadData(&mod, "not a module image");
}

/* A host function that runs until `host_release` (five seconds at most). */
static atomic_int host_started, host_release, host_saw_release;

static void host_wait(void *data)
{
    (void)data;
    atomic_store(&host_started, 1);
    wait_for(&host_release);
    atomic_store(&host_saw_release, atomic_load(&host_release));
}

/* Launches host_wait on the NULL stream from a thread of its own and waits
 * for it. */
static void *host_launcher(void *ctx)
{
    CUresult r = cu.CtxSetCurrent(ctx);
    if (r == CUDA_SUCCESS)
        r = cu.LaunchHostFunc(NULL, host_wait, NULL);
    if (r == CUDA_SUCCESS)
        r = cu.CtxSynchronize();
    return (void *)(intptr_t)r;
}

/* The blocked log function: on a thread marked `blocking`, waits until
 * `released`; elsewhere counts the message. */
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t opened = PTHREAD_COND_INITIALIZER;
static int released;
static _Thread_local int blocking;
static atomic_int blocked_entered, blocked_returned, other_messages;

static void on_log_blocked(void *data, unsigned int level, char *message, size_t length)
{
    (void)data;
    (void)level;
    (void)message;
    (void)length;
    if (!blocking) {
        atomic_fetch_add(&other_messages, 1);
        return;
    }
    atomic_store(&blocked_entered, 1);
    pthread_mutex_lock(&gate);
    while (!released)
        pthread_cond_wait(&opened, &gate);
    pthread_mutex_unlock(&gate);
}

/* --host-func: a message arrives while a host function, launched from
 * another thread, runs and waits for the failing call to return. */
static void during_host_func(CUcontext ctx)
{
    CUlogsCallbackHandle h = NULL;
    if (!EXPECT("host_log_register", cu.LogsRegisterCallback(on_log, &a, &h), CUDA_SUCCESS))
        return;
    pthread_t host;
    if (pthread_create(&host, NULL, host_launcher, ctx) != 0) {
        expect_true("host_thread", 0, "pthread_create failed");
        return;
    }
    expect_true("host_func_running", wait_for(&host_started), "it never started");
    failing_call();
    expect_true("log_during_host_func", atomic_load(&a.messages) > 0,
                "no message when the failing call returned");
    atomic_store(&host_release, 1);
    void *launched;
    pthread_join(host, &launched);
    EXPECT("host_func_done", (CUresult)(intptr_t)launched, CUDA_SUCCESS);
    expect_true("host_func_released", atomic_load(&host_saw_release),
                "it timed out: the failing call waited for it");
    EXPECT("host_log_unregister", cu.LogsUnregisterCallback(h), CUDA_SUCCESS);
}

/* --reenter: what a CUDA call from inside a log function returns. */
static atomic_int reentered = -1;

static void on_log_reenter(void *data, unsigned int level, char *message, size_t length)
{
    (void)data;
    (void)level;
    (void)message;
    (void)length;
    CUdevice d;
    int none = -1;
    atomic_compare_exchange_strong(&reentered, &none, (int)cu.CtxGetDevice(&d));
}

static void reenter(void)
{
    CUlogsCallbackHandle h = NULL;
    if (!EXPECT("reenter_register", cu.LogsRegisterCallback(on_log_reenter, NULL, &h),
                CUDA_SUCCESS))
        return;
    failing_call();
    int r = atomic_load(&reentered);
    expect_true("reenter_ran", r != -1, "the function did not run inside the call");
    if (r != -1) {
        checks++;
        printf("ok reenter_call: %s\n", error_name(cu.GetErrorName, (CUresult)r));
    }
    EXPECT("reenter_unregister", cu.LogsUnregisterCallback(h), CUDA_SUCCESS);
}

/* A failing call on a thread whose log function blocks. */
static void *blocked_caller(void *ctx)
{
    blocking = 1;
    if (cu.CtxSetCurrent(ctx) == CUDA_SUCCESS)
        failing_call();
    atomic_store(&blocked_returned, 1);
    return NULL;
}

/* The failing call waits for its blocked log function, as the driver runs
 * it inside the call; failing calls on another thread return meanwhile,
 * each with its message (through vgpu: the worker's other lanes are not
 * held up by a client function that blocks). */
static void blocked_callback(CUcontext ctx)
{
    enum { CALLS = 2000 };
    CUlogsCallbackHandle h = NULL;
    if (!EXPECT("blocked_register", cu.LogsRegisterCallback(on_log_blocked, NULL, &h),
                CUDA_SUCCESS))
        return;
    pthread_t t;
    if (pthread_create(&t, NULL, blocked_caller, ctx) != 0) {
        expect_true("blocked_thread", 0, "pthread_create failed");
        return;
    }
    expect_true("blocked_entered", wait_for(&blocked_entered),
                "the function did not run on the failing call's thread");
    sleep_ms(200);
    expect_true("blocked_call_waits", !atomic_load(&blocked_returned),
                "the failing call returned while its log function blocked");
    int each = 1;
    for (int i = 0; i < CALLS; i++) {
        int before = atomic_load(&other_messages);
        failing_call();
        if (atomic_load(&other_messages) == before)
            each = 0;
    }
    expect_true("blocked_others_returned", !atomic_load(&blocked_returned),
                "the blocked call returned early");
    expect_true("blocked_others_logged", each, "a call returned before its message");
    pthread_mutex_lock(&gate);
    released = 1;
    pthread_cond_broadcast(&opened);
    pthread_mutex_unlock(&gate);
    pthread_join(t, NULL);
    expect_true("blocked_call_returned", atomic_load(&blocked_returned), "");
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
    const char *mode = argc > 2 ? argv[2] : "";
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS))
        return checks_summary();
    if (strcmp(mode, "--blocked") == 0) {
        blocked_callback(ctx);
        return checks_summary();
    }
    if (strcmp(mode, "--host-func") == 0) {
        during_host_func(ctx);
        return checks_summary();
    }
    if (strcmp(mode, "--reenter") == 0) {
        reenter();
        return checks_summary();
    }

    /* One function gets the failure's message. */
    CUlogsCallbackHandle ha = NULL, hb = NULL;
    if (!EXPECT("log_register", cu.LogsRegisterCallback(on_log, &a, &ha), CUDA_SUCCESS))
        return checks_summary();
    expect_true("log_handle", ha != NULL, "NULL handle");
    failing_call();
    /* Checked at once: the message arrives inside the failing call. */
    expect_true("log_arrived", atomic_load(&a.messages) > 0,
                "no message when the failing call returned");
    expect_true("log_not_empty", atomic_load(&a.empty) == 0, "an empty message");
    expect_true("log_user_data", atomic_load(&wrong_data) == 0, "another user data");
    printf("log callback got message(s) at level %d\n", atomic_load(&a.first_level));

    /* Unregistered, it gets nothing more. */
    EXPECT("log_unregister", cu.LogsUnregisterCallback(ha), CUDA_SUCCESS);
    int before = atomic_load(&a.messages);
    failing_call();
    sleep_ms(100); /* a message that would come late */
    expect_true("log_none_after_unregister", atomic_load(&a.messages) == before,
                "a message after unregistering");

    /* Two functions both get it. */
    atomic_store(&a.messages, 0);
    EXPECT("log_register_a", cu.LogsRegisterCallback(on_log, &a, &ha), CUDA_SUCCESS);
    EXPECT("log_register_b", cu.LogsRegisterCallback(on_log, &b, &hb), CUDA_SUCCESS);
    expect_true("log_handles_differ", ha != hb, "the same handle twice");
    failing_call();
    expect_true("log_both_a", atomic_load(&a.messages) > 0, "the first got no message");
    expect_true("log_both_b", atomic_load(&b.messages) > 0, "the second got no message");
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
