# frozen_string_literal: true

module Polylock
  # The parts of a Snowflake ID.
  SnowflakeParts = Struct.new(:timestamp_ms, :worker, :sequence, keyword_init: true)

  # Snowflake IDs for one worker id (Twitter's layout: 41 bits of milliseconds, 10 of worker,
  # 12 of sequence), optionally from another epoch; Threads may share a generator.
  class Snowflake
    def initialize(worker_id, epoch_ms: nil)
      @native = Native.call { PolylockUniffi::Snowflake.new(worker_id, epoch_ms) }
    end

    def next_id
      Native.call { @native.next_id }
    end

    # `count` IDs, in increasing order.
    def next_ids(count)
      Native.call { @native.next_ids(count) }
    end

    def parse(id)
      Polylock.parts(Native.call { @native.parse(id) })
    end

    def worker_id
      @native.worker_id
    end

    def epoch_ms
      @native.epoch_ms
    end
  end

  def self.parse_snowflake(id, epoch_ms: nil)
    parts(Native.call { PolylockUniffi.parse_snowflake(id, epoch_ms) })
  end

  def self.parts(native)
    SnowflakeParts.new(timestamp_ms: native.timestamp_ms, worker: native.worker, sequence: native.sequence)
  end

  # The next UUIDv7 of this process ("0190c3a5-..."), increasing within the process.
  def self.uuid7
    Native.call { PolylockUniffi.uuid7 }
  end

  # The next ULID of this process (26 characters), increasing within the process.
  def self.ulid
    Native.call { PolylockUniffi.ulid }
  end

  # The milliseconds since the Unix epoch in a UUIDv7 (text); Error::InvalidArgument for
  # text that is no UUID, or a UUID of another version.
  def self.uuid7_timestamp(uuid)
    Native.call { PolylockUniffi.uuid7_timestamp(uuid.to_str) }
  end

  # The milliseconds since the Unix epoch in a ULID (text); Error::InvalidArgument for text
  # that is no ULID.
  def self.ulid_timestamp(ulid)
    Native.call { PolylockUniffi.ulid_timestamp(ulid.to_str) }
  end

  # The same 128 bits as a UUID's text (lowercase, hyphenated).
  def self.ulid_to_uuid(ulid)
    Native.call { PolylockUniffi.ulid_to_uuid(ulid.to_str) }
  end

  # The same 128 bits as a ULID's text.
  def self.uuid_to_ulid(uuid)
    Native.call { PolylockUniffi.uuid_to_ulid(uuid.to_str) }
  end
end
