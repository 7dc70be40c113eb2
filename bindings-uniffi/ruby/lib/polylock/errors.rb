# frozen_string_literal: true

module Polylock
  # Every polylock failure: one subclass per kind of the core's table (ErrorKind::ALL), each
  # with the kind's stable name (KIND) and number (CODE).
  class Error < StandardError
    # [name, number, class name] of every kind; test/errors_test.rb checks it against the core.
    KINDS = [
      ['TIMEOUT', 1, :Timeout],
      ['NOT_OWNER', 2, :NotOwner],
      ['LOST', 3, :Lost],
      ['CONNECTION', 4, :Connection],
      ['INVALID_ARGUMENT', 5, :InvalidArgument],
      ['BACKEND', 6, :Backend],
      ['INTERNAL', 7, :Internal],
      ['UNSUPPORTED', 8, :Unsupported],
      ['CANCELLED', 9, :Cancelled],
      ['CONFLICT', 10, :Conflict],
      ['FENCED', 11, :Fenced],
      ['EXHAUSTED', 12, :Exhausted],
      ['IN_PROGRESS', 13, :InProgress],
      ['MISMATCH', 14, :Mismatch]
    ].freeze

    KINDS.each do |name, code, class_name|
      const_set(class_name, Class.new(self) do
        const_set(:KIND, name)
        const_set(:CODE, code)
      end)
    end

    # The kind's class for a name of the table ('NOT_OWNER' -> Polylock::Error::NotOwner).
    def self.for_kind(name)
      row = KINDS.find { |kind, _, _| kind == name } or raise KeyError, "no polylock error kind #{name}"
      const_get(row[2])
    end

    # With Error::Conflict: the value as it is now (both nil when there is none).
    attr_reader :current_value, :current_version
    # With Error::Fenced: the highest fencing token the value has accepted.
    attr_reader :winning_token
    # With Error::InProgress and Error::Exhausted: seconds to wait before trying again (nil
    # when unknown).
    attr_reader :retry_after

    # Copy the details a native error carries (Native.call does this).
    def take_details(native)
      @current_value = native.current_value&.b if native.respond_to?(:current_value)
      @current_version = native.current_version if native.respond_to?(:current_version)
      @winning_token = native.winning_token if native.respond_to?(:winning_token)
      @retry_after = native.retry_after_ms && native.retry_after_ms / 1000.0 if native.respond_to?(:retry_after_ms)
      self
    end

    def kind
      self.class::KIND
    end

    def code
      self.class::CODE
    end
  end

  # The generated binding's errors become Polylock::Error subclasses, with the core's message.
  module Native
    # Run the block, turning the generated binding's exceptions into Polylock::Error.
    def self.call
      yield
    rescue PolylockUniffi::InternalError => e
      # A panic caught by uniffi at the boundary.
      raise Polylock::Error::Internal, e.message
    rescue StandardError => e
      klass = ERROR_CLASSES[e.class]
      raise unless klass

      raise klass.new(e.message).take_details(e)
    end

    ERROR_CLASSES = Polylock::Error::KINDS.to_h do |_, _, class_name|
      [PolylockUniffi::PolylockError.const_get(class_name), Polylock::Error.const_get(class_name)]
    end.freeze
  end
end
