# frozen_string_literal: true

module Polylock
  # What a child needs after fork() (Kernel#fork, Process.fork, Puma's and Unicorn's workers:
  # Ruby 3.1+ routes each through Process._fork). fork copies only the forking thread:
  # - Ruby-FFI before 1.17 never dispatches, in the child, a callback made before the fork
  #   and called from a native thread (ffi/ffi#1114; Debian bookworm ships 1.15): every call
  #   that waits on the core (connect, lock, ...) would wait forever. The child gets a
  #   continuation callback of its own, which FFI dispatches.
  # - The log drain thread is gone: Logging.after_fork starts another.
  # A client connected before the fork refuses every call in the child
  # (Error::Connection, naming fork()), and closing it there does nothing: connect again.
  module AfterFork
    def self.run
      renew_continuation_callback
      Logging.after_fork
    end

    # uniffi's generated code hands UNIFFI_CONTINUATION_CALLBACK to every async call; a new
    # Proc around the inherited one is a new FFI callback, made in this process.
    def self.renew_continuation_callback
      inherited = PolylockUniffi::UNIFFI_CONTINUATION_CALLBACK
      PolylockUniffi.send(:remove_const, :UNIFFI_CONTINUATION_CALLBACK)
      PolylockUniffi.const_set(:UNIFFI_CONTINUATION_CALLBACK, proc { |data, poll_code| inherited.call(data, poll_code) })
    end

    # Prepended to Process's singleton class.
    module Hook
      def _fork
        pid = super
        AfterFork.run if pid.zero?
        pid
      end
    end
  end

  Process.singleton_class.prepend(AfterFork::Hook) if Process.respond_to?(:_fork)
end
