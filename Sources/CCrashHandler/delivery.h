// Crash-time delivery: once the raw report is complete, the handler starts a helper prepared at
// install time (`blackbox deliver-crash`) and waits for it within a deadline, so that a report
// reaches the collector even when the process's files will not be there at the next launch (an
// ephemeral container). See docs/crash-capture.md, "Delivery at crash time".
#ifndef BLACKBOX_DELIVERY_H
#define BLACKBOX_DELIVERY_H

#include <stdint.h>

typedef enum bbx_delivery_outcome {
    BBX_DELIVERY_OFF,
    /// The helper exited 0: the collector stored the report (and the helper deleted it).
    BBX_DELIVERY_DELIVERED,
    /// The helper exited with another status or was killed; `bbx_delivery_status` says how.
    BBX_DELIVERY_FAILED,
    /// The helper was still running at the deadline and was killed.
    BBX_DELIVERY_TIMED_OUT,
    /// The helper could not be started (clone failed).
    BBX_DELIVERY_NOT_STARTED,
    /// Somebody else reaped the helper (an app's own SIGCHLD handling): how it ended is unknown.
    BBX_DELIVERY_UNKNOWN,
} bbx_delivery_outcome;

/// Starts the helper with `<report directory>/<report_name>` as its last argument and waits for it.
/// Async-signal-safe: clone, execve, wait4, kill, nanosleep and clock_gettime only.
bbx_delivery_outcome bbx_delivery_run(const char *report_name, int *status);

/// The configured deadline in milliseconds (0 when delivery is off).
uint32_t bbx_delivery_deadline_ms(void);

#endif
