# frozen_string_literal: true

require_relative 'test_helper'
require_relative 'private_redis'
require 'redis'

# Polylock.redlock(urls, name) (issue 18) over three private redis-servers: a majority grants,
# no fencing token, one paused server is outvoted, two are not, and bad lists are refused by
# the core's rule (kit::redlock_url) as Error::InvalidArgument without a password.
class RedLockTest < Minitest::Test
  def self.nodes
    @nodes ||= begin
      unless system('command -v redis-server >/dev/null')
        raise 'redis-server is not installed' if ENV['POLYLOCK_RB_REQUIRE_SERVERS'] == '1'

        return nil
      end
      Array.new(3) { PrivateRedis.start }
    end
  end

  def setup
    @nodes = self.class.nodes or skip 'redis-server is not installed'
    @urls = @nodes.map(&:url)
  end

  def test_the_url_joins_the_servers_and_a_majority_grants_without_a_fencing_token
    assert_equal "redlock://#{@nodes.map { |node| "127.0.0.1:#{node.port}" }.join(',')}", Polylock.redlock_url(@urls)
    name = TestSupport.unique('redlock')
    first = Polylock.redlock(@urls, name)
    second = Polylock.redlock(@urls.reverse, name)
    begin
      assert_instance_of Polylock::RedLock, first
      assert_equal :token, first.kind
      assert first.lock(lease: 10)
      assert first.owned?
      assert_nil first.fencing_token, 'RedLock has no fencing token'
      refute TestSupport.in_thread { second.try_lock(lease: 10) }
      # Each server holds the same random value under the name (the token layout redlock-rb
      # and redsync write).
      values = @nodes.map { |node| Redis.new(url: node.url).then { |redis| redis.get(name).tap { redis.close } } }
      refute_nil values.first
      assert_equal [values.first] * 3, values
      waiting = Thread.new { second.lock(wait: 10, lease: 10).tap { second.unlock } }
      sleep 0.2
      first.unlock
      assert waiting.value
    ensure
      first.close
      second.close
    end
  end

  def test_one_paused_server_is_outvoted_and_two_are_not
    name = TestSupport.unique('redlock')
    Polylock.redlock(@urls, name) do |lock|
      Polylock.redlock(@urls, name) do |rival|
        @nodes[0].signal('STOP')
        begin
          assert lock.lock(wait: 5, lease: 5)
          refute TestSupport.in_thread { rival.try_lock(lease: 5) }
          lock.unlock
          @nodes[1].signal('STOP')
          begin
            granted = begin
              TestSupport.in_thread { rival.lock(wait: 1, lease: 5) }
            rescue Polylock::Error::Connection, Polylock::Error::Backend
              false
            end
            refute granted, 'one server of three granted a RedLock lock'
          ensure
            @nodes[1].signal('CONT')
          end
        ensure
          @nodes[0].signal('CONT')
        end
        assert TestSupport.in_thread { rival.lock(wait: 5, lease: 5).tap { rival.unlock } }
      end
    end
  end

  def test_the_block_form_closes_the_locks_client
    kept = nil
    Polylock.redlock(@urls, TestSupport.unique('redlock')) do |lock|
      kept = lock
      refute lock.closed?
      assert_equal Polylock.redlock_url(@urls), lock.client.url
    end
    assert kept.closed?
  end

  def test_bad_server_lists_are_invalid_argument_without_a_password
    [[], ['localhost'], ['rediss://127.0.0.1:1'], ['redis://127.0.0.1:1/2'],
     ['redis://:s3cret1@a:1', 'redis://:s3cret2@b:2']].each do |urls|
      error = assert_raises(Polylock::Error::InvalidArgument, urls.inspect) { Polylock.redlock(urls, 'x') }
      refute_match(/s3cret/, error.message)
    end
    assert_raises(TypeError) { Polylock.redlock('127.0.0.1:1', 'x') }
  end
end
