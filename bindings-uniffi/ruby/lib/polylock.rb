# frozen_string_literal: true

# polylock for Ruby: distributed locks (Redis, etcd, ZooKeeper, PostgreSQL, MySQL/MariaDB,
# SQLite) and distributed IDs, over polylock's Rust core through uniffi.
#
#   client = Polylock.connect('redis://127.0.0.1:6379')
#   client.lock('orders:42').synchronize { ship(order) }
#
# Owners are Ruby Threads: a lock taken by a thread is released by that thread, re-entered
# by it, and refused (Polylock::Error::NotOwner) to any other.

require 'ffi'
# uniffi's generated code waits with IO#wait_readable, which Ruby 3.1 keeps in io/wait.
require 'io/wait'
require_relative 'polylock_uniffi'
require_relative 'polylock/version'
require_relative 'polylock/errors'
require_relative 'polylock/owner'
require_relative 'polylock/lock'
require_relative 'polylock/semaphore'
require_relative 'polylock/value'
require_relative 'polylock/election'
require_relative 'polylock/latch'
require_relative 'polylock/idempotency'
require_relative 'polylock/multi_lock'
require_relative 'polylock/id_generators'
require_relative 'polylock/client'
require_relative 'polylock/ids'
require_relative 'polylock/observe'
require_relative 'polylock/fork'
require_relative 'polylock/redlock'
require_relative 'polylock/rack'

module Polylock
  # Connect to the backend `url` names (nil: $POLYLOCK_URL, else sqlite://polylock.db), by the
  # core's URL rules: `redis://`, `rediss://`, `redis+cluster://`, `redis+sentinel://`,
  # `etcd://`, `zk://`, `postgres://`, `mysql://`, `sqlite://`, `mem://`, options in the query
  # string. With a block, yields the client and closes it afterwards.
  def self.connect(url = nil)
    client = Client.new(Native.call { PolylockUniffi.connect(url) })
    return client unless block_given?

    begin
      yield client
    ensure
      client.close
    end
  end
end

# POLYLOCK_LOG=<level> or DEBUG=polylock: the core's events to a Logger on $stderr.
Polylock::Logging.from_environment
