# frozen_string_literal: true

require_relative 'test_helper'

# Read-write locks and semaphores with the same idioms, on every backend that offers them
# (the others must refuse with Error::Unsupported when the handle is made).
module RwAndSemaphore
  def setup
    @client = Polylock.connect(url)
  end

  def teardown
    @client&.close
  end

  def rw_lock
    @client.rw_lock(TestSupport.unique('rw'))
  rescue Polylock::Error::Unsupported => e
    skip "#{url.split(':').first} offers no read-write locks (#{e.message})"
  end

  def semaphore(permits)
    @client.semaphore(TestSupport.unique('sem'), permits)
  rescue Polylock::Error::Unsupported => e
    skip "#{url.split(':').first} offers no semaphores (#{e.message})"
  end

  def test_readers_share_and_a_writer_excludes
    rw = rw_lock
    rw.read.synchronize do
      assert TestSupport.in_thread {
        taken = rw.read.lock(wait: 5)
        rw.read.unlock if taken
        taken
      }, 'a second reader enters'
      refute TestSupport.in_thread { rw.write.lock(wait: 0.2) }, 'a writer waits for the reader'
      assert_raises(Polylock::Error::InvalidArgument) { rw.write.lock(wait: 0) }
    end
    rw.write.synchronize do
      assert rw.read.lock(wait: 0), 'the writer may also read'
      rw.read.unlock
      refute TestSupport.in_thread { rw.read.lock(wait: 0.2) }, 'readers wait for the writer'
      assert rw.write.fencing_token
    end
  end

  def test_the_waiting_forms_of_a_side_and_a_permit_raise_timeout
    rw = rw_lock
    rw.write.lock!(wait: 5)
    assert_raises(Polylock::Error::Timeout) { TestSupport.in_thread { rw.read.lock!(wait: 0.2) } }
    rw.write.unlock
    assert TestSupport.in_thread {
      rw.read.lock!(wait: 5)
      rw.read.unlock
      true
    }
    sem = semaphore(1)
    permit = sem.acquire!(wait: 5)
    assert_kind_of Polylock::Permit, permit
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_raises(Polylock::Error::Timeout) { sem.acquire!(wait: 0.3) }
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 0.25
    assert_raises(Polylock::Error::InvalidArgument) { sem.acquire!(wait: -1) }
    permit.release
    again = sem.acquire!(wait: 5, lease: 30)
    assert_operator again.fencing_token, :>, permit.fencing_token
    assert_nil sem.try_acquire, 'the waiting form keeps its permit'
    again.release
  end

  def test_permits_are_counted_owned_and_released_by_any_thread
    sem = semaphore(2)
    first = sem.acquire(wait: 5)
    second = sem.acquire(wait: 5)
    assert first && second
    assert_operator second.fencing_token, :>, first.fencing_token
    assert_nil sem.acquire(wait: 0.2), 'no third permit'
    TestSupport.in_thread { first.release }
    assert_raises(Polylock::Error::NotOwner) { first.release }
    third = sem.synchronize(wait: 5) { |permit| permit.fencing_token }
    assert_operator third, :>, second.fencing_token
    second.release
    assert_equal 2, sem.permits
  end
end

TestSupport.backends.each do |backend, url|
  class_name = "RwAndSemaphore#{backend.split('_').map(&:capitalize).join}Test"
  Object.const_set(class_name, Class.new(Minitest::Test) do
    include RwAndSemaphore
    define_method(:url) { url }
  end)
end
