// The benchmark peer: spdlog 1.10 (Debian's libspdlog-dev), same workloads and message as
// blackbox-bench. Usage: spdlog-bench W1|W2|W3|W4 sync|async DIR   (prints one JSON object)
#include <spdlog/async.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

static inline uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

// User and system CPU time of the whole process, finished threads included.
static uint64_t cpu_ns() {
    rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
    auto ns = [](const timeval& t) { return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_usec) * 1000ull; };
    return ns(usage.ru_utime) + ns(usage.ru_stime);
}

static double peak_rss_mb() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
    }
    return 0;
}

static uint64_t pct(std::vector<uint64_t>& v, double p) {
    if (v.empty()) return 0;
    size_t i = std::min(v.size() - 1, size_t(double(v.size()) * p));
    return v[i];
}

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: spdlog-bench W1|W2|W3 sync|async DIR\n");
        return 2;
    }
    std::string workload = argv[1], mode = argv[2], dir = argv[3];
    std::string path = dir + "/spdlog.log";
    std::shared_ptr<spdlog::logger> logger;
    if (mode == "async") {
        spdlog::init_thread_pool(8192, 1);
        logger = spdlog::basic_logger_mt<spdlog::async_factory>("bench", path, true);
    } else {
        logger = spdlog::basic_logger_mt("bench", path, true);
    }
    logger->set_level(spdlog::level::info);
    const std::string user = "alice";
    std::string fields;
    char buf[256];

    if (workload == "W1") {
        const int count = 1000000;
        std::vector<uint64_t> samples;
        samples.reserve(count / 100);
        uint64_t start = now_ns();
        for (int i = 0; i < count; i++) {
            if (i % 100 == 0) {
                uint64_t t0 = now_ns();
                logger->info("request id={} user={} took {} ms", i, user, i % 1000);
                samples.push_back(now_ns() - t0);
            } else {
                logger->info("request id={} user={} took {} ms", i, user, i % 1000);
            }
        }
        uint64_t elapsed = now_ns() - start;
        std::sort(samples.begin(), samples.end());
        std::snprintf(buf, sizeof buf, "\"mean_ns\": %.3f, \"p50_ns\": %llu, \"p99_ns\": %llu, \"p999_ns\": %llu, \"msgs_per_s\": null",
                      double(elapsed) / count, (unsigned long long)pct(samples, 0.5),
                      (unsigned long long)pct(samples, 0.99), (unsigned long long)pct(samples, 0.999));
        fields = buf;
    } else if (workload == "W4") {
        // The same 8 metadata values as blackbox-bench's W4, formatted into the line (spdlog has no
        // structured metadata): the logger's request id, the call's three, the provider's four.
        const std::string request_id = "8d7e1f2a-bench", trace_id = "4bf92f3577b34da6a3ce929d0e0e4736",
                          span_id = "00f067aa0ba902b7", flags = "01", service = "bench";
        const int count = 1000000;
        std::vector<uint64_t> samples;
        samples.reserve(count / 100);
        auto call = [&](int i) {
            logger->info(
                "request id={} user={} took {} ms items=3 order={} request-id={} service.name={} span_id={} total=42.50 "
                "trace_flags={} trace_id={}",
                i, user, i % 1000, i, request_id, service, span_id, flags, trace_id);
        };
        uint64_t start = now_ns();
        for (int i = 0; i < count; i++) {
            if (i % 100 == 0) {
                uint64_t t0 = now_ns();
                call(i);
                samples.push_back(now_ns() - t0);
            } else {
                call(i);
            }
        }
        uint64_t elapsed = now_ns() - start;
        std::sort(samples.begin(), samples.end());
        std::snprintf(buf, sizeof buf, "\"mean_ns\": %.3f, \"p50_ns\": %llu, \"p99_ns\": %llu, \"p999_ns\": %llu, \"msgs_per_s\": null",
                      double(elapsed) / count, (unsigned long long)pct(samples, 0.5),
                      (unsigned long long)pct(samples, 0.99), (unsigned long long)pct(samples, 0.999));
        fields = buf;
    } else if (workload == "W2") {
        const int threads = 4, per_thread = 250000;
        uint64_t start = now_ns();
        uint64_t cpu_start = cpu_ns();
        std::vector<std::thread> workers;
        for (int t = 0; t < threads; t++) {
            workers.emplace_back([&, t] {
                for (int n = 0; n < per_thread; n++)
                    logger->info("request id={} user={} took {} ms", t * 1000000 + n, user, (t * 1000000 + n) % 1000);
            });
        }
        for (auto& w : workers) w.join();
        logger->flush();
        logger.reset();
        spdlog::shutdown();  // joins the async pool and closes the file
        uint64_t elapsed = now_ns() - start;
        std::snprintf(buf, sizeof buf, "\"mean_ns\": null, \"p50_ns\": null, \"p99_ns\": null, \"p999_ns\": null, \"msgs_per_s\": %.1f, \"cpu_ns_per_line\": %.1f",
                      double(threads * per_thread) / (double(elapsed) / 1e9), double(cpu_ns() - cpu_start) / (threads * per_thread));
        fields = buf;
    } else if (workload == "W3") {
        const int count = 10000000;
        uint64_t start = now_ns();
        for (int i = 0; i < count; i++) logger->debug("request id={} user={} took {} ms", i, user, i % 1000);
        uint64_t elapsed = now_ns() - start;
        std::snprintf(buf, sizeof buf, "\"mean_ns\": %.3f, \"p50_ns\": null, \"p99_ns\": null, \"p999_ns\": null, \"msgs_per_s\": null",
                      double(elapsed) / count);
        fields = buf;
    } else {
        std::fprintf(stderr, "unknown workload\n");
        return 2;
    }
    if (logger) logger->flush();
    spdlog::shutdown();
    std::printf("{\"workload\": \"%s\", \"competitor\": \"spdlog-%s\", %s, \"peak_rss_mb\": %.1f}\n", workload.c_str(),
                mode.c_str(), fields.c_str(), peak_rss_mb());
    return 0;
}
