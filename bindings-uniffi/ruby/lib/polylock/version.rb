# frozen_string_literal: true

module Polylock
  # The workspace's version (Cargo.toml); run-tests.sh checks they agree.
  VERSION = '0.1.0'
end
