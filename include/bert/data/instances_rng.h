#pragma once
// The random generator behind `prepare`: xoshiro256** seeded through splitmix64.
// Deterministic on every platform (no std:: distributions, whose output varies by library):
//   uniform()      = top 53 bits / 2^53, in [0,1)
//   randint(a,b)   = a + unbiased draw in [0, b-a] (Lemire's multiply + reject), inclusive like
//                    Python's random.randint
//   shuffle(v)     = Fisher-Yates from the back, j = randint(0, i)
// Each shard s of a run is seeded with Rng::for_stream(seed, s), so shards are independent of
// each other and of how many workers run them.
#include <cstdint>
#include <utility>
#include <vector>

namespace bert::data {

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (auto& s : s_) s = splitmix64(x);
  }
  static Rng for_stream(uint64_t seed, uint64_t stream) {
    uint64_t x = seed;
    uint64_t a = splitmix64(x);
    x = a ^ (stream * 0xD1B54A32D192ED03ULL + 0x8BB84B93962EACC9ULL);
    return Rng(splitmix64(x));
  }

  uint64_t next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [a, b], both inclusive; a <= b.
  int64_t randint(int64_t a, int64_t b) {
    uint64_t range = static_cast<uint64_t>(b - a) + 1;
    if (range == 0) return static_cast<int64_t>(next());  // full 64-bit range
    __uint128_t m = static_cast<__uint128_t>(next()) * range;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < range) {
      uint64_t threshold = -range % range;
      while (low < threshold) {
        m = static_cast<__uint128_t>(next()) * range;
        low = static_cast<uint64_t>(m);
      }
    }
    return a + static_cast<int64_t>(m >> 64);
  }
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (int64_t i = static_cast<int64_t>(v.size()) - 1; i > 0; --i) {
      int64_t j = randint(0, i);
      if (j != i) std::swap(v[i], v[j]);
    }
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  uint64_t s_[4];
};

}  // namespace bert::data
