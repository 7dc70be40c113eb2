# frozen_string_literal: true

require_relative 'rack/idempotency'
