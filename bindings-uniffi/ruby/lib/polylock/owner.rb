# frozen_string_literal: true

module Polylock
  # The owner of a hold is the Ruby Thread that took it. Each Thread gets an id from the
  # core's process-wide counter the first time it locks, kept in a thread variable (shared by
  # the thread's fibers): ids are never reused, so a new thread never inherits a dead one's hold.
  module Owner
    KEY = :__polylock_owner_id

    def self.current
      thread = Thread.current
      thread.thread_variable_get(KEY) || thread.thread_variable_set(KEY, PolylockUniffi.next_owner_id)
    end
  end

  # Seconds as the caller wrote them, for the native options record.
  def self.acquire_options(wait, lease)
    PolylockUniffi::AcquireOptions.new(wait_seconds: wait&.to_f, lease_seconds: lease&.to_f)
  end

  # What on_lost hands to the native side: it calls #lost on one of the client's threads.
  class LostCallback
    def initialize(block)
      @block = block
    end

    def lost(reason)
      @block.call(reason)
    rescue Exception => e # rubocop:disable Lint/RescueException -- nothing may escape into Rust
      warn "polylock: an on_lost block raised #{e.class}: #{e.message}"
    end
  end
end
