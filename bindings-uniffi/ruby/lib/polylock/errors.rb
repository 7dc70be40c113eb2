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

      raise klass, e.message
    end

    ERROR_CLASSES = Polylock::Error::KINDS.to_h do |_, _, class_name|
      [PolylockUniffi::PolylockError.const_get(class_name), Polylock::Error.const_get(class_name)]
    end.freeze
  end
end
