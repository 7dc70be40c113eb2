# frozen_string_literal: true

# Lock+unlock pairs per second on one Redis, from one Ruby thread, in one run:
#   - polylock (the gem) with its default reentrant lock (Redisson's hash layout, fencing
#     token, watchdog) and with its token lock (redlock's `SET NX PX` string, fencing token);
#   - the plain loop a Ruby user would write instead with the redis gem: `SET key token NX PX`,
#     then a compare-and-delete script (EVALSHA), which is what redlock-rb does on one node;
#   - the reentrant lock again with Polylock.logger set (to /dev/null) at :warn, where a
#     successful pair logs nothing, and at :debug, where it logs two records (issue 23: the
#     rows above run with logging off, the default).
# Printed as ratios to the plain loop (absolute figures depend on the machine): a timing claim
# is a ratio measured side by side, never a test threshold.
#
#   ruby bindings-uniffi/bench/bench_redis.rb --url redis://127.0.0.1:16379 [--seconds 2]
require 'optparse'
require 'securerandom'
require 'redis'
require 'polylock'

options = { url: ENV.fetch('POLYLOCK_TEST_REDIS_URL', 'redis://127.0.0.1:6379'), seconds: 2.0 }
OptionParser.new do |parser|
  parser.on('--url URL') { |url| options[:url] = url }
  parser.on('--seconds S', Float) { |seconds| options[:seconds] = seconds }
end.parse!

COMPARE_AND_DELETE = <<~LUA
  if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end
LUA

# Pairs per second of the block, run for `seconds` after a short warm-up.
def pairs_per_second(seconds)
  deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds / 5
  yield while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  pairs = 0
  started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  deadline = started + seconds
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    yield
    pairs += 1
  end
  pairs / (Process.clock_gettime(Process::CLOCK_MONOTONIC) - started)
end

redis = Redis.new(url: options[:url])
sha = redis.script(:load, COMPARE_AND_DELETE)
plain_name = "rb-bench-plain-#{SecureRandom.hex(4)}"
plain = pairs_per_second(options[:seconds]) do
  token = SecureRandom.hex(20)
  redis.set(plain_name, token, nx: true, px: 30_000) or raise 'the plain lock was taken'
  redis.evalsha(sha, keys: [plain_name], argv: [token])
end

results = { 'plain SET NX PX + compare-and-delete (redis gem)' => plain }
Polylock.connect(options[:url]) do |client|
  { 'reentrant' => nil, 'token' => :token }.each do |label, kind|
    lock = client.lock("rb-bench-#{label}-#{SecureRandom.hex(4)}", kind: kind)
    results["polylock #{label} lock"] = pairs_per_second(options[:seconds]) do
      lock.lock or raise 'not acquired'
      lock.unlock
    end
  end
  lock = client.lock("rb-bench-logged-#{SecureRandom.hex(4)}")
  Polylock.logger = Logger.new(File::NULL)
  %i[warn debug].each do |level|
    Polylock.log_level = level
    results["polylock reentrant lock, Polylock.logger at :#{level}"] = pairs_per_second(options[:seconds]) do
      lock.lock or raise 'not acquired'
      lock.unlock
    end
  end
  Polylock.logger = nil
end
redis.close

puts "ruby #{RUBY_VERSION}, lock+unlock pairs on one Redis name, one thread, #{options[:seconds]} s each:"
results.each do |label, rate|
  puts format('  %-52s %5.2fx the plain loop', label, rate / plain)
end
