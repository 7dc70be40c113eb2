# frozen_string_literal: true

require 'json'

module Polylock
  # What Idempotency#begin found. outcome: :acquired (with ticket), :replay (with response, the
  # bytes completed with), :in_progress (with retry_after, seconds) or :mismatch.
  Began = Struct.new(:outcome, :ticket, :response, :retry_after)

  # Idempotency keys of one namespace (Client#idempotency): #run does a block once per key;
  # #begin and Ticket are the step-by-step form.
  class Idempotency
    def initialize(native)
      @native = native
    end

    def namespace
      @native.namespace
    end

    # Claim `key` for this attempt. `fingerprint` identifies the payload: a String (bytes),
    # or a Hash/Array (structured: key order does not matter), as every binding computes it.
    def begin(key, fingerprint)
      found = Native.call { @native.begin(key, Idempotency.fingerprint(fingerprint)) }
      retry_after = found.retry_after_ms && found.retry_after_ms / 1000.0
      Began.new(found.outcome.to_sym, found.ticket && Ticket.new(found.ticket), found.response&.b, retry_after)
    end

    # Run the block once for `key`: if this call claims the key, the block runs (given the
    # attempt's token) and its value is stored (a String as bytes, anything else as JSON) and
    # returned; if the block raises, the key is abandoned (a retry runs again) and the
    # exception goes on. If an attempt finished before, its stored value is returned (JSON
    # decoded). Another attempt under way raises Error::InProgress (#retry_after); the key
    # used with another payload raises Error::Mismatch.
    def run(key, fingerprint)
      began = self.begin(key, fingerprint)
      case began.outcome
      when :replay then return Idempotency.decode(began.response)
      when :in_progress
        raise Error::InProgress.new("idempotency key '#{key}' is being worked on by another attempt; " \
                                    "retry after #{(began.retry_after * 1000).round}ms")
                               .tap { |e| e.instance_variable_set(:@retry_after, began.retry_after) }
      when :mismatch
        raise Error::Mismatch, "idempotency key '#{key}' was used before with another payload (a different fingerprint)"
      end
      ticket = began.ticket
      begin
        result = yield ticket.token
      rescue Exception # rubocop:disable Lint/RescueException -- abandon, then re-raise whatever it was
        begin
          ticket.abandon
        rescue Polylock::Error
          nil
        end
        raise
      end
      ticket.complete_raw(Idempotency.encode(result))
      result
    end

    # The core's fingerprint of a String (bytes) or of a structured value (as JSON).
    def self.fingerprint(payload)
      if payload.is_a?(String)
        PolylockUniffi.fingerprint_of_bytes(payload.b)
      else
        Native.call { PolylockUniffi.fingerprint_of_json(JSON.generate(payload)) }
      end
    end

    # The core's stored form of a run result.
    def self.encode(result)
      if result.is_a?(String)
        Native.call { PolylockUniffi.encode_response(result.b, false) }
      else
        Native.call { PolylockUniffi.encode_response(JSON.generate(result).b, true) }
      end
    end

    def self.decode(stored)
      decoded = Native.call { PolylockUniffi.decode_response(stored.b) }
      decoded.json ? JSON.parse(decoded.body.force_encoding(Encoding::UTF_8)) : decoded.body.b
    end
  end

  # One attempt's claim on a key: #complete it with the response to replay, or #abandon it;
  # #extend it while the work runs long. Error::Lost once another attempt took the key over.
  class Ticket
    def initialize(native)
      @native = native
    end

    def key
      @native.key
    end

    # Grows with every attempt that takes the key (usable with Value#write_fenced).
    def token
      @native.token
    end

    # Store `response` (bytes) for later #begin calls to replay as they are.
    def complete(response)
      complete_raw(response.b)
    end

    def complete_raw(stored)
      Native.call { @native.complete(stored) }
      nil
    end

    def abandon
      Native.call { @native.abandon }
      nil
    end

    def extend
      Native.call { @native.extend }
      nil
    end
  end
end
