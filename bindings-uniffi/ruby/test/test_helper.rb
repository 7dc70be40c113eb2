# frozen_string_literal: true

# The suite runs against the installed gem (run-tests.sh installs it into a temporary
# GEM_HOME) or, for development, against ruby/lib with POLYLOCK_NATIVE_LIB naming a build.
require 'minitest/autorun'
require 'securerandom'
require 'timeout'
require 'tmpdir'
require 'polylock'

# Tests assert on exceptions that threads end with (Thread#value re-raises them).
Thread.report_on_exception = false

module TestSupport
  # The environment variables of tests/services/services.sh, by backend name.
  SERVER_URLS = {
    'redis' => 'POLYLOCK_TEST_REDIS_URL',
    'redis_cluster' => 'POLYLOCK_TEST_REDIS_CLUSTER_URL',
    'redis_sentinel' => 'POLYLOCK_TEST_REDIS_SENTINEL_URL',
    'redis_tls' => 'POLYLOCK_TEST_REDIS_TLS_URL',
    'etcd' => 'POLYLOCK_TEST_ETCD_URL',
    'etcd_cluster' => 'POLYLOCK_TEST_ETCD_CLUSTER_URL',
    'zookeeper' => 'POLYLOCK_TEST_ZOOKEEPER_URL',
    'postgres' => 'POLYLOCK_TEST_POSTGRES_URL',
    'mariadb' => 'POLYLOCK_TEST_MARIADB_URL'
  }.freeze

  SQLITE_DIR = Dir.mktmpdir('polylock-rb-')
  Minitest.after_run { FileUtils.remove_entry(SQLITE_DIR) }

  # sqlite always; each server whose URL is exported. POLYLOCK_RB_REQUIRE_SERVERS=1 (what
  # run-tests.sh sets when it was given servers) makes a missing core server an error.
  def self.backends
    found = { 'sqlite' => "sqlite://#{File.join(SQLITE_DIR, 'locks.db')}" }
    SERVER_URLS.each do |backend, var|
      url = ENV.fetch(var, '')
      found[backend] = url unless url.empty?
    end
    if ENV['POLYLOCK_RB_REQUIRE_SERVERS'] == '1'
      missing = %w[redis etcd zookeeper postgres mariadb] - found.keys
      raise "no URL exported for #{missing.join(', ')}: run `eval \"$(tests/services/services.sh env)\"`" unless missing.empty?
    end
    found
  end

  # A name no other test (nor another engineer's suite on the same servers) uses.
  def self.unique(what)
    "rb-#{what}-#{SecureRandom.hex(6)}"
  end

  # The value of the block run on a new Thread (its exception re-raised here).
  def self.in_thread(&block)
    Thread.new(&block).value
  end
end
