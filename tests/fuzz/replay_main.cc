// SPDX-License-Identifier: GPL-2.0-or-later
// Deterministic replay of a fuzz target for the unit suite: every file of
// a seed corpus directory, then inputs from a fixed-seed PRNG.  Linked with
// one harness (its LLVMFuzzerTestOneInput); an oracle failure aborts.
//
//   fuzz-replay-<target> [CORPUS_DIR|FILE]... [--random N] [--seed S]
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace fs = std::filesystem;

static void run_file(const fs::path &p)
{
    std::ifstream f(p, std::ios::binary);
    std::vector<uint8_t> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(buf.data(), buf.size());
}

int main(int argc, char **argv)
{
    unsigned long random_inputs = 0;
    unsigned long long seed = 1;
    unsigned long files = 0;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--random") && i + 1 < argc) {
            random_inputs = std::strtoul(argv[++i], nullptr, 0);
        } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
            seed = std::strtoull(argv[++i], nullptr, 0);
        } else if (fs::is_directory(argv[i])) {
            std::vector<fs::path> paths;
            for (const auto &e : fs::directory_iterator(argv[i]))
                if (e.is_regular_file())
                    paths.push_back(e.path());
            std::sort(paths.begin(), paths.end());
            for (const auto &p : paths) {
                run_file(p);
                files++;
            }
        } else if (fs::is_regular_file(argv[i])) {
            run_file(argv[i]);
            files++;
        } else {
            std::fprintf(stderr, "%s: no such corpus directory or file\n", argv[i]);
            return 1;
        }
    }
    // Sizes spread from a few bytes to a few KiB: short inputs reach the
    // configuration corner cases, long ones long operation sequences.
    std::mt19937_64 rng(seed);
    std::vector<uint8_t> buf;
    for (unsigned long n = 0; n < random_inputs; n++) {
        buf.resize(1 + rng() % (rng() % 2 ? 64 : 4096));
        for (auto &b : buf)
            b = static_cast<uint8_t>(rng());
        LLVMFuzzerTestOneInput(buf.data(), buf.size());
    }
    std::printf("replayed %lu corpus files and %lu random inputs (seed %llu)\n", files,
                random_inputs, seed);
    return 0;
}
