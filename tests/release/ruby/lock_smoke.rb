# frozen_string_literal: true

# Run by tests/release/run-tests.sh with GEM_HOME holding only the released gem: take a lock on
# SQLite and on Redis through it and check the version it reports.
#
#   ruby lock_smoke.rb VERSION NAME URL...
require 'polylock'

version, name, *urls = ARGV
raise "Polylock::VERSION is #{Polylock::VERSION}, expected #{version}" unless Polylock::VERSION == version

loaded = $LOADED_FEATURES.grep(%r{/polylock\.rb\z}).first
raise "polylock was loaded from #{loaded}, not from GEM_HOME" unless loaded.start_with?(File.realpath(ENV.fetch('GEM_HOME')))

urls.each do |url|
  Polylock.connect(url) do |client|
    lock = client.lock(name)
    token = lock.synchronize { lock.fencing_token }
    raise 'no fencing token' unless token.is_a?(Integer) && token.positive?

    puts "ruby: polylock #{Polylock::VERSION}: locked and released on #{url.split(':').first} (token #{token})"
  end
end
