# frozen_string_literal: true

require_relative 'test_helper'

# Segment IDs, Snowflake on a leased worker id, versioned values with fenced writes,
# idempotency keys (run and step by step) and multi-locks, on every backend.
class PrimitivesTest < Minitest::Test
  def each_backend
    TestSupport.backends.each do |backend, url|
      Polylock.connect(url) do |client|
        yield client, backend
      rescue Minitest::Assertion => e
        raise e.class, "#{backend}: #{e.message}"
      end
    end
  end

  def test_segment_ids_never_repeat
    each_backend do |client, _|
      tag = TestSupport.unique('segment')
      first = client.segment(tag, step: 100)
      second = client.segment(tag)
      ids = first.next_ids(300) + second.next_ids(300) + [first.next_id, second.next_id]
      assert_equal ids.size, ids.uniq.size
      refute_includes ids, 0
      assert_raises(Polylock::Error::InvalidArgument) { client.segment('') }
    end
  end

  def test_leased_snowflake
    each_backend do |client, _|
      generator = client.snowflake
      worker = generator.worker_id
      epoch = generator.epoch
      assert_operator worker, :<=, 1023
      assert_raises(Polylock::Error::Timeout) { client.snowflake(worker_id: worker) }
      ids = generator.next_ids(200)
      assert_equal ids.sort, ids
      assert_equal worker, (ids.first >> 12) & 1023
      generator.close
      again = client.snowflake(worker_id: worker)
      assert_operator again.epoch, :>, epoch
      assert_operator again.next_id, :>, ids.last
      again.close
      assert_raises(Polylock::Error::InvalidArgument) { client.snowflake(worker_id: 1024) }
    end
  end

  def test_values_conflicts_and_fenced_writes
    each_backend do |client, _|
      value = client.value(TestSupport.unique('value'))
      assert_nil value.get
      v1 = value.create("one\x00\xff".b)
      conflict = assert_raises(Polylock::Error::Conflict) { value.create('again') }
      assert_equal "one\x00\xff".b, conflict.current_value
      assert_equal v1, conflict.current_version
      v2 = value.compare_and_set(v1, 'two')
      stale = assert_raises(Polylock::Error::Conflict) { value.compare_and_set(v1, 'dos') }
      assert_equal ['two', v2], [stale.current_value, stale.current_version]
      value.write_fenced(10, 'ten')
      fenced = assert_raises(Polylock::Error::Fenced) { value.write_fenced(9, 'nine') }
      assert_equal 10, fenced.winning_token
      found = value.get
      assert_equal ['ten', 10], [found.value, found.fencing_token]
      value.delete(found.version)
      gone = assert_raises(Polylock::Error::Conflict) { value.delete(found.version) }
      assert_nil gone.current_value
      assert_nil value.get
    end
  end

  def test_idempotency_run_once_replay_and_mismatch
    each_backend do |client, _|
      keys = client.idempotency(TestSupport.unique('idem'))
      ran = 0
      lock = Mutex.new
      results = Array.new(4) do
        Thread.new do
          keys.run('pay-1', { 'amount' => 10, 'card' => 'x' }) do |token|
            lock.synchronize { ran += 1 }
            sleep 0.1
            { 'paid' => true, 'token' => token }
          end
        rescue Polylock::Error::InProgress => e
          e.retry_after.positive? ? :in_progress : e
        end
      end.map(&:value)
      assert_equal 1, ran
      results.each { |result| assert_includes [{ 'paid' => true, 'token' => 1 }, :in_progress], result }
      # Key order of a structured fingerprint does not matter; the JSON result is replayed.
      replay = keys.run('pay-1', { 'card' => 'x', 'amount' => 10 }) { flunk 'ran again' }
      assert_equal({ 'paid' => true, 'token' => 1 }, replay)
      assert_raises(Polylock::Error::Mismatch) { keys.run('pay-1', 'other') { flunk 'ran' } }
      # A failing block abandons the key: the retry runs, with a greater token.
      assert_raises(RuntimeError) { keys.run('pay-2', 'fp') { raise 'declined' } }
      assert_equal "token 2\xff".b, keys.run('pay-2', 'fp') { |token| "token #{token}\xff".b }
      assert_equal "token 2\xff".b, keys.run('pay-2', 'fp') { flunk 'ran again' }
    end
  end

  def test_idempotency_step_by_step_takeover
    each_backend do |client, _|
      keys = client.idempotency(TestSupport.unique('takeover'), in_progress_ttl: 0.3)
      first = keys.begin('job', 'fp')
      assert_equal [:acquired, 1], [first.outcome, first.ticket.token]
      busy = keys.begin('job', 'fp')
      assert_equal :in_progress, busy.outcome
      assert_operator busy.retry_after, :>, 0
      sleep 0.45
      second = keys.begin('job', 'fp')
      assert_equal [:acquired, 2], [second.outcome, second.ticket.token]
      assert_raises(Polylock::Error::Lost) { first.ticket.complete('late') }
      second.ticket.complete('fresh')
      replay = keys.begin('job', 'fp')
      assert_equal [:replay, 'fresh'], [replay.outcome, replay.response]
      assert_equal :mismatch, keys.begin('job', 'other').outcome
    end
  end

  def test_multi_lock_opposite_orders_and_one_deadline
    each_backend do |client, _|
      base = TestSupport.unique('multi')
      names = %w[a b c].map { |part| "#{base}:#{part}" }
      inside = 0
      overlaps = 0
      guard = Mutex.new
      threads = [names, names.reverse].flat_map do |order|
        Array.new(2) do
          Thread.new do
            multi = client.multi_lock(*order)
            5.times do
              multi.synchronize(wait: 60) do
                guard.synchronize { overlaps += 1 if (inside += 1) > 1 }
                guard.synchronize { inside -= 1 }
              end
            end
          end
        end
      end
      threads.each(&:join)
      assert_equal 0, overlaps
      multi = client.multi_lock(names.reverse)
      parts = multi.lock(wait: 5)
      assert_equal names, parts.map(&:name)
      parts.each { |part| assert_operator part.fencing_token, :>, 0 }
      assert multi.owned?
      # Another Thread meets the held parts: one short wait for the whole set, nothing held.
      free_name = "#{base}:d"
      other = TestSupport.in_thread { client.multi_lock(free_name, names[1]).lock(wait: 0.15) }
      assert_nil other
      assert TestSupport.in_thread { client.lock(free_name).try_lock.tap { |ok| client.lock(free_name).unlock if ok } }
      multi.unlock
      refute multi.owned?
      assert_raises(Polylock::Error::NotOwner) { multi.unlock }
      assert_raises(Polylock::Error::InvalidArgument) { client.multi_lock(names[0], names[0]) }
    end
  end
end
