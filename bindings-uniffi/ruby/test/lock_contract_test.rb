# frozen_string_literal: true

require_relative 'test_helper'

# The lock contract, from Ruby, on SQLite and every server backend exported to the suite:
# one test class per backend (LockContractRedisTest, ...).
module LockContract
  def setup
    @client = Polylock.connect(url)
  end

  def teardown
    @client&.close
  end

  def lock(what = 'lock')
    @client.lock(TestSupport.unique(what))
  end

  def test_threads_exclude_each_other_and_tokens_grow_in_grant_order
    lock = lock('exclusion')
    inside = 0
    most_inside = 0
    tokens = []
    threads = Array.new(4) do
      Thread.new do
        5.times do
          lock.synchronize(wait: 60) do
            inside += 1
            most_inside = [most_inside, inside].max
            tokens << lock.fencing_token
            sleep 0.002
            inside -= 1
          end
        end
      end
    end
    threads.each(&:join)
    assert_equal 1, most_inside, 'two threads were inside at once'
    assert_equal 20, tokens.size
    assert_equal tokens.sort.uniq, tokens, 'each grant has a token greater than every earlier one'
  end

  def test_reentrant_per_thread_and_only_for_that_thread
    lock = lock('reentrant')
    assert lock.lock
    assert lock.lock(wait: 0), 're-entry by the holder succeeds at once'
    assert_equal 2, lock.hold_count
    assert lock.owned?
    refute TestSupport.in_thread { lock.try_lock }, 'another thread may not enter'
    lock.unlock
    assert lock.owned?, 'one hold is left'
    lock.unlock
    refute lock.owned?
    assert_equal 0, lock.hold_count
    assert TestSupport.in_thread {
      taken = lock.try_lock
      lock.unlock if taken
      taken
    }, 'free for another thread once released as often as taken'
  end

  def test_unlock_from_another_thread_is_not_owner
    lock = lock('not-owner')
    lock.synchronize do
      error = assert_raises(Polylock::Error::NotOwner) { TestSupport.in_thread { lock.unlock } }
      assert_equal 'NOT_OWNER', error.kind
      assert lock.owned?, 'the refused unlock changed nothing'
    end
    assert_raises(Polylock::Error::NotOwner) { lock.unlock }
  end

  def test_a_wait_that_runs_out_returns_false_and_synchronize_raises_timeout
    lock = lock('timeout')
    lock.synchronize do
      refute TestSupport.in_thread { lock.lock(wait: 0.3) }
      assert_raises(Polylock::Error::Timeout) { TestSupport.in_thread { lock.synchronize(wait: 0.2) { flunk 'entered' } } }
    end
  end

  def test_lock_bang_raises_timeout_and_keeps_the_hold
    lock = lock('bang')
    token = lock.lock!(wait: 5)
    assert lock.owned?
    assert_equal token, lock.fencing_token
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_raises(Polylock::Error::Timeout) { TestSupport.in_thread { lock.lock!(wait: 0.3) } }
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 0.25
    assert_raises(Polylock::Error::Timeout) { TestSupport.in_thread { lock.lock!(wait: 0) } }
    assert_raises(Polylock::Error::InvalidArgument) { TestSupport.in_thread { lock.lock!(wait: -1) } }
    lock.unlock
    refute lock.locked?
    later = TestSupport.in_thread do
      taken = lock.lock!(wait: 5, lease: 30)
      [taken, lock.owned?]
    end
    assert_operator later[0], :>, token
    assert later[1], 'lock! keeps the hold after it returns'
    assert lock.locked?, 'held in the store until its owner unlocks (or the client closes)'
  end

  STATUS_FIELDS = %w[name kind backend held holder fencing_token token_counter remaining_lease_ms lease_expires waiters
                     layout details].freeze

  def test_status_list_and_force_unlock_from_another_client
    # SQL's default kind is a session lock, which another session can neither list nor break:
    # there the lease kind is the one whose rows the store shows.
    kind = url.start_with?('postgres', 'mysql', 'mariadb') ? :lease : nil
    name = TestSupport.unique('admin')
    lock = @client.lock(name, kind: kind)
    refute @client.status(name, kind: kind)['held']
    lock.lock!(wait: 5)
    Polylock.connect(url) do |other|
      status = other.status(name, kind: kind)
      assert_equal STATUS_FIELDS, status.keys
      assert_equal [name, lock.kind.to_s, true], status.values_at('name', 'kind', 'held')
      if url.start_with?('redis+cluster:', 'rediss+cluster:')
        # A Redis Cluster's keys are spread over masters one script cannot scan.
        assert_raises(Polylock::Error::Unsupported) { other.list(name) }
      else
        assert_equal [name], other.list(name).select { |entry| entry['held'] }.map { |entry| entry['name'] }
        assert_equal [], other.list("#{name}-none")
      end
      assert other.force_unlock(name, kind: kind), 'there was a hold to break'
      refute other.status(name, kind: kind)['held']
      refute other.force_unlock(name, kind: kind), 'nothing left to break'
    end
    assert_raises(Polylock::Error::Lost) { lock.unlock }
    assert_raises(Polylock::Error::InvalidArgument) { @client.status(name, kind: :nonsense) }
  end

  def test_a_new_thread_never_inherits_a_dead_threads_hold
    lock = lock('dead-thread')
    assert TestSupport.in_thread { lock.lock(lease: 30) }
    refute lock.owned?
    refute TestSupport.in_thread { lock.try_lock }, 'a fresh thread is another owner'
    # The dead thread's hold ends when the client closes (teardown).
  end

  def test_fencing_tokens_grow_across_holds_and_clients
    lock = lock('fencing')
    tokens = Array.new(3) { lock.synchronize { lock.fencing_token } }
    Polylock.connect(url) do |other|
      tokens << other.lock(lock.name).synchronize { other.lock(lock.name).fencing_token }
    end
    assert_equal tokens.sort.uniq, tokens
    assert_nil lock.fencing_token, 'no token without a hold'
  end

  def test_an_explicit_lease_ends_the_hold_and_the_lost_block_is_called
    lock = lock('lease')
    lost = Queue.new
    assert lock.lock(lease: 1)
    lock.on_lost { |reason| lost << reason }
    assert TestSupport.in_thread {
      taken = lock.lock(wait: 30)
      lock.unlock if taken
      taken
    }, 'another thread gets it once the lease has run out'
    reason = Timeout.timeout(30) { lost.pop }
    assert_match(/lease|no longer|taken|expired/, reason)
    assert lock.lost?
    refute lock.owned?
    assert_raises(Polylock::Error::Lost, Polylock::Error::NotOwner) { lock.unlock }
  end

  def test_a_waiter_given_up_by_thread_kill_leaves_nothing_held
    lock = lock('cancel')
    waiting = nil
    lock.synchronize do
      waiting = Thread.new { lock.lock }
      sleep 0.3 until waiting.status == 'sleep' || !waiting.alive?
      sleep 0.2
      waiting.kill.join
    end
    assert TestSupport.in_thread {
      taken = lock.lock(wait: 30)
      lock.unlock if taken
      taken
    }, 'the killed waiter left nothing held'
  end

  # uniffi's synchronous calls keep the GVL; polylock's waits are async exports, which Ruby
  # waits for with the GVL released. If they held it, the holder below could never run to
  # unlock, and the waiter would end false after its whole wait.
  def test_other_threads_run_while_one_waits
    lock = lock('gvl')
    order = Queue.new
    assert lock.lock
    waiter = Thread.new do
      taken = lock.lock(wait: 60)
      order << :waiter_got_it
      lock.unlock if taken
      taken
    end
    sleep 0.3 # the waiter is inside its native wait now
    counted = 0
    100_000.times { counted += 1 } # Ruby work on this thread while the waiter waits
    order << :holder_ran
    lock.unlock
    assert waiter.value, 'the waiter got the lock after the holder let go'
    assert_equal %i[holder_ran waiter_got_it], [order.pop, order.pop]
    assert_equal 100_000, counted
  end
end

TestSupport.backends.each do |backend, url|
  class_name = "LockContract#{backend.split('_').map(&:capitalize).join}Test"
  Object.const_set(class_name, Class.new(Minitest::Test) do
    include LockContract
    define_method(:url) { url }
  end)
end
