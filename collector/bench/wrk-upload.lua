-- wrk script for `make bench-collector`: each request uploads the next of a set of distinct,
-- pre-built bundles (so none is a duplicate) with its own Upload-Id; counts 201 Created.
--
-- Environment: BENCH_KEY (ingest key), BENCH_BODIES (a directory of 0.zip, 1.zip, ...),
-- BENCH_COUNT (how many), BENCH_RUN_ID (8 hex digits, distinct per run: Upload-Ids must be new),
-- and optionally BENCH_RATE (uploads per second).
-- BENCH_PROTOCOL=sentry sends BENCH_BODIES' 0.envelope.gz, ... to /api/1/envelope/ instead, as a
-- Sentry SDK does (X-Sentry-Auth, gzip), and counts 200 OK; BENCH_PROTOCOL=otlp sends 0.otlp.gz, ...
-- to /v1/logs as an OpenTelemetry exporter does (protobuf, gzip, a Bearer key), and counts 200 OK.
--
-- Without BENCH_RATE: closed loop, each connection sends its next upload when the previous one is
-- answered; latency is wrk's own (send to answer).
-- With BENCH_RATE: open loop, upload k is due at k / rate seconds after the start whatever happened
-- before, and its latency counts from when it was due (as wrk2 does), so a stall is not hidden by
-- connections that waited for it. Connections claim due times in order in delay(); the k-th request
-- sent is the k-th due; answers are matched to requests by the Upload-Id echoed in the body.
--
-- Run with one wrk thread (-t1). Prints one JSON line: requests, created, answered, socket errors,
-- seconds, and p50/p99 latency in ms.

local ffi = require("ffi")
ffi.cdef [[
    typedef struct { long tv_sec; long tv_nsec; } blackbox_timespec;
    int clock_gettime(int clock, blackbox_timespec *time);
]]
local timespec = ffi.new("blackbox_timespec")
local function now_ms()
    ffi.C.clock_gettime(1, timespec) -- CLOCK_MONOTONIC
    return tonumber(timespec.tv_sec) * 1000 + tonumber(timespec.tv_nsec) / 1e6
end

local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

function init(args)
    key = os.getenv("BENCH_KEY")
    run_id = os.getenv("BENCH_RUN_ID")
    local directory = os.getenv("BENCH_BODIES")
    local count = tonumber(os.getenv("BENCH_COUNT"))
    rate = tonumber(os.getenv("BENCH_RATE") or "")
    sentry = os.getenv("BENCH_PROTOCOL") == "sentry"
    otlp = os.getenv("BENCH_PROTOCOL") == "otlp"
    success = (sentry or otlp) and 200 or 201
    -- Every request is formatted here, once: building a multi-megabyte request string per call
    -- made wrk allocate (and the kernel zero) fresh memory for each, which cost more than sending it.
    requests = {}
    for index = 0, count - 1 do
        if otlp then
            local file = assert(io.open(directory .. "/" .. index .. ".otlp.gz", "rb"))
            table.insert(requests, wrk.format("POST", "/v1/logs", {
                ["Authorization"] = "Bearer " .. key,
                ["Content-Type"] = "application/x-protobuf",
                ["Content-Encoding"] = "gzip",
            }, file:read("*a")))
            file:close()
        elseif sentry then
            local file = assert(io.open(directory .. "/" .. index .. ".envelope.gz", "rb"))
            table.insert(requests, wrk.format("POST", "/api/1/envelope/", {
                ["X-Sentry-Auth"] = "Sentry sentry_key=" .. key .. ", sentry_version=7, sentry_client=sentry.python/2.75.0",
                ["Content-Type"] = "application/x-sentry-envelope",
                ["Content-Encoding"] = "gzip",
            }, file:read("*a")))
            file:close()
        else
            local file = assert(io.open(directory .. "/" .. index .. ".zip", "rb"))
            -- A version 4 UUID: the run's id, then the request's number.
            local upload_id = string.format("%s-0000-4000-8000-%012x", run_id, index + 1)
            table.insert(requests, wrk.format("POST", "/api/v1/bundles", {
                ["Authorization"] = "Bearer " .. key,
                ["Upload-Id"] = upload_id,
                ["Content-Type"] = "application/zip",
            }, file:read("*a")))
            file:close()
        end
    end
    sent = 0
    claimed = 0
    created = 0
    answered = 0
    latencies = {}
    started = now_ms()
end

local function due_ms(k)
    return started + (k - 1) * 1000 / rate
end

if os.getenv("BENCH_RATE") then
    function delay()
        claimed = claimed + 1
        -- wrk takes whole milliseconds: rounding up sends late rather than early, which can only
        -- make the measured latency worse.
        return math.max(0, math.ceil(due_ms(claimed) - now_ms()))
    end
end

function request()
    sent = sent + 1
    if sent > #requests then
        wrk.thread:stop()
        sent = #requests
    end
    return requests[sent]
end

function response(status, headers, body)
    answered = answered + 1
    if status == success then created = created + 1 end
    if rate then
        local k = tonumber(string.match(body, '"uploadID"%s*:%s*"%x+%-0000%-4000%-8000%-(%x+)"') or "", 16)
        if k then table.insert(latencies, now_ms() - due_ms(k)) end
    end
end

function done(summary, latency, requests)
    local created_total, answered_total, all = 0, 0, {}
    for _, thread in ipairs(threads) do
        created_total = created_total + thread:get("created")
        answered_total = answered_total + thread:get("answered")
        for _, value in ipairs(thread:get("latencies")) do table.insert(all, value) end
    end
    local p50, p99
    if #all > 0 then
        table.sort(all)
        p50 = all[math.floor(#all * 0.50) + 1]
        p99 = all[math.min(#all, math.floor(#all * 0.99) + 1)]
    else
        p50, p99 = latency:percentile(50) / 1e3, latency:percentile(99) / 1e3
    end
    local errors = summary.errors
    io.write(string.format(
        '{"requests":%d,"created":%d,"answered":%d,"socketErrors":%d,"seconds":%f,"p50Milliseconds":%f,"p99Milliseconds":%f}\n',
        summary.requests, created_total, answered_total,
        errors.connect + errors.read + errors.write + errors.timeout,
        summary.duration / 1e6, p50, p99))
end
