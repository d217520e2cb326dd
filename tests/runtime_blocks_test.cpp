// The runtime's building blocks on their own: BoundedQueue, FrameScheduler, ReorderBuffer and
// PacketPool. Each policy, close/abort and drain, and many producers and consumers at once, with
// assertions on what a run would notice: nothing lost or duplicated where the policy is lossless,
// drops accounted for where it is not, order kept where it is promised. No assertion depends on
// timing: a thread that must block is only ever checked by what it leaves behind. Also run under
// ThreadSanitizer (scripts/tsan.sh).
#include <gtest/gtest.h>

#include <memory>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "runtime/bounded_queue.h"
#include "runtime/frame_packet.h"
#include "runtime/frame_scheduler.h"
#include "runtime/reorder_buffer.h"

namespace sd {
namespace {

using std::chrono::microseconds;

// ---------------------------------------------------------------------------------------------
// BoundedQueue

std::vector<int> pop_all(BoundedQueue<int>& q) {
  std::vector<int> out;
  while (auto v = q.pop()) out.push_back(*v);
  return out;
}

TEST(BoundedQueue, BlockKeepsEveryItemInOrderWhenTheConsumerIsSlower) {
  BoundedQueue<int> q(2, QueuePolicy::kBlock);
  constexpr int kItems = 500;
  std::thread producer([&] {
    for (int i = 0; i < kItems; ++i) EXPECT_TRUE(q.push(i).accepted);
    q.close();
  });
  std::vector<int> got;
  while (auto v = q.pop()) {
    got.push_back(*v);
    if (got.size() % 50 == 0) std::this_thread::yield();
  }
  producer.join();
  std::vector<int> want(kItems);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(got, want);
  EXPECT_EQ(q.dropped(), 0);
  EXPECT_LE(q.high_water(), 2u);
}

// A push after close hands the item back (a frame in it must still be settled), not destroys it.
TEST(BoundedQueue, APushAfterCloseHandsTheItemBack) {
  BoundedQueue<std::unique_ptr<int>> q(2, QueuePolicy::kBlock);
  q.close();
  auto r = q.push(std::make_unique<int>(7));
  EXPECT_FALSE(r.accepted);
  ASSERT_TRUE(r.refused && *r.refused);
  EXPECT_EQ(**r.refused, 7);
  EXPECT_FALSE(r.evicted);
}

TEST(BoundedQueue, DropOldestHandsBackTheOldestAndKeepsTheNewest) {
  BoundedQueue<int> q(3, QueuePolicy::kDropOldest);
  std::vector<int> evicted;
  for (int i = 0; i < 5; ++i) {
    auto r = q.push(i);
    EXPECT_TRUE(r.accepted);
    if (r.evicted) evicted.push_back(*r.evicted);
  }
  EXPECT_EQ(evicted, (std::vector<int>{0, 1}));
  EXPECT_EQ(q.dropped(), 2);
  EXPECT_EQ(q.size(), 3u);
  q.close();
  EXPECT_EQ(pop_all(q), (std::vector<int>{2, 3, 4}));
}

TEST(BoundedQueue, LatestHoldsOnlyTheFreshestItem) {
  BoundedQueue<int> q(8, QueuePolicy::kLatest);
  EXPECT_EQ(q.capacity(), 1u) << "latest ignores the capacity asked for";
  std::vector<int> evicted;
  for (int i = 0; i < 4; ++i)
    if (auto r = q.push(i); r.evicted) evicted.push_back(*r.evicted);
  EXPECT_EQ(evicted, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(q.dropped(), 3);
  q.close();
  EXPECT_EQ(pop_all(q), (std::vector<int>{3}));
}

TEST(BoundedQueue, CloseRefusesPushesAndLetsPopsDrainWhatIsLeft) {
  BoundedQueue<int> q(4, QueuePolicy::kBlock);
  q.push(1);
  q.push(2);
  q.close();
  auto refused = q.push(3);
  EXPECT_FALSE(refused.accepted);
  EXPECT_FALSE(refused.evicted);
  EXPECT_EQ(pop_all(q), (std::vector<int>{1, 2}));
  EXPECT_FALSE(q.pop()) << "closed and empty: no wait";
  std::vector<int> batch{99};
  q.pop_batch(4, microseconds(1000), batch);
  EXPECT_TRUE(batch.empty());
}

TEST(BoundedQueue, CloseWakesABlockedProducerAndABlockedConsumer) {
  BoundedQueue<int> full(1, QueuePolicy::kBlock);
  full.push(0);
  BoundedQueue<int> empty(1, QueuePolicy::kBlock);
  std::atomic<bool> push_accepted{true}, pop_got_item{true};
  std::thread producer([&] { push_accepted = full.push(1).accepted; });  // waits for room
  std::thread consumer([&] { pop_got_item = empty.pop().has_value(); });  // waits for an item
  full.close();
  empty.close();
  producer.join();
  consumer.join();
  EXPECT_FALSE(push_accepted);
  EXPECT_FALSE(pop_got_item);
  EXPECT_EQ(full.drain(), (std::vector<int>{0}));
  EXPECT_EQ(full.size(), 0u);
}

TEST(BoundedQueue, PopBatchTakesWhatIsThereUpToItsMax) {
  BoundedQueue<int> q(8, QueuePolicy::kBlock);
  for (int i = 0; i < 5; ++i) q.push(i);
  std::vector<int> batch;
  q.pop_batch(3, microseconds(0), batch);
  EXPECT_EQ(batch, (std::vector<int>{0, 1, 2}));
  q.pop_batch(8, microseconds(0), batch);  // no waiting for more than the 2 left
  EXPECT_EQ(batch, (std::vector<int>{3, 4}));
  q.push(5);
  q.close();
  q.pop_batch(8, microseconds(100000), batch);  // closed: returns at once with what is there
  EXPECT_EQ(batch, (std::vector<int>{5}));
}

// Many producers and consumers on one lossless queue: every item arrives exactly once, and each
// producer's items reach any one consumer in the order they were pushed.
TEST(BoundedQueue, ManyProducersAndConsumersLoseNothing) {
  constexpr int kProducers = 4, kConsumers = 3, kEach = 3000;
  BoundedQueue<int> q(5, QueuePolicy::kBlock);
  std::vector<std::vector<int>> received(kConsumers);
  std::vector<std::thread> consumers;
  for (int c = 0; c < kConsumers; ++c)
    consumers.emplace_back([&, c] {
      std::vector<int> batch;
      for (bool single = c % 2 == 0;; single = !single) {
        if (single) {
          auto v = q.pop();
          if (!v) return;
          received[static_cast<size_t>(c)].push_back(*v);
        } else {
          q.pop_batch(4, microseconds(50), batch);
          if (batch.empty()) return;
          received[static_cast<size_t>(c)].insert(received[static_cast<size_t>(c)].end(), batch.begin(), batch.end());
        }
      }
    });
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p)
    producers.emplace_back([&, p] {
      for (int i = 0; i < kEach; ++i) ASSERT_TRUE(q.push(p * kEach + i).accepted);
    });
  for (auto& t : producers) t.join();
  q.close();
  for (auto& t : consumers) t.join();

  std::vector<int> all;
  for (const auto& r : received) {
    std::vector<int> last(kProducers, -1);
    for (int v : r) {
      EXPECT_GT(v, last[static_cast<size_t>(v / kEach)]) << "a producer's items out of order";
      last[static_cast<size_t>(v / kEach)] = v;
    }
    all.insert(all.end(), r.begin(), r.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<int> want(kProducers * kEach);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(all, want);
  EXPECT_EQ(q.dropped(), 0);
}

// A lossy queue under the same load: what was received and what was evicted are, together,
// exactly what was pushed, and the drop counter agrees.
TEST(BoundedQueue, DroppingPoliciesAccountForEveryItem) {
  for (QueuePolicy policy : {QueuePolicy::kDropOldest, QueuePolicy::kLatest}) {
    constexpr int kProducers = 3, kEach = 2000;
    BoundedQueue<int> q(3, policy);
    std::vector<int> received;
    std::thread consumer([&] {
      while (auto v = q.pop()) received.push_back(*v);
    });
    std::vector<std::vector<int>> evicted(kProducers);
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p)
      producers.emplace_back([&, p] {
        for (int i = 0; i < kEach; ++i)
          if (auto r = q.push(p * kEach + i); r.evicted) evicted[static_cast<size_t>(p)].push_back(*r.evicted);
      });
    for (auto& t : producers) t.join();
    q.close();
    consumer.join();
    std::vector<int> all = received;
    size_t drops = 0;
    for (const auto& e : evicted) {
      all.insert(all.end(), e.begin(), e.end());
      drops += e.size();
    }
    std::sort(all.begin(), all.end());
    std::vector<int> want(kProducers * kEach);
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(all, want) << "policy " << static_cast<int>(policy);
    EXPECT_EQ(q.dropped(), static_cast<int64_t>(drops));
  }
}

// ---------------------------------------------------------------------------------------------
// FrameScheduler

PacketPtr packet(int source, int64_t index, Clock::time_point captured) {
  auto p = std::make_unique<FramePacket>();
  p->frame.source_id = source;
  p->frame.index = index;
  p->frame.capture_time = captured;
  return p;
}

std::vector<int64_t> indices(const std::vector<PacketPtr>& ps) {
  std::vector<int64_t> out;
  for (const auto& p : ps) out.push_back(p->frame.index);
  return out;
}

TEST(FrameScheduler, BatchesTakeTheOldestCaptureFirstAcrossLanes) {
  FrameScheduler s({{QueuePolicy::kBlock, 4}, {QueuePolicy::kBlock, 4}});
  const Clock::time_point t0 = Clock::now();
  // Lane 0 captured at 0, 20, 40 ms; lane 1 at 10, 30 ms (index = capture time in ms).
  for (int64_t ms : {0, 20, 40}) s.push(0, packet(0, ms, t0 + std::chrono::milliseconds(ms)));
  for (int64_t ms : {10, 30}) s.push(1, packet(1, ms, t0 + std::chrono::milliseconds(ms)));
  std::vector<PacketPtr> out, expired;
  ASSERT_TRUE(s.pop_batch(4, microseconds(0), microseconds(0), out, expired));
  EXPECT_EQ(indices(out), (std::vector<int64_t>{0, 10, 20, 30}));
  EXPECT_TRUE(expired.empty());
  // Sequence numbers are per lane, in lane order.
  EXPECT_EQ(out[0]->sequence, 0);
  EXPECT_EQ(out[1]->sequence, 0);
  EXPECT_EQ(out[2]->sequence, 1);
  EXPECT_EQ(out[3]->sequence, 1);
  ASSERT_TRUE(s.pop_batch(4, microseconds(0), microseconds(0), out, expired));
  EXPECT_EQ(indices(out), (std::vector<int64_t>{40}));
  EXPECT_EQ(out[0]->sequence, 2);
}

TEST(FrameScheduler, EachLaneKeepsItsOwnPolicy) {
  // Lane 0 a file (block), lane 1 a live camera (latest), lane 2 a live stream (drop oldest, 2).
  FrameScheduler s({{QueuePolicy::kBlock, 2}, {QueuePolicy::kLatest, 5}, {QueuePolicy::kDropOldest, 2}});
  const Clock::time_point t0 = Clock::now();
  std::vector<int64_t> evicted_live, evicted_stream;
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(s.push(0, packet(0, i, t0)).evicted);
  for (int i = 0; i < 4; ++i)
    if (auto r = s.push(1, packet(1, i, t0)); r.evicted) evicted_live.push_back(r.evicted->frame.index);
  for (int i = 0; i < 4; ++i)
    if (auto r = s.push(2, packet(2, i, t0)); r.evicted) evicted_stream.push_back(r.evicted->frame.index);
  EXPECT_EQ(evicted_live, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(evicted_stream, (std::vector<int64_t>{0, 1}));
  for (int lane = 0; lane < 3; ++lane) s.finish_lane(lane);
  std::vector<PacketPtr> out, expired;
  std::vector<std::vector<int64_t>> per_lane(3);
  while (s.pop_batch(8, microseconds(0), microseconds(0), out, expired))
    for (const auto& p : out) per_lane[static_cast<size_t>(p->frame.source_id)].push_back(p->frame.index);
  EXPECT_EQ(per_lane[0], (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(per_lane[1], (std::vector<int64_t>{3}));
  EXPECT_EQ(per_lane[2], (std::vector<int64_t>{2, 3}));
}

TEST(FrameScheduler, FramesOlderThanMaxAgeExpireWithoutTakingASequenceNumber) {
  FrameScheduler s({{QueuePolicy::kBlock, 4}});
  const Clock::time_point now = Clock::now();
  s.push(0, packet(0, 0, now - std::chrono::hours(1)));
  s.push(0, packet(0, 1, now + std::chrono::hours(1)));  // "captured" in the future: never too old
  s.push(0, packet(0, 2, now - std::chrono::hours(1)));
  s.finish_lane(0);
  std::vector<PacketPtr> out, expired;
  ASSERT_TRUE(s.pop_batch(4, microseconds(0), std::chrono::seconds(1), out, expired));
  EXPECT_EQ(indices(out), (std::vector<int64_t>{1}));
  EXPECT_EQ(out[0]->sequence, 0) << "expired frames leave no gap for the reorder buffer to wait on";
  EXPECT_EQ(indices(expired), (std::vector<int64_t>{0, 2}));
  EXPECT_FALSE(s.pop_batch(4, microseconds(0), std::chrono::seconds(1), out, expired));
}

TEST(FrameScheduler, AbortWakesABlockedProducerAndHandsItsPacketBack) {
  FrameScheduler s({{QueuePolicy::kBlock, 1}});
  s.push(0, packet(0, 0, Clock::now()));
  FrameScheduler::PushResult blocked;
  std::thread producer([&] { blocked = s.push(0, packet(0, 1, Clock::now())); });  // waits for room
  s.abort();  // whether the producer is waiting yet or not, its packet comes back refused
  producer.join();
  std::vector<PacketPtr> out, expired;
  EXPECT_FALSE(blocked.accepted);
  ASSERT_TRUE(blocked.evicted);
  EXPECT_EQ(blocked.evicted->frame.index, 1);
  EXPECT_FALSE(s.pop_batch(4, microseconds(0), microseconds(0), out, expired));
  auto left = s.drain();
  EXPECT_EQ(indices(left), (std::vector<int64_t>{0}));
  EXPECT_TRUE(s.drain().empty());
}

TEST(FrameScheduler, AWaitingWorkerEndsWhenEveryLaneIsFinished) {
  FrameScheduler s({{QueuePolicy::kBlock, 2}, {QueuePolicy::kLatest, 1}});
  std::atomic<bool> got{true};
  std::thread worker([&] {
    std::vector<PacketPtr> out, expired;
    got = s.pop_batch(4, microseconds(0), microseconds(0), out, expired);
  });
  s.finish_lane(1);
  s.finish_lane(0);
  worker.join();
  EXPECT_FALSE(got);
}

// One producer per lane (files, blocking), several workers taking batches: every frame of every
// lane comes out exactly once, and within a lane sequence numbers follow the frames' order.
TEST(FrameScheduler, ManyLanesAndWorkersKeepEveryFrameAndItsOrder) {
  constexpr int kLanes = 3, kWorkers = 4, kFrames = 1500;
  FrameScheduler s(std::vector<FrameScheduler::LaneConfig>(kLanes, {QueuePolicy::kBlock, 3}));
  std::vector<std::thread> producers;
  for (int lane = 0; lane < kLanes; ++lane)
    producers.emplace_back([&, lane] {
      for (int i = 0; i < kFrames; ++i) ASSERT_TRUE(s.push(lane, packet(lane, i, Clock::now())).accepted);
      s.finish_lane(lane);
    });
  std::mutex mutex;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> seen(kLanes);  // (sequence, index)
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w)
    workers.emplace_back([&, w] {
      std::vector<PacketPtr> out, expired;
      while (s.pop_batch(static_cast<size_t>(1 + w % 3), microseconds(w % 2 ? 100 : 0), microseconds(0), out, expired)) {
        EXPECT_TRUE(expired.empty());
        std::lock_guard<std::mutex> lock(mutex);
        for (const auto& p : out) seen[static_cast<size_t>(p->frame.source_id)].emplace_back(p->sequence, p->frame.index);
      }
    });
  for (auto& t : producers) t.join();
  for (auto& t : workers) t.join();
  for (int lane = 0; lane < kLanes; ++lane) {
    auto& v = seen[static_cast<size_t>(lane)];
    std::sort(v.begin(), v.end());
    ASSERT_EQ(v.size(), static_cast<size_t>(kFrames)) << "lane " << lane;
    for (int i = 0; i < kFrames; ++i) {
      EXPECT_EQ(v[static_cast<size_t>(i)].first, i) << "lane " << lane;
      EXPECT_EQ(v[static_cast<size_t>(i)].second, i) << "lane " << lane << ": sequence and frame order differ";
    }
  }
  EXPECT_TRUE(s.drain().empty());
}

// ---------------------------------------------------------------------------------------------
// ReorderBuffer

PacketPtr with_sequence(int64_t sequence) {
  auto p = std::make_unique<FramePacket>();
  p->sequence = sequence;
  return p;
}

TEST(ReorderBuffer, HoldsPacketsBehindAGapAndReleasesThemInOrder) {
  ReorderBuffer r(4);
  EXPECT_FALSE(r.take_next());
  r.put(with_sequence(2));
  r.put(with_sequence(1));
  EXPECT_FALSE(r.take_next()) << "0 has not arrived";
  r.put(with_sequence(0));
  for (int64_t want = 0; want < 3; ++want) {
    PacketPtr p = r.take_next();
    ASSERT_TRUE(p);
    EXPECT_EQ(p->sequence, want);
  }
  EXPECT_FALSE(r.take_next());
  EXPECT_EQ(r.next_sequence(), 3);
  r.put(with_sequence(5));
  r.put(with_sequence(4));
  auto held = r.release_all();  // an aborted run: 3 never came
  std::vector<int64_t> seqs;
  for (const auto& p : held) seqs.push_back(p->sequence);
  std::sort(seqs.begin(), seqs.end());
  EXPECT_EQ(seqs, (std::vector<int64_t>{4, 5}));
}

// Workers finish out of order but never more than `capacity` ahead: the sink sees 0, 1, 2, ...
TEST(ReorderBuffer, AnyCompletionOrderWithinItsWindowComesOutInOrder) {
  constexpr size_t kWindow = 6;
  constexpr int64_t kFrames = 3000;
  std::mt19937 rng(7);
  ReorderBuffer r(kWindow);
  std::vector<int64_t> in_flight, delivered;
  int64_t next_to_start = 0;
  while (static_cast<int64_t>(delivered.size()) < kFrames) {
    // Start frames while fewer than the window are started and not yet delivered.
    while (next_to_start < kFrames && next_to_start - static_cast<int64_t>(delivered.size()) < static_cast<int64_t>(kWindow))
      in_flight.push_back(next_to_start++);
    // A random in-flight frame completes.
    std::uniform_int_distribution<size_t> pick(0, in_flight.size() - 1);
    const size_t i = pick(rng);
    r.put(with_sequence(in_flight[i]));
    in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(i));
    while (PacketPtr p = r.take_next()) delivered.push_back(p->sequence);
  }
  std::vector<int64_t> want(kFrames);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(delivered, want);
  EXPECT_TRUE(r.release_all().empty());
}

// ---------------------------------------------------------------------------------------------
// PacketPool

TEST(PacketPool, GivesOutItsPacketsOnceAndClearsThemForReuse) {
  PacketPool pool(3);
  std::vector<PacketPtr> held;
  std::set<FramePacket*> distinct;
  for (int i = 0; i < 3; ++i) {
    held.push_back(pool.acquire());
    ASSERT_TRUE(held.back());
    distinct.insert(held.back().get());
  }
  EXPECT_EQ(distinct.size(), 3u);
  EXPECT_EQ(pool.available(), 0u);
  held[0]->detections.push_back(Detection{});
  held[0]->entered[0] = Clock::now();
  FramePacket* recycled = held[0].get();
  pool.release(std::move(held[0]));
  pool.release(nullptr);  // ignored
  EXPECT_EQ(pool.available(), 1u);
  PacketPtr again = pool.acquire();
  EXPECT_EQ(again.get(), recycled);
  EXPECT_TRUE(again->detections.empty());
  EXPECT_EQ(again->entered[0], Clock::time_point{});
}

TEST(PacketPool, CloseWakesAWaitingReaderWithNothing) {
  PacketPool pool(1);
  PacketPtr only = pool.acquire();
  PacketPtr waited = std::make_unique<FramePacket>();
  std::thread reader([&] { waited = pool.acquire(); });  // the pool is empty: waits
  pool.close();
  reader.join();
  EXPECT_FALSE(waited);
  pool.release(std::move(only));
  EXPECT_FALSE(pool.acquire()) << "a closed pool gives nothing out";
}

// Back-pressure: however many threads take and give back, no more than the pool's packets are
// ever out at once, and every one comes back.
TEST(PacketPool, NeverMoreInFlightThanItHolds) {
  constexpr size_t kPackets = 3;
  constexpr int kThreads = 6, kCycles = 2000;
  PacketPool pool(kPackets);
  std::atomic<int> out{0}, most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kCycles; ++i) {
        PacketPtr p = pool.acquire();
        ASSERT_TRUE(p);
        const int now = ++out;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        --out;
        pool.release(std::move(p));
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_LE(most.load(), static_cast<int>(kPackets));
  EXPECT_EQ(pool.available(), kPackets);
}

}  // namespace
}  // namespace sd
