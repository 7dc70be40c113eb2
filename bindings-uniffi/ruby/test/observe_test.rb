# frozen_string_literal: true

require_relative 'test_helper'
require_relative 'private_redis'
require 'logger'
require 'open3'
require 'rbconfig'
require 'stringio'
require 'uri'

# Issue 23 in Ruby: the core's events in a Ruby Logger (Polylock.logger, Polylock.log_level),
# and the metrics as Hashes and Prometheus text, against real backends.
module ObserveSupport
  # The lines of `io` that name `name`.
  def self.lines_naming(io, name)
    io.string.lines.grep(/name=#{Regexp.escape(name)}\b/)
  end

  # The series of `kind` in a metrics Hash, for `backend` (nil: the only backend there).
  def self.series(metrics, backend, kind)
    metrics['series'].find { |s| s['kind'] == kind && (backend.nil? || s['backend'] == backend) }
  end

  # Run `script` in a new Ruby with `env`, loading polylock as this process did.
  def self.ruby(script, env)
    lib = File.dirname($LOADED_FEATURES.grep(%r{/polylock\.rb\z}).first)
    clean = { 'POLYLOCK_LOG' => nil, 'DEBUG' => nil }.merge(env)
    Open3.capture3(clean, RbConfig.ruby, '-I', lib, '-e', script)
  end
end

module ObserveContract
  def setup
    @io = StringIO.new
    @logger = Logger.new(@io)
    Polylock.log_level = :debug
    Polylock.logger = @logger
  end

  def teardown
    Polylock.logger = nil
    Polylock.log_level = :warn
    Polylock.metrics_enabled = true
  end

  def test_an_acquire_and_a_release_are_records_with_the_lock_name
    name = TestSupport.unique('log')
    Polylock.connect(url) do |client|
      client.lock(name).synchronize { nil }
    end
    Polylock.flush_logs
    lines = ObserveSupport.lines_naming(@io, name)
    assert lines.any? { |l| l =~ /DEBUG -- polylock: acquired op=acquire name=#{name} backend=\S+ kind=reentrant outcome=acquired/ }, lines.inspect
    assert lines.any? { |l| l =~ /DEBUG -- polylock: released op=release name=#{name} .*outcome=released/ }, lines.inspect
  end

  def test_metrics_move_after_acquire_and_release
    name = TestSupport.unique('metrics')
    Polylock.connect(url) do |client|
      assert_equal [], client.metrics['series']
      lock = client.lock(name)
      lock.lock
      lock.lock
      refute TestSupport.in_thread { lock.try_lock }
      lock.unlock
      lock.unlock

      mine = client.metrics
      series = ObserveSupport.series(mine, nil, 'reentrant')
      refute_nil series, mine.inspect
      assert_equal({ 'acquired' => 1, 'reentered' => 1, 'timeout' => 1, 'error' => 0, 'cancelled' => 0 }, series['acquires'])
      assert_equal 1, series['releases']
      assert_equal 1, series['hold_time']['count']
      assert_equal mine['buckets_le_seconds'].size + 1, series['acquire_wait']['buckets'].size
      assert_operator mine['backends'].find { |b| b['backend'] == series['backend'] }['connects'], :>=, 1

      # The process's counts include this client's, in the Hash and in the Prometheus text.
      process = ObserveSupport.series(Polylock.metrics, series['backend'], 'reentrant')
      assert_operator process['acquires']['acquired'], :>=, 1
      acquired = process['acquires']['acquired']
      assert_includes Polylock.prometheus_text,
                      %(polylock_acquires_total{backend="#{series['backend']}",kind="reentrant",outcome="acquired"} #{acquired}\n)

      # Counting off: nothing moves; on again: it does.
      Polylock.metrics_enabled = false
      refute Polylock.metrics_enabled?
      lock.synchronize { nil }
      assert_equal 1, ObserveSupport.series(client.metrics, nil, 'reentrant')['acquires']['acquired']
      Polylock.metrics_enabled = true
      lock.synchronize { nil }
      assert_equal 2, ObserveSupport.series(client.metrics, nil, 'reentrant')['acquires']['acquired']
      assert_equal acquired + 1, ObserveSupport.series(Polylock.metrics, series['backend'], 'reentrant')['acquires']['acquired']
    end
  end
end

TestSupport.backends.each do |backend, url|
  class_name = "Observe#{backend.split('_').map(&:capitalize).join}Test"
  Object.const_set(class_name, Class.new(Minitest::Test) do
    include ObserveContract
    define_method(:url) { url }
  end)
end

# What does not depend on the backend: levels, the drain, the queue's bound, no credentials,
# and the defaults a new process starts with.
class ObserveLoggingTest < Minitest::Test
  def setup
    @io = StringIO.new
    @dir = Dir.mktmpdir('polylock-rb-log-')
    @url = "sqlite://#{File.join(@dir, 'log.db')}"
  end

  def teardown
    Polylock.logger = nil
    Polylock.log_level = :warn
    FileUtils.remove_entry(@dir)
  end

  def take_and_give_back(name, url = @url)
    Polylock.connect(url) { |client| client.lock(name).synchronize { nil } }
  end

  def test_records_reach_the_logger_within_the_drain_interval_without_a_flush
    Polylock.log_level = :debug
    Polylock.logger = Logger.new(@io)
    name = TestSupport.unique('drain')
    take_and_give_back(name)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    sleep 0.01 while ObserveSupport.lines_naming(@io, name).size < 2 && Process.clock_gettime(Process::CLOCK_MONOTONIC) - started < 3
    waited = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    assert_equal 2, ObserveSupport.lines_naming(@io, name).size, @io.string
    assert_operator waited, :<, 1.0, 'the drain thread hands records on every 0.1 s'
  end

  def test_level_changes_take_effect
    Polylock.logger = Logger.new(@io)
    assert_equal :warn, Polylock.log_level
    quiet = TestSupport.unique('warn')
    take_and_give_back(quiet)
    Polylock.flush_logs
    assert_empty ObserveSupport.lines_naming(@io, quiet), 'a successful acquire is debug, below warn'

    Polylock.log_level = 'INFO'
    assert_equal :info, Polylock.log_level
    assert_equal 'info', PolylockUniffi.log_level
    info = TestSupport.unique('info')
    take_and_give_back(info)
    Polylock.flush_logs
    assert_empty ObserveSupport.lines_naming(@io, info)
    assert_match(/INFO -- polylock: connected op=connect backend=sqlite/, @io.string)

    Polylock.log_level = :debug
    loud = TestSupport.unique('debug')
    take_and_give_back(loud)
    Polylock.flush_logs
    assert_equal 2, ObserveSupport.lines_naming(@io, loud).size

    Polylock.log_level = :off
    assert_equal 'off', PolylockUniffi.log_level
    @io.truncate(0)
    @io.rewind
    take_and_give_back(TestSupport.unique('off'))
    Polylock.flush_logs
    assert_equal '', @io.string, 'level off: no record at all'
  end

  def test_a_bad_level_name_is_invalid_argument_and_changes_nothing
    Polylock.log_level = :info
    [:loud, 'verbose', 3].each do |bad|
      error = assert_raises(Polylock::Error::InvalidArgument) { Polylock.log_level = bad }
      assert_match(/off, error, warn, info, debug, trace/, error.message)
    end
    assert_equal :info, Polylock.log_level
    Polylock.log_level = 'Warning'
    assert_equal :warn, Polylock.log_level
  end

  def test_without_a_logger_nothing_is_routed_or_queued
    Polylock.logger = nil
    Polylock.log_level = :trace
    assert_equal 'off', PolylockUniffi.log_level
    name = TestSupport.unique('nologger')
    take_and_give_back(name)
    queued = PolylockUniffi.log_drain(100_000)
    assert_empty queued.select { |entry| entry.line.include?(name) }
  end

  def test_a_logger_set_to_nil_stops_the_records
    Polylock.log_level = :debug
    Polylock.logger = Logger.new(@io)
    before = TestSupport.unique('before')
    take_and_give_back(before)
    Polylock.logger = nil
    # What was queued went to the logger that was set.
    assert_equal 2, ObserveSupport.lines_naming(@io, before).size
    after = TestSupport.unique('after')
    take_and_give_back(after)
    Polylock.flush_logs
    assert_empty ObserveSupport.lines_naming(@io, after)
  end

  def test_a_full_queue_drops_its_oldest_and_the_logger_is_told
    Polylock.log_level = :debug
    Polylock.logger = Logger.new(@io)
    dropped = Polylock.log_records_dropped
    # Hold the drain back (its thread waits for this monitor) while more records than the
    # queue keeps are logged: 6000 acquisitions and releases on mem://, two records each.
    Polylock::Logging.instance_variable_get(:@monitor).synchronize do
      Polylock.connect('mem://') do |client|
        lock = client.lock(TestSupport.unique('flood'))
        6000.times { lock.synchronize { nil } }
      end
    end
    Polylock.flush_logs
    assert_operator Polylock.log_records_dropped - dropped, :>=, 2000
    assert_match(/WARN -- polylock: \d+ log records dropped/, @io.string)
  end

  def test_a_password_never_appears_in_a_record
    skip 'redis-server is not installed' unless system('command -v redis-server >/dev/null')

    secret = "rb-s3cret-#{SecureRandom.hex(4)}"
    wrong = "rb-wrong-#{SecureRandom.hex(4)}"
    server = PrivateRedis.start(password: secret)
    Polylock.log_level = :trace
    Polylock.logger = Logger.new(@io)
    name = TestSupport.unique('secret')
    take_and_give_back(name, server.url)
    Polylock.redlock(["redis://:#{secret}@127.0.0.1:#{server.port}"], name) { |lock| lock.synchronize { nil } }
    error = assert_raises(Polylock::Error) { Polylock.connect("redis://:#{wrong}@127.0.0.1:#{server.port}") }
    refute_includes error.message, wrong
    secrets = [secret, wrong]
    # The shared servers with credentials of their own, where they are exported.
    %w[POLYLOCK_TEST_REDIS_TLS_URL POLYLOCK_TEST_ETCD_TLS_URL].each do |var|
      url = ENV.fetch(var, '')
      next if url.empty?

      password = URI.decode_www_form_component(url[%r{://[^:/@]*:([^@]*)@}, 1].to_s)
      secrets << password unless password.empty?
      take_and_give_back(TestSupport.unique('tls'), url)
    end
    Polylock.flush_logs
    log = @io.string
    assert_match(%r{connected op=connect backend=redis url=redis://:\*\*\*@127\.0\.0\.1:#{server.port}}, log)
    assert_match(/op=connect .*error/, log, 'the failed connect is a record too')
    assert_equal 2, ObserveSupport.lines_naming(@io, name).grep(/backend=redis /).size
    secrets.each { |s| refute_includes log, s }
  end

  def test_a_new_process_logs_nothing_unless_the_environment_asks
    script = <<~RUBY
      require 'polylock'
      require 'tmpdir'
      p [Polylock.logger.class, Polylock.log_level, PolylockUniffi.log_level]
      Dir.mktmpdir { |d| Polylock.connect("sqlite://\#{d}/x.db") { |c| c.lock('env-lock').synchronize { nil } } }
    RUBY
    out, err, status = ObserveSupport.ruby(script, {})
    assert status.success?, err
    assert_equal "[NilClass, :warn, \"off\"]\n", out
    assert_equal '', err

    out, err, status = ObserveSupport.ruby(script, 'POLYLOCK_LOG' => 'debug')
    assert status.success?, err
    assert_equal "[Logger, :debug, \"debug\"]\n", out
    assert_match(/DEBUG -- polylock: acquired op=acquire name=env-lock /, err)

    out, err, status = ObserveSupport.ruby(script, 'DEBUG' => 'express,polylock')
    assert status.success?, err
    assert_equal "[Logger, :debug, \"debug\"]\n", out
    assert_match(/DEBUG -- polylock: released op=release name=env-lock /, err)

    out, err, status = ObserveSupport.ruby(script, 'POLYLOCK_LOG' => 'loud')
    assert status.success?, err
    assert_equal "[NilClass, :warn, \"off\"]\n", out
    assert_match(/POLYLOCK_LOG: unknown log level "loud".*logging stays off/, err)
  end
end
