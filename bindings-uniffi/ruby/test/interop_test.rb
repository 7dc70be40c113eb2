# frozen_string_literal: true

require_relative 'test_helper'
require 'open3'
require 'redis'

# A Ruby holder against holders in other processes and other clients on one Redis name:
# polylock's CLI (the Rust core in another process), the Python binding (when a Python with
# the polylock wheel is given), Redisson's RLock (real Redisson on a JVM when run-tests.sh could
# fetch it, and always Redisson's own Lua scripts run through the redis gem) and redlock-rb's
# `SET NX PX` token.
class RedisInteropTest < Minitest::Test
  # Redisson's RedissonLock.tryLockInnerAsync and unlockInnerAsync, as Redisson sends them.
  REDISSON_LOCK = <<~LUA
    if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return nil;
    end;
    return redis.call('pttl', KEYS[1]);
  LUA
  REDISSON_UNLOCK = <<~LUA
    if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
    return nil;
    end;
    local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
    if (counter > 0) then
    redis.call('pexpire', KEYS[1], ARGV[2]);
    return 0;
    else
    redis.call('del', KEYS[1]);
    redis.call('publish', KEYS[2], ARGV[1]);
    return 1;
    end;
    return nil;
  LUA

  def setup
    @url = ENV.fetch('POLYLOCK_TEST_REDIS_URL', '')
    skip 'POLYLOCK_TEST_REDIS_URL is not set' if @url.empty?
    @client = Polylock.connect(@url)
    @redis = Redis.new(url: @url)
  end

  def teardown
    @client&.close
    @redis&.close
  end

  # Start `command`, wait until it prints `held`, and return [stdin, stdout, waiter]. The
  # holder prints `releasing` just before it lets go.
  def start_holder(*command)
    stdin, stdout, waiter = Open3.popen2(*command)
    line = Timeout.timeout(60) { stdout.gets }
    assert_equal "held\n", line, "the other holder did not say it holds the lock (#{command.first})"
    [stdin, stdout, waiter]
  end

  def assert_excluded_then_granted(lock, stdout, waiter)
    refute lock.try_lock, 'the other process holds the name'
    assert lock.lock(wait: 60), 'granted once the other process let go'
    # Written before the other process let go, so already there if the grant came after.
    assert stdout.wait_readable(0), 'granted while the other process still held the name'
    assert_equal "releasing\n", stdout.gets
    lock.unlock
    assert_predicate waiter.value, :success?
  end

  def test_a_ruby_holder_and_the_cli_in_another_process_exclude_each_other
    cli = ENV.fetch('POLYLOCK_CLI', '')
    skip 'POLYLOCK_CLI is not set (run-tests.sh builds it)' if cli.empty?
    name = TestSupport.unique('cli')
    lock = @client.lock(name)
    _, stdout, waiter = start_holder(cli, '--url', @url, 'run', '--lock', name, '--', 'sh', '-c',
                                     'echo held; sleep 1; echo releasing')
    assert_excluded_then_granted(lock, stdout, waiter)

    lock.synchronize do
      _, status = Open3.capture2e(cli, '--url', @url, 'run', '--lock', name, '--wait', '300ms', '--', 'true')
      assert_equal 75, status.exitstatus, 'the CLI timed out (exit 75) while Ruby held the name'
    end
  end

  def test_a_ruby_holder_and_a_python_holder_exclude_each_other
    python = ENV.fetch('POLYLOCK_TEST_PYTHON', '')
    skip 'no Python with the polylock wheel (set POLYLOCK_TEST_PYTHON)' if python.empty?
    name = TestSupport.unique('python')
    lock = @client.lock(name)
    script = <<~PY
      import sys, time, polylock
      client = polylock.connect(sys.argv[1])
      lock = client.lock(sys.argv[2])
      if sys.argv[3] == "hold":
          with lock:
              print("held", flush=True)
              time.sleep(1)
              print("releasing", flush=True)
      else:
          print("taken" if lock.acquire(timeout=0.3) else "refused", flush=True)
      client.close()
    PY
    _, stdout, waiter = start_holder(python, '-c', script, @url, name, 'hold')
    assert_excluded_then_granted(lock, stdout, waiter)
    lock.synchronize do
      output, status = Open3.capture2(python, '-c', script, @url, name, 'try')
      assert status.success?
      assert_equal 'refused', output.strip
    end
  end

  def test_a_ruby_holder_and_redissons_lock_scripts_exclude_each_other
    name = TestSupport.unique('redisson')
    channel = "redisson_lock__channel:{#{name}}"
    redisson_owner = "#{SecureRandom.uuid}:1"
    lock = @client.lock(name)

    assert_nil @redis.eval(REDISSON_LOCK, keys: [name], argv: [30_000, redisson_owner]), 'Redisson took the free name'
    refute lock.try_lock, 'polylock is refused while Redisson holds it'
    waiter = Thread.new { lock.lock(wait: 60).tap { |taken| lock.unlock if taken } }
    sleep 0.3
    assert_equal 1, @redis.eval(REDISSON_UNLOCK, keys: [name, channel], argv: [0, 30_000, redisson_owner])
    assert waiter.value, 'the polylock waiter was granted after Redisson let go'

    lock.synchronize do
      assert_equal "#{@client.id}:#{Polylock::Owner.current}", @redis.hkeys(name).first, "Redisson's field layout"
      assert_equal '1', @redis.hget(name, @redis.hkeys(name).first)
      pttl = @redis.eval(REDISSON_LOCK, keys: [name], argv: [30_000, redisson_owner])
      assert_operator pttl, :>, 0, 'Redisson is refused (told the remaining lease) while Ruby holds it'
    end
    assert_nil @redis.eval(REDISSON_LOCK, keys: [name], argv: [30_000, redisson_owner]), 'free for Redisson after unlock'
    @redis.eval(REDISSON_UNLOCK, keys: [name, channel], argv: [0, 30_000, redisson_owner])
  end

  def test_a_ruby_holder_and_a_real_redisson_holder_exclude_each_other
    classpath = ENV.fetch('POLYLOCK_TEST_REDISSON_CLASSPATH', '')
    skip 'no Redisson classpath (run-tests.sh fetches it with Maven when mvn and java exist)' if classpath.empty?
    holder = File.join(__dir__, 'redisson', 'RedissonHolder.java')
    name = TestSupport.unique('real-redisson')
    lock = @client.lock(name)
    _, stdout, waiter = start_holder('java', '-cp', classpath, holder, @url, name, 'hold')
    assert_excluded_then_granted(lock, stdout, waiter)
    lock.synchronize do
      output, status = Open3.capture2('java', '-cp', classpath, holder, @url, name, 'try')
      assert status.success?
      assert_equal 'refused', output.strip
    end
    output, = Open3.capture2('java', '-cp', classpath, holder, @url, name, 'try')
    assert_equal 'taken', output.strip, 'free for Redisson after the Ruby unlock'
  end

  # A latch is Redisson's RCountDownLatch layout: the key NAME holds the count, gone at zero.
  def test_a_latch_keeps_redissons_layout
    name = TestSupport.unique('latch-layout')
    latch = @client.latch(name)
    assert latch.try_set_count(2)
    assert_equal '2', @redis.get(name)
    latch.count_down
    assert_equal '1', @redis.get(name)
    latch.count_down
    refute @redis.exists?(name), "the key goes at zero, as Redisson's script deletes it"
    @redis.set(name, 3) # a count Redisson's trySetCount wrote
    assert_equal 3, latch.count
    refute latch.try_set_count(1)
    @redis.del(name)
  end

  def test_a_ruby_latch_and_a_real_redisson_latch_are_one_latch
    classpath = ENV.fetch('POLYLOCK_TEST_REDISSON_CLASSPATH', '')
    skip 'no Redisson classpath (run-tests.sh fetches it with Maven when mvn and java exist)' if classpath.empty?
    helper = File.join(__dir__, 'redisson', 'RedissonLatch.java')
    redisson = ->(*args) { Open3.capture2('java', '-cp', classpath, helper, @url, *args).first.strip }
    name = TestSupport.unique('real-redisson-latch')
    latch = @client.latch(name)

    # Redisson sets the count; a Ruby waiter is released by Redisson's count-downs.
    assert_equal 'set', redisson.call(name, 'set', '2')
    assert_equal 2, latch.count, "Ruby reads Redisson's count"
    refute latch.try_set_count(9), 'and is refused while it counts down'
    waiter = Thread.new { latch.await(60) }
    assert_equal 'down', redisson.call(name, 'down')
    assert_equal 1, latch.count
    assert waiter.alive?, 'released at 1'
    assert_equal 'down', redisson.call(name, 'down')
    assert waiter.value, "released by Redisson's last count-down"

    # Ruby sets the count; a Redisson waiter is released by Ruby's count-downs.
    assert latch.try_set_count(2)
    assert_equal '2', redisson.call(name, 'count')
    assert_equal 'refused', redisson.call(name, 'set', '9')
    stdin, stdout, java = Open3.popen2('java', '-cp', classpath, helper, @url, name, 'await', '60000')
    stdin.close
    assert_equal "waiting\n", Timeout.timeout(60) { stdout.gets }
    latch.count_down
    sleep 0.3
    refute stdout.wait_readable(0), 'Redisson was released at 1'
    latch.count_down
    assert_equal "open\n", Timeout.timeout(60) { stdout.gets }, "Redisson's waiter is released by Ruby's count-down"
    assert_predicate java.value, :success?
  end

  def test_a_token_lock_and_a_redlock_style_set_nx_exclude_each_other
    name = TestSupport.unique('redlock')
    lock = @client.lock(name, kind: :token)
    assert @redis.set(name, SecureRandom.hex(20), nx: true, px: 30_000), 'the SET NX holder took the free name'
    refute lock.try_lock, 'polylock is refused while the SET NX holder has it'
    @redis.del(name)
    lock.synchronize do
      refute @redis.set(name, SecureRandom.hex(20), nx: true, px: 30_000), 'SET NX is refused while Ruby holds it'
    end
    assert @redis.set(name, 'x', nx: true, px: 1000), 'free after unlock'
  end
end
