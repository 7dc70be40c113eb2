# frozen_string_literal: true

require_relative 'lib/polylock/version'

Gem::Specification.new do |spec|
  spec.name = 'polylock'
  spec.version = Polylock::VERSION
  spec.summary = 'Distributed locks and IDs over Redis, etcd, ZooKeeper, PostgreSQL, MySQL and SQLite'
  spec.description = <<~TEXT
    polylock's Rust core through uniffi: mutexes (Mutex#synchronize style), read-write locks and
    semaphores with fencing tokens, watchdog-renewed leases and lost-lock callbacks, which
    exclude Redisson, redlock, etcd, Curator and ShedLock holders of the same name; Snowflake,
    UUIDv7 and ULID IDs. The native library is inside the gem (built for the machine that
    built the gem).
  TEXT
  spec.authors = ['polylock']
  spec.license = 'Apache-2.0'
  spec.homepage = 'https://example.invalid/polylock'
  spec.required_ruby_version = '>= 3.0'
  spec.files = Dir['lib/**/*.rb'] + Dir['lib/libpolylock_uniffi.*']
  spec.require_paths = ['lib']
  spec.add_dependency 'ffi', '~> 1.15'
end
