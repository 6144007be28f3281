// SPDX-License-Identifier: GPL-2.0-or-later
#include "calibrate.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>
#include <sys/utsname.h>

namespace viommu::sim {

namespace {

using Clock = std::chrono::steady_clock;

double ns_since(Clock::time_point t0)
{
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

bool pin(unsigned cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

std::string cpu_model()
{
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0 || line.rfind("CPU part", 0) == 0)
            if (size_t c = line.find(':'); c != std::string::npos)
                return line.substr(line.find_first_not_of(' ', c + 1));
    return "unknown";
}

double load_average()
{
    std::ifstream f("/proc/loadavg");
    double l = 0;
    f >> l;
    return l;
}

double atomic_once(unsigned iterations)
{
    alignas(64) std::atomic<uint64_t> word{0};
    auto t0 = Clock::now();
    for (unsigned i = 0; i < iterations; i++)
        word.fetch_add(1);
    return ns_since(t0) / iterations;
}

// An irqsave spinlock taken and released with nobody else wanting it: the
// flags saved, the lock word compare-exchanged and stored back (qspinlock
// and ticket-lock releases are stores), the flags restored.
double lock_local_once(unsigned iterations)
{
    alignas(64) std::atomic<uint32_t> lock{0};
    auto t0 = Clock::now();
    for (unsigned i = 0; i < iterations; i++) {
#if defined(__x86_64__)
        unsigned long long flags = __builtin_ia32_readeflags_u64();
#endif
        uint32_t unlocked = 0;
        lock.compare_exchange_strong(unlocked, 1, std::memory_order_acquire);
        lock.store(0, std::memory_order_release);
#if defined(__x86_64__)
        __builtin_ia32_writeeflags_u64(flags);
#endif
    }
    return ns_since(t0) / iterations;
}

// Two threads pass one line back and forth with compare-exchange: each
// waits for the value the other left and replaces it.  Round trip / 2.
double ping_pong_once(unsigned iterations, bool &pinned)
{
    alignas(64) std::atomic<uint64_t> word{0};
    std::atomic<bool> pinned_b{true};
    std::thread b([&] {
        pinned_b = pin(1);
        for (uint64_t i = 0; i < iterations; i++) {
            uint64_t expect = 2 * i + 1;
            while (!word.compare_exchange_weak(expect, 2 * i + 2, std::memory_order_relaxed))
                expect = 2 * i + 1;
        }
    });
    bool pinned_a = pin(0);
    auto t0 = Clock::now();
    for (uint64_t i = 0; i < iterations; i++) {
        uint64_t expect = 2 * i;
        while (!word.compare_exchange_weak(expect, 2 * i + 1, std::memory_order_relaxed))
            expect = 2 * i;
    }
    double ns = ns_since(t0);
    b.join();
    pinned = pinned_a && pinned_b;
    return ns / (2.0 * iterations);
}

// Two threads take turns on a test-and-set spinlock: each, holding it,
// hands it to the other (a turn word) and spins for it again.  Time per
// acquisition: the release, the line's move, the winner's atomic.
double lock_handoff_once(unsigned iterations)
{
    alignas(64) std::atomic<bool> lock{false};
    alignas(64) std::atomic<unsigned> turn{0};
    auto side = [&](unsigned me) {
        pin(me);
        for (unsigned i = 0; i < iterations / 2; i++) {
            for (;;) {
                while (turn.load(std::memory_order_relaxed) != me)
                    ;
                if (!lock.exchange(true, std::memory_order_acquire))
                    break;
            }
            turn.store(1 - me, std::memory_order_relaxed);
            lock.store(false, std::memory_order_release);
        }
    };
    auto t0 = Clock::now();
    std::thread b(side, 1u);
    side(0);
    b.join();
    return ns_since(t0) / iterations;
}

// Bursts of @n threads (CPUs 0..n-1) each updating one line once; see
// Calibration::Burst.  A sense-reversing barrier separates the bursts.
struct BurstSample {
    double ns = 0, attempts = 0;
};
std::vector<BurstSample> bursts(unsigned n, unsigned count, bool cmpxchg)
{
    struct alignas(64) Slot {
        Clock::time_point start, end;
        uint64_t attempts = 0;
    };
    alignas(64) std::atomic<uint64_t> word{0};
    alignas(64) std::atomic<unsigned> arrived{0};
    alignas(64) std::atomic<unsigned> generation{0};
    std::vector<Slot> slots(n);
    std::vector<BurstSample> out;
    auto barrier = [&] {
        unsigned g = generation.load(std::memory_order_acquire);
        if (arrived.fetch_add(1, std::memory_order_acq_rel) == n - 1) {
            arrived.store(0, std::memory_order_relaxed);
            generation.store(g + 1, std::memory_order_release);
        } else {
            while (generation.load(std::memory_order_acquire) == g)
                ;
        }
    };
    auto body = [&](unsigned me) {
        pin(me);
        for (unsigned b = 0; b < count; b++) {
            barrier();
            Slot &s = slots[me];
            s.start = Clock::now();
            s.attempts = 1;
            if (cmpxchg) {
                uint64_t seen = word.load(std::memory_order_relaxed);
                while (!word.compare_exchange_strong(seen, seen + 1, std::memory_order_relaxed))
                    s.attempts++;
            } else {
                word.fetch_add(1, std::memory_order_relaxed);
            }
            s.end = Clock::now();
            barrier();
            if (me == 0) {
                auto first = slots[0].start, last = slots[0].end;
                uint64_t tries = 0;
                for (const Slot &x : slots) {
                    first = std::min(first, x.start);
                    last = std::max(last, x.end);
                    tries += x.attempts;
                }
                out.push_back({std::chrono::duration<double, std::nano>(last - first).count() / n,
                               double(tries) / n});
            }
        }
    };
    std::vector<std::thread> others;
    for (unsigned t = 1; t < n; t++)
        others.emplace_back(body, t);
    body(0);
    for (std::thread &t : others)
        t.join();
    return out;
}

}  // namespace

Calibration calibrate(unsigned iterations, unsigned rounds)
{
    iterations = std::max(iterations, 2u);
    Calibration c;
    c.cpu_model = cpu_model();
    utsname u{};
    if (uname(&u) == 0)
        c.kernel = u.release;
    c.cpus_online = std::max(1u, std::thread::hardware_concurrency());
    c.load_average = load_average();
    c.rounds = std::max(rounds, 1u);
    c.iterations = iterations;
    std::vector<double> atomic, local, xfer, lock;
    bool pinned = true;
    for (unsigned r = 0; r < c.rounds; r++) {
        atomic.push_back(atomic_once(iterations));
        local.push_back(lock_local_once(iterations));
        if (c.cpus_online >= 2) {
            bool p = false;
            xfer.push_back(ping_pong_once(iterations, p));
            pinned = pinned && p;
            lock.push_back(lock_handoff_once(iterations));
        }
    }
    c.atomic_ns = median(atomic);
    c.lock_local_ns = median(local);
    if (!xfer.empty()) {
        c.line_transfer_ns = median(xfer);
        c.lock_handoff_ns = median(lock);
        c.pinned = pinned;
    }
    c.bursts_per_size = std::max(iterations / 100, 1u);
    for (unsigned n = 2; n <= std::min(c.cpus_online, 64u); n *= 2) {
        std::vector<double> ns, add;
        double tries = 0;
        for (const BurstSample &s : bursts(n, c.bursts_per_size, true)) {
            ns.push_back(s.ns);
            tries += s.attempts;
        }
        for (const BurstSample &s : bursts(n, c.bursts_per_size, false))
            add.push_back(s.ns);
        c.bursts.push_back({n, median(ns), tries / c.bursts_per_size, median(add)});
    }
    return c;
}

std::string Calibration::json() const
{
    auto quoted = [](const std::string &s) {
        std::string o = "\"";
        for (char ch : s) {
            if (ch == '"' || ch == '\\')
                o += '\\';
            if (static_cast<unsigned char>(ch) >= 0x20)
                o += ch;
        }
        return o + '"';
    };
    auto num = [](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3g", v);
        return std::string(buf);
    };
    auto opt = [&](const std::optional<double> &v) { return v ? num(*v) : std::string("null"); };
    return "{\"provenance\":{\"command\":\"viommu-sim --calibrate\",\"cpu_model\":" +
           quoted(cpu_model) + ",\"kernel\":" + quoted(kernel) +
           ",\"cpus_online\":" + std::to_string(cpus_online) +
           ",\"load_average_1min\":" + num(load_average) +
           ",\"pinned_to_cpus_0_1\":" + (pinned ? "true" : "false") +
           ",\"rounds\":" + std::to_string(rounds) +
           ",\"iterations\":" + std::to_string(iterations) +
           ",\"statistic\":\"median of rounds\"}" + ",\"atomic_ns\":" + num(atomic_ns) +
           ",\"lock_local_ns\":" + num(lock_local_ns) +
           ",\"line_transfer_ns\":" + opt(line_transfer_ns) +
           ",\"lock_handoff_ns\":" + opt(lock_handoff_ns) +
           ",\"bursts_per_size\":" + std::to_string(bursts_per_size) + ",\"bursts\":[" +
           [&] {
               std::string o;
               for (const Burst &b : bursts)
                   o += std::string(o.empty() ? "" : ",") +
                        "{\"threads\":" + std::to_string(b.threads) +
                        ",\"cmpxchg_ns\":" + num(b.cmpxchg_ns) +
                        ",\"cmpxchg_attempts\":" + num(b.cmpxchg_attempts) +
                        ",\"fetch_add_ns\":" + num(b.fetch_add_ns) + "}";
               return o;
           }() +
           "]}";
}

}  // namespace viommu::sim
