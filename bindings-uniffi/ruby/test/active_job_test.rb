# frozen_string_literal: true

require_relative 'test_helper'
require 'logger'
require 'polylock/active_job'

# Polylock::ActiveJob::Singleton with real ActiveJob (Debian's ruby-activejob): at most one
# perform at a time per key across threads (the inline adapter run from several threads, and
# the async adapter's thread pool), side by side for other keys, skip and Timeout when the
# wait runs out, the lock given back when perform raises, on SQLite and Redis.
class ActiveJobSingletonTest < Minitest::Test
  ::ActiveJob::Base.logger = Logger.new(nil)

  # Records how many performs of a key overlap.
  class Tracker
    def initialize
      @mutex = Mutex.new
      @running = Hash.new(0)
      @most = Hash.new(0)
      @runs = Hash.new(0)
      @tokens = []
    end

    def during(key, token)
      @mutex.synchronize do
        @running[key] += 1
        @runs[key] += 1
        @tokens << token
        @most[key] = [@most[key], @running[key]].max
      end
      yield
    ensure
      @mutex.synchronize { @running[key] -= 1 }
    end

    def most(key) = @mutex.synchronize { @most[key] }
    def runs(key) = @mutex.synchronize { @runs[key] }
    def tokens = @mutex.synchronize { @tokens.dup }
  end

  TRACKER = Tracker.new
  URL = { url: nil }

  class ShipJob < ::ActiveJob::Base
    include Polylock::ActiveJob::Singleton
    polylock_singleton key: ->(order, _) { "rb-aj-orders:#{order}" }, client: -> { Polylock::ActiveJob.client_for(URL[:url]) }

    def perform(order, seconds)
      TRACKER.during(order, polylock_lock.fencing_token) { sleep seconds }
    end
  end

  class SkippingJob < ShipJob
    polylock_singleton key: ->(order, _) { "rb-aj-orders:#{order}" }, client: -> { Polylock::ActiveJob.client_for(URL[:url]) },
                       skip: true
  end

  class ImpatientJob < ShipJob
    polylock_singleton key: ->(order, _) { "rb-aj-orders:#{order}" }, client: -> { Polylock::ActiveJob.client_for(URL[:url]) },
                       wait: 0.2
  end

  class FailingJob < ::ActiveJob::Base
    include Polylock::ActiveJob::Singleton
    polylock_singleton client: -> { Polylock::ActiveJob.client_for(URL[:url]) }

    def perform(order)
      raise ArgumentError, "no order #{order}" if order.negative?

      polylock_lock.name
    end
  end

  def each_backend
    TestSupport.backends.slice('sqlite', 'redis').each do |backend, url|
      URL[:url] = url
      yield backend
    rescue Minitest::Assertion => e
      raise e.class, "#{backend}: #{e.message}"
    end
  end

  def test_one_perform_at_a_time_per_key_from_several_threads
    ::ActiveJob::Base.queue_adapter = :inline
    each_backend do
      order = TestSupport.unique('order')
      other = TestSupport.unique('order')
      threads = Array.new(3) { Thread.new { ShipJob.perform_later(order, 0.2) } }
      threads << Thread.new { ShipJob.perform_later(other, 0.4) }
      threads.each(&:join)
      assert_equal [1, 3], [TRACKER.most(order), TRACKER.runs(order)]
      assert_equal 1, TRACKER.runs(other)
    end
  end

  def test_the_async_adapter_runs_them_one_at_a_time
    ::ActiveJob::Base.queue_adapter = :async
    each_backend do
      order = TestSupport.unique('order')
      before = TRACKER.tokens.size
      4.times { ShipJob.perform_later(order, 0.1) }
      Timeout.timeout(30) { sleep 0.05 until TRACKER.runs(order) == 4 }
      assert_equal 1, TRACKER.most(order)
      tokens = TRACKER.tokens.drop(before).compact
      assert_equal [4, tokens.sort], [tokens.size, tokens], 'fencing tokens grow with each perform'
    end
  ensure
    ::ActiveJob::Base.queue_adapter = :inline
  end

  def test_skip_and_timeout_when_the_key_is_taken
    ::ActiveJob::Base.queue_adapter = :inline
    each_backend do
      order = TestSupport.unique('order')
      holder = Polylock::ActiveJob.client_for(URL[:url]).lock("rb-aj-orders:#{order}")
      taken = Queue.new
      release = Queue.new
      holding = Thread.new do
        holder.synchronize do
          taken << true
          release.pop
        end
      end
      taken.pop
      SkippingJob.perform_now(order, 0)
      assert_equal 0, TRACKER.runs(order), 'skipped, not run'
      error = assert_raises(Polylock::Error::Timeout) { ImpatientJob.perform_now(order, 0) }
      assert_match(/rb-aj-orders/, error.message)
      release << true
      holding.join
      SkippingJob.perform_now(order, 0)
      assert_equal 1, TRACKER.runs(order)
    end
  end

  def test_a_perform_that_raises_gives_the_lock_back
    ::ActiveJob::Base.queue_adapter = :inline
    each_backend do
      order = rand(1_000_000)
      assert_raises(ArgumentError) { FailingJob.perform_now(-order) }
      name = FailingJob.new(order).polylock_lock_name
      assert_match(/\Aactivejob:ActiveJobSingletonTest::FailingJob:\h{64}\z/, name)
      refute_equal name, FailingJob.new(order + 1).polylock_lock_name, 'other arguments, another lock'
      assert_equal name, FailingJob.perform_now(order)
      failing = FailingJob.new(-order).polylock_lock_name
      refute Polylock::ActiveJob.client_for(URL[:url]).lock(failing).locked?, 'given back after the exception'
    end
  end

  def test_bad_options_are_typed_errors
    [
      { key: 42 }, { client: 42 }, { wait: '5' }, { lease: :long }, { skip: 'yes' }
    ].each do |options|
      error = assert_raises(Polylock::Error::InvalidArgument, options.inspect) do
        Class.new(::ActiveJob::Base) do
          include Polylock::ActiveJob::Singleton
          polylock_singleton(**options)
        end
      end
      assert_match(/#{options.keys.first}/, error.message)
    end
  end
end
