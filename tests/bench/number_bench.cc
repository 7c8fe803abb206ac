// number_bench.cc - posenc's number text against the libraries it is
// measured by, on the same numbers in one run:
//   parsing: json_number_to_float (api/json/json_number.c) against
//            fast_float::from_chars, both given the rest of the body as
//            their end (each finds where its number stops);
//   writing: float_to_text (api/json/float_text.c: shortest digits laid out
//            as plain or exponent notation) against Dragonbox's own
//            to_chars (shortest digits, always in exponent notation).
// The numbers are those of a make bench body (tests/bench/gen_bodies.py:
// standard-normal float32 values in shortest text). Each figure is the
// median over ROUNDS rounds (alternating) of ns per number on one thread.
//
//   number_bench BODY.json [ROUNDS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <dragonbox/dragonbox_to_chars.h>
#include <fast_float/fast_float.h>

extern "C" {
#include "json/float_text.h"
#include "json/json_number.h"
}

static double seconds_now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: number_bench BODY.json [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
    std::FILE *f = std::fopen(argv[1], "rb");
    if (!f) {
        std::perror(argv[1]);
        return 1;
    }
    std::string text;
    char chunk[1 << 16];
    for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, f)) > 0;)
        text.append(chunk, n);
    std::fclose(f);

    // Where the numbers start: after '[' or ','.
    std::vector<size_t> starts;
    for (size_t i = 1; i < text.size(); i++) {
        char c = text[i], before = text[i - 1];
        if ((c == '-' || (c >= '0' && c <= '9')) && (before == '[' || before == ','))
            starts.push_back(i);
    }
    size_t n = starts.size();
    if (n == 0) {
        std::fprintf(stderr, "%s: no numbers\n", argv[1]);
        return 1;
    }
    const char *body = text.data(), *end = body + text.size();
    std::vector<float> ours(n), theirs(n);
    std::vector<char> out(n * FLOAT_TEXT_MAX + 64);
    std::vector<double> parse_ours, parse_ff, write_ours, write_db;
    size_t bytes_ours = 0, bytes_db = 0;

    for (int r = 0; r < rounds; r++) {
        double t = seconds_now();
        for (size_t i = 0; i < n; i++)
            json_number_to_float(body + starts[i], end, &ours[i]);
        parse_ours.push_back(seconds_now() - t);
        t = seconds_now();
        for (size_t i = 0; i < n; i++)
            fast_float::from_chars(body + starts[i], end, theirs[i]);
        parse_ff.push_back(seconds_now() - t);
        t = seconds_now();
        char *o = out.data();
        for (size_t i = 0; i < n; i++) {
            o += float_to_text(ours[i], o);
            *o++ = ',';
        }
        write_ours.push_back(seconds_now() - t);
        bytes_ours = (size_t)(o - out.data());
        t = seconds_now();
        o = out.data();
        for (size_t i = 0; i < n; i++) {
            o = jkj::dragonbox::to_chars_n(theirs[i], o);
            *o++ = ',';
        }
        write_db.push_back(seconds_now() - t);
        bytes_db = (size_t)(o - out.data());
    }
    size_t differ = 0;
    for (size_t i = 0; i < n; i++)
        differ += ours[i] != theirs[i];
    double po = median(parse_ours) / n * 1e9, pf = median(parse_ff) / n * 1e9;
    double wo = median(write_ours) / n * 1e9, wd = median(write_db) / n * 1e9;
    const char *slash = std::strrchr(argv[1], '/'), *name = slash ? slash + 1 : argv[1];
    std::printf("%s: %zu numbers, %.1f bytes each in; medians of %d rounds, one thread\n", name, n,
                (double)text.size() / n, rounds);
    std::printf("| step | posenc ns/number | library ns/number | posenc / library |\n");
    std::printf("| --- | --- | --- | --- |\n");
    std::printf("| parse | %.1f | fast_float %.1f | %.2f |\n", po, pf, po / pf);
    std::printf("| write | %.1f (%.1f bytes) | Dragonbox to_chars %.1f (%.1f bytes) | %.2f |\n", wo,
                (double)bytes_ours / n, wd, (double)bytes_db / n, wo / wd);
    if (differ) {
        std::printf("%zu numbers parsed differently from fast_float\n", differ);
        return 1;
    }
    return 0;
}
