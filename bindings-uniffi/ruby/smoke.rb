# frozen_string_literal: true

# Run by run-tests.sh with GEM_HOME set to where `gem install --local` put the gem: the gem
# and its native library load from there, and lock, IDs and errors work.
require 'tmpdir'

gem_home = ARGV.fetch(0)
require 'polylock'

loaded = $LOADED_FEATURES.grep(%r{/polylock\.rb\z}).first
raise "polylock was loaded from #{loaded.inspect}, not from #{gem_home}" unless loaded&.start_with?(File.realpath(gem_home))

native = Dir[File.join(File.dirname(loaded), 'libpolylock_uniffi.*')]
raise "no native library beside #{loaded}" if native.empty?

Dir.mktmpdir do |dir|
  Polylock.connect("sqlite://#{dir}/smoke.db") do |client|
    lock = client.lock('smoke')
    token = lock.synchronize { lock.fencing_token }
    raise 'no fencing token' unless token.is_a?(Integer) && token.positive?
  end
end
Polylock.uuid7
Polylock.ulid
Polylock::Snowflake.new(1).next_id
begin
  Polylock.connect('nosuchscheme://x')
  raise 'a bad URL was accepted'
rescue Polylock::Error::InvalidArgument
  nil
end
puts "smoke: polylock #{Polylock::VERSION} from #{File.dirname(loaded)} works"
