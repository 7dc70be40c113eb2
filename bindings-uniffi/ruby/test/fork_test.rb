# frozen_string_literal: true

require 'logger'
require 'stringio'
require_relative 'test_helper'

# fork() copies only the forking thread: a client connected before a fork (Puma's and
# Unicorn's workers, Resque's jobs) has no runtime threads in the child, and its connections
# are the parent's. The child gets a clear Error::Connection at once instead of a hang,
# closing or collecting the inherited client there does nothing, the child can connect
# again, the parent's client is unaffected, and a logger set before the fork keeps
# receiving the child's records.
class ForkTest < Minitest::Test
  # Schemes whose client cannot start again in a child forked after the parent used one:
  # the ZooKeeper client's I/O thread (async-io's reactor) does not survive fork().
  NO_NEW_CLIENT_AFTER_FORK = %w[zookeeper].freeze

  def setup
    skip 'needs fork()' unless Process.respond_to?(:fork)
  end

  # Fork, run the block in the child, and return its exit status: the block's value, 98 if it
  # raised. The child is killed, and the test fails, if it has not ended within `timeout`.
  # `exit!` skips at_exit and finalizers unless `clean_exit`, which ends the child with
  # `exit` to run them (the inherited client is then collected there).
  def in_child(timeout: 20, clean_exit: false)
    pid = fork do
      status = begin
        yield
      rescue Exception => e # rubocop:disable Lint/RescueException
        warn "child raised #{e.class}: #{e.message}"
        98
      end
      clean_exit ? exit(status) : exit!(status)
    end
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    loop do
      done, status = Process.waitpid2(pid, Process::WNOHANG)
      return status.exitstatus if done

      if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        Process.kill(:KILL, pid)
        Process.waitpid(pid)
        flunk 'the forked child hung'
      end
      sleep 0.02
    end
  end

  TestSupport.backends.each do |backend, url|
    define_method("test_an_inherited_client_refuses_at_once_in_the_child_#{backend}") do
      client = Polylock.connect(url)
      lock = client.lock(TestSupport.unique('fork'))
      assert lock.lock(wait: 5)
      lock.unlock
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      code = in_child do
        lock.lock(wait: 1)
        1
      rescue Polylock::Error::Connection => e
        e.message.include?('fork()') ? 0 : 2
      end
      assert_equal 0, code, 'the child did not get Error::Connection naming fork()'
      assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 5, 'the child waited'
      # The parent is unaffected.
      assert lock.lock(wait: 5)
      lock.unlock
    ensure
      client&.close
    end

    define_method("test_closing_or_collecting_an_inherited_client_in_the_child_does_nothing_#{backend}") do
      client = Polylock.connect(url)
      lock = client.lock(TestSupport.unique('fork-close'))
      assert lock.lock(wait: 5)
      # close is a no-op there; a clean exit collects the client (finalizers run): neither
      # waits for the parent's runtime threads nor gives back the parent's hold.
      assert_equal 0, in_child { client.close.nil? && !client.closed? ? 0 : 1 }
      assert_equal 0, in_child(clean_exit: true) { 0 }
      refute client.closed?
      assert lock.owned?, "the child's close gave back the parent's hold"
      lock.unlock
    ensure
      client&.close
    end

    define_method("test_a_child_can_connect_again_#{backend}") do
      client = Polylock.connect(url)
      name = TestSupport.unique('fork-again')
      lock = client.lock(name)
      assert lock.lock(wait: 5)
      refused_at_once = NO_NEW_CLIENT_AFTER_FORK.include?(backend)
      code = in_child do
        Polylock.connect(url) do |own|
          # The parent holds it: the child's own client must see that.
          own.lock(name).try_lock ? 3 : (refused_at_once ? 4 : 0)
        end
      rescue Polylock::Error::Connection => e
        refused_at_once && e.message.include?('fork') ? 0 : 5
      end
      assert_equal 0, code
      lock.unlock
    ensure
      client&.close
    end
  end

  def test_a_logger_set_before_the_fork_receives_the_childs_records
    out = StringIO.new
    Polylock.logger = Logger.new(out)
    Polylock.log_level = :debug
    name = TestSupport.unique('fork-log')
    reader, writer = IO.pipe
    code = in_child do
      reader.close
      Polylock.connect('mem://') do |client|
        lock = client.lock(name)
        lock.lock
        lock.unlock
      end
      # No flush_logs: the drain thread, restarted in the child, hands the records on.
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
      sleep 0.05 until out.string.include?(name) || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      writer.write(out.string)
      writer.close
      out.string.include?(name) ? 0 : 1
    end
    writer.close
    seen = reader.read
    assert_equal 0, code, "the child's logger got no record naming #{name}: #{seen[-500..]}"
  ensure
    Polylock.logger = nil
    Polylock.log_level = :warn
  end
end
