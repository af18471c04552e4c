// Stream K: W work steps (row block, column block, chunk; chunks innermost) over G ≤ W persistent
// blocks (so none is empty). Block b takes steps [b·W/G, (b + 1)·W/G). Plain integer arithmetic, also
// compiled on the host by the unit test that checks it against an enumeration.
#pragma once

#ifndef LOWBIT_HD
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define LOWBIT_HD __host__ __device__
#else
#define LOWBIT_HD
#endif
#endif

namespace lowbit::kern {

// The first step of block b.
LOWBIT_HD inline long long stream_k_begin(long long b, long long work, long long blocks) {
  return b * work / blocks;
}

// The block that runs step w: the last block whose first step is ≤ w.
LOWBIT_HD inline long long stream_k_block_of(long long w, long long work, long long blocks) {
  return ((w + 1) * blocks - 1) / work;
}

// How many blocks share tile u (its steps u·steps .. u·steps + steps − 1): the arrivals its sums
// wait for.
LOWBIT_HD inline unsigned stream_k_pieces(long long u, long long steps, long long work, long long blocks) {
  return static_cast<unsigned>(stream_k_block_of(u * steps + steps - 1, work, blocks) -
                               stream_k_block_of(u * steps, work, blocks) + 1);
}

}  // namespace lowbit::kern
