# frozen_string_literal: true

require_relative 'test_helper'

# Value#watch (the core's kit::value_watch): a change made by another client is seen, a wait
# bounded by a timeout returns nil with nothing lost, a delete is :deleted, #close from another
# Thread ends a wait in progress, and the block and Enumerable forms, on every backend.
class ValueWatchTest < Minitest::Test
  # A writer and a watcher on two clients of `url`, for each backend.
  def each_backend
    TestSupport.backends.each do |backend, url|
      Polylock.connect(url) do |writer|
        Polylock.connect(url) do |watcher|
          yield writer, watcher, backend
        rescue Minitest::Assertion => e
          raise e.class, "#{backend}: #{e.message}"
        end
      end
    end
  end

  def seconds
    start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    result = yield
    [result, Process.clock_gettime(Process::CLOCK_MONOTONIC) - start]
  end

  def test_a_change_from_another_client_is_seen_and_a_delete_is_deleted
    each_backend do |writer, watcher, _|
      name = TestSupport.unique('watch')
      mine = writer.value(name)
      watch = watcher.value(name).watch
      begin
        assert_nil watch.current
        version = mine.create('x')
        change = watch.changed(timeout: 10)
        assert_instance_of Polylock::VersionedValue, change
        assert_equal ['x', version], [change.value, change.version]
        assert_equal Encoding::BINARY, change.value.encoding
        assert_equal change, watch.current

        version = mine.compare_and_set(version, "y\xFF".b)
        change = watch.changed(timeout: 10)
        assert_equal ["y\xFF".b, version], [change.value, change.version]

        lock = writer.lock(TestSupport.unique('watch-fence'))
        lock.synchronize do
          version = mine.write_fenced(lock.fencing_token, 'z')
          change = watch.changed(timeout: 10)
          assert_equal ['z', version, lock.fencing_token], [change.value, change.version, change.fencing_token]
        end

        mine.delete(version)
        assert_equal :deleted, watch.changed(timeout: 10)
        assert_nil watch.current
      ensure
        watch.close
      end
    end
  end

  def test_a_bounded_wait_with_no_change_returns_nil_and_loses_nothing
    each_backend do |writer, watcher, _|
      name = TestSupport.unique('watch')
      watch = watcher.value(name).watch
      begin
        change, took = seconds { watch.changed(timeout: 0.3) }
        assert_nil change
        assert_operator took, :>=, 0.29
        assert_operator took, :<, 5
        assert_nil watch.changed(timeout: 0)
        refute_predicate watch, :closed?

        # Written while nobody waits: the next wait's answer.
        version = writer.value(name).create('later')
        sleep 0.2
        change = watch.changed(timeout: 10)
        assert_equal ['later', version], [change.value, change.version]
        assert_nil watch.changed(timeout: 0.1), 'a change is seen once'
      ensure
        watch.close
      end
    end
  end

  def test_close_from_another_thread_ends_a_wait_in_progress
    each_backend do |_, watcher, _|
      watch = watcher.value(TestSupport.unique('watch')).watch
      waiting = Thread.new { seconds { watch.changed } }
      sleep 0.3
      assert waiting.alive?, 'the wait returned before any change or close'
      watch.close
      change, took = Timeout.timeout(10) { waiting.value }
      assert_nil change
      assert_operator took, :>=, 0.29
      assert_predicate watch, :closed?
      assert_nil Timeout.timeout(5) { watch.changed(timeout: 30) }, 'every wait after close ends at once'
      watch.close # twice is harmless
    end
  end

  def test_the_block_form_and_each_yield_every_change_until_closed
    each_backend do |writer, watcher, _|
      name = TestSupport.unique('watch')
      mine = writer.value(name)
      seen = []
      shown = Queue.new
      # Written after the block form has armed its watch and waits; the delete once the
      # create was seen (a create and a delete close together may show as no change at all).
      writing = Thread.new do
        sleep 0.3
        version = mine.create('a')
        shown.pop
        mine.delete(version)
      end
      result = watcher.value(name).watch do |change|
        seen << change
        shown << true
        break :done if change == :deleted
      end
      assert_equal :done, result
      writing.join
      assert_equal 2, seen.size, seen.inspect
      assert_equal 'a', seen.first.value
      assert_equal :deleted, seen.last

      watch = watcher.value(name).watch
      assert_kind_of Enumerable, watch
      shown = Queue.new
      closer = Thread.new do
        mine.create('b')
        shown.pop
        watch.close
      end
      changes = Timeout.timeout(20) do
        watch.each.map do |change|
          shown << true
          change.value
        end
      end
      closer.join
      assert_equal ['b'], changes
      assert_predicate watch, :closed?
    end
  end

  def test_bad_timeouts_and_a_closed_client_are_typed_errors
    client = Polylock.connect(TestSupport.backends.fetch('sqlite'))
    watch = client.value(TestSupport.unique('watch')).watch
    [-1, Float::NAN, Float::INFINITY].each do |bad|
      error = assert_raises(Polylock::Error::InvalidArgument) { watch.changed(timeout: bad) }
      assert_match(/wait/, error.message)
    end
    client.close
    assert_raises(Polylock::Error::Connection) { watch.changed(timeout: 5) }
    watch.close
  end
end
