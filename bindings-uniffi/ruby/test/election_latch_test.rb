# frozen_string_literal: true

require_relative 'test_helper'

# Leader elections and countdown latches, from Ruby, on SQLite and every server backend
# exported to the suite: one test class per backend (ElectionLatchRedisTest, ...).
module ElectionLatchContract
  def setup
    @clients = []
  end

  def teardown
    @clients.each(&:close)
  end

  def connect
    Polylock.connect(url).tap { |client| @clients << client }
  end

  # Poll the block until it is truthy (at most `seconds`); its value.
  def eventually(seconds = 30)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    loop do
      value = yield
      return value if value || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.05
    end
  end

  def test_one_leader_of_several_and_resign_hands_over_with_growing_terms
    name = TestSupport.unique('election')
    clients = Array.new(3) { connect }
    first = clients[0].election(name).campaign('node-0', timeout: 30)
    assert first.leader?
    assert_equal ['node-0', first.term], [clients[1].election(name).leader, clients[1].election(name).current_leader.term]
    won = Queue.new
    # These wait inside their campaigns with the GVL released: this thread goes on meanwhile.
    candidates = [1, 2].map do |index|
      Thread.new { won << [index, clients[index].election(name).campaign("node-#{index}", timeout: 60)] }
    end
    sleep 0.5
    assert won.empty?, 'a second leader while the first leads'
    terms = [first.term]
    first.resign
    refute first.leader?
    refute first.lost?
    2.times do
      index, leadership = Timeout.timeout(60) { won.pop }
      assert leadership.leader?
      assert_operator leadership.term, :>, terms.last, 'each new leader has a greater term'
      assert_equal Polylock::Leader.new("node-#{index}", leadership.term), clients[0].election(name).current_leader
      assert won.empty?, 'two leaders at once' if terms.size == 1
      terms << leadership.term
      leadership.resign
    end
    candidates.each(&:join)
    assert eventually { clients[0].election(name).leader.nil? }, 'nobody leads after the last resign'
  end

  def test_block_form_proclaim_observe_and_a_timed_out_campaign_leaves_nothing
    watcher = connect
    candidate = connect
    name = TestSupport.unique('election')
    changes = watcher.election(name).observe
    assert_nil changes.next, 'nobody leads yet'
    term = candidate.election(name).campaign('a', timeout: 30) do |leadership|
      assert_equal Polylock::Leader.new('a', leadership.term), changes.next
      leadership.proclaim('a-2')
      assert_equal 'a-2', leadership.value
      assert_equal Polylock::Leader.new('a-2', leadership.term), changes.next
      assert_equal 'a-2', watcher.election(name).leader
      assert_raises(Polylock::Error::Timeout) { watcher.election(name).campaign('b', timeout: 0.2) }
      @leadership = leadership
      leadership.term
    end
    refute @leadership.leader?, 'the block form resigned'
    assert_nil changes.next, 'nobody leads after the resign'
    assert_raises(Polylock::Error::NotOwner) { @leadership.proclaim('late') }
    # Nothing was left by the timed-out candidate: a try-once campaign wins at once.
    second = watcher.election(name).campaign("b\xff".b, timeout: 0)
    assert_operator second.term, :>, term
    assert_equal Polylock::Leader.new("b\xff".b, second.term), changes.next
    second.resign
    second.resign # twice is harmless
    changes.close
    assert_raises(StopIteration) { changes.next }
  end

  def test_observe_with_a_block_and_closing_an_observer_from_another_thread
    client = connect
    name = TestSupport.unique('election')
    leadership = client.election(name).campaign('seen', timeout: 30)
    seen = []
    client.election(name).observe do |leader|
      seen << leader
      break
    end
    assert_equal [Polylock::Leader.new('seen', leadership.term)], seen
    observer = client.election(name).observe
    assert_equal 'seen', observer.next.value
    reader = Thread.new { observer.next } # waits: the leader does not change
    sleep 0.3
    assert reader.alive?, 'next waits for a change'
    observer.close
    assert_raises(StopIteration) { Timeout.timeout(30) { reader.value } }
    assert_kind_of Enumerator, observer.each
    leadership.resign
    assert_raises(Polylock::Error::InvalidArgument) { client.election('') }
    assert_raises(Polylock::Error::InvalidArgument) { client.election(name).campaign('v', timeout: -1) }
  end

  def test_latch_count_downs_release_every_waiter_of_two_clients
    client = connect
    other = connect
    name = TestSupport.unique('latch')
    latch = client.latch(name)
    assert_equal name, latch.name
    assert latch.try_set_count(3)
    # The waiters wait with the GVL released; this thread counts down meanwhile.
    waiters = [client, other, client, other].map { |c| Thread.new { c.latch(name).await(60) } }
    [other, client].each_with_index do |counter, done|
      counter.latch(name).count_down
      assert_equal 2 - done, latch.count
    end
    sleep 0.1
    assert waiters.all?(&:alive?), 'a waiter left before the count reached zero'
    other.latch(name).count_down
    assert_equal [true] * 4, waiters.map(&:value)
    assert_equal 0, latch.count
  end

  def test_latch_refuses_a_count_while_counting_down_and_times_out_with_false
    latch = connect.latch(TestSupport.unique('latch'))
    assert_equal 0, latch.count
    assert latch.await(0), 'a latch never set is open'
    assert latch.try_set_count(2)
    refute latch.try_set_count(9), 'refused while counting down'
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    refute latch.await(0.2), 'the wait ran out'
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 0.19
    refute latch.wait(0)
    3.times { latch.count_down }
    assert_equal 0, latch.count, 'never below zero'
    assert latch.await(0.2)
    assert latch.try_set_count(4), 'taken once open'
    assert_equal 4, latch.count
    [0, -1].each { |bad| assert_raises(Polylock::Error::InvalidArgument) { latch.try_set_count(bad) } }
    assert_raises(Polylock::Error::InvalidArgument) { latch.await(-1) }
  end

  def test_latch_await_zero_raises_timeout_and_returns_once_zero
    latch = connect.latch(TestSupport.unique('latch'))
    assert_nil latch.await_zero(0), 'a latch never set is open'
    assert latch.try_set_count(1)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_raises(Polylock::Error::Timeout) { latch.await_zero(0.3) }
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 0.25
    assert_raises(Polylock::Error::InvalidArgument) { latch.await_zero(-1) }
    waiter = Thread.new { latch.await_zero(30) }
    latch.count_down
    assert_nil waiter.value
  end

  def test_try_campaign_returns_nil_while_another_leads
    name = TestSupport.unique('try-campaign')
    leader = connect.election(name).try_campaign('a', timeout: 30)
    refute_nil leader
    other = connect.election(name)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_nil other.try_campaign('b', timeout: 0.3)
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 0.25
    assert_raises(Polylock::Error::InvalidArgument) { other.try_campaign('b', timeout: -1) }
    leader.resign
    follower = other.try_campaign('c', timeout: 10)
    refute_nil follower, 'the timed-out candidacy left nothing behind'
    assert_operator follower.term, :>, leader.term
    follower.resign
  end
end

TestSupport.backends.each do |backend, url|
  class_name = "ElectionLatch#{backend.split('_').map(&:capitalize).join}Test"
  Object.const_set(class_name, Class.new(Minitest::Test) do
    include ElectionLatchContract
    define_method(:url) { url }
  end)
end

# RedLock (independent Redis servers voting) has no elections and no latches: both are
# refused when the handle is made.
class ElectionLatchRedLockTest < Minitest::Test
  def test_redlock_refuses_elections_and_latches
    redis = ENV.fetch('POLYLOCK_TEST_REDIS_URL', '')
    skip 'POLYLOCK_TEST_REDIS_URL is not set' if redis.empty?
    server = redis.sub(%r{\Aredis://}, '').split(%r{[/?]}).first
    # One server: a URL naming it three times is refused (issue 35).
    Polylock.connect("redlock://#{server}") do |client|
      assert_raises(Polylock::Error::Unsupported) { client.election('x') }
      assert_raises(Polylock::Error::Unsupported) { client.latch('x') }
    end
  end
end
